"""Guards (``when``, ``end_when``): whether one holds for the state and the trigger, and
if not, the first reason why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signal_eval_cli.assertions.helpers import short
from signal_eval_cli.patterns import compile_glob, get_path, match_pattern, match_value
from signal_eval_cli.signals import Signal

__all__ = ["guard_failure"]


def guard_failure(guard: Mapping[str, Any], state: Any, trigger: Signal | None) -> str | None:
    """``None`` when ``guard`` holds for ``state`` and the trigger, else the first reason why not."""
    for path, expected in (guard.get("state") or {}).items():
        found, actual = get_path(state, path)
        if not found:
            return f"state '{path}' is missing (expected {short(expected)})"
        if not match_value(expected, actual):
            return f"state '{path}' is {short(actual)}, expected {short(expected)}"
    if "signal" in guard:
        name = trigger.name if trigger is not None else None
        if name is None or not compile_glob(guard["signal"]).fullmatch(name):
            return f"trigger '{name}' does not match '{guard['signal']}'"
    if "payload" in guard:
        payload = trigger.payload if trigger is not None else None
        if not match_pattern(guard["payload"], payload):
            return f"trigger payload {short(payload)} does not match {short(guard['payload'])}"
    for sub in guard.get("all", []):
        failure = guard_failure(sub, state, trigger)
        if failure is not None:
            return failure
    if "any" in guard:
        failures = [guard_failure(sub, state, trigger) for sub in guard["any"]]
        if all(f is not None for f in failures):
            return "none of the alternatives holds: " + "; ".join(map(str, failures))
    if "not" in guard and guard_failure(guard["not"], state, trigger) is None:
        return f"'not' condition holds: {short(guard['not'])}"
    return None
