"""snapshot.* — state mid-run (right after a signal) and at the end."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signal_eval_cli.assertions.context import EvalContext
from signal_eval_cli.assertions.fields import NOTES, PATH, PATTERN, VALUE
from signal_eval_cli.assertions.helpers import short
from signal_eval_cli.assertions.outcome import Outcome
from signal_eval_cli.assertions.registry import assertion
from signal_eval_cli.patterns import get_path, match_value


def _check_state(state: Any, a: Mapping[str, Any], where: str) -> Outcome:
    path = a["path"]
    found, value = get_path(state, path)
    if a.get("exists") is False:
        if found:
            return Outcome(False, f"'{path}' exists {where} ({short(value)})", False, value)
        return Outcome(True, f"'{path}' does not exist {where}", False)
    if not found:
        return Outcome(False, f"'{path}' does not exist {where}", a.get("value", True))
    if "value" not in a:
        return Outcome(True, f"'{path}' exists {where}", True, value)
    expected = a["value"]
    if match_value(expected, value):
        return Outcome(True, f"'{path}' = {short(value)} {where}", expected, value)
    return Outcome(
        False, f"'{path}' is {short(value)} {where}, expected {short(expected)}", expected, value
    )


_STATE = {"path": PATH, "value": VALUE, "exists": {"type": "boolean"}}
"""A value in the state (a dot path), compared or matched, or only (not) existing."""


@assertion(
    "snapshot.at",
    schema={
        "required": ["afterSignal", "path"],
        "properties": {**NOTES, "afterSignal": PATTERN, **_STATE},
    },
)
def snapshot_at(a: Mapping[str, Any], ctx: EvalContext) -> Outcome:
    """The state right after the first matching signal: mid-run, before later writes."""
    pattern = a["afterSignal"]
    index = ctx.trace.find(pattern)
    if index is None:
        return Outcome(
            False, f"signal '{pattern}' never fired, so there is no state to inspect", pattern
        )
    where = f"after #{index} '{ctx.trace[index].name}'"
    return _check_state(ctx.trace.state_after(index), a, where)


@assertion("snapshot.final", schema={"required": ["path"], "properties": {**NOTES, **_STATE}})
def snapshot_final(a: Mapping[str, Any], ctx: EvalContext) -> Outcome:
    """The state at the end of the run."""
    return _check_state(ctx.trace.final_state, a, "in the final state")
