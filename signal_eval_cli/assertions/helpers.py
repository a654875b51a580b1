"""What the family modules (and reports) share: bounds on counts, short previews."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from signal_eval_cli.assertions.outcome import Outcome

PREVIEW_ITEMS = 5


def bounds(
    assertion: Mapping[str, Any], *, at_least_once: bool
) -> tuple[int | float | None, int | float | None]:
    """``(min, max)``: ``exact`` (or ``count``) overrides ``min``/``max``.

    With no bound at all: "at least once" when ``at_least_once``, else no constraint.
    """
    exact = assertion.get("exact", assertion.get("count"))
    if exact is not None:
        return exact, exact
    low, high = assertion.get("min"), assertion.get("max")
    if low is None and high is None and at_least_once:
        return 1, None
    return low, high


def describe_bounds(low: float | None, high: float | None) -> str:
    if low is not None and low == high:
        return f"exactly {num(low)}"
    if low is not None and high is not None:
        return f"between {num(low)} and {num(high)}"
    if low is not None:
        return f"at least {num(low)}"
    if high is not None:
        return f"at most {num(high)}"
    return "any number"


def within(value: float, low: float | None, high: float | None) -> bool:
    return (low is None or value >= low) and (high is None or value <= high)


def count_outcome(
    what: str,
    actual: int,
    assertion: Mapping[str, Any],
    examples: Iterable[str] = (),
    *,
    at_least_once: bool = True,
) -> Outcome:
    """Pass/fail a count against the assertion's bounds, explaining the miss."""
    low, high = bounds(assertion, at_least_once=at_least_once)
    expected = describe_bounds(low, high)
    if within(actual, low, high):
        return Outcome(True, f"{what}: {actual} ({expected})", expected, actual)
    shown = list(examples)
    suffix = f"; first matches: {', '.join(shown)}" if shown else ""
    return Outcome(False, f"expected {expected} {what}, found {actual}{suffix}", expected, actual)


def short(value: Any, limit: int = 120) -> str:
    """One-line JSON preview of a value, cut at ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def num(value: float) -> str:
    """``3`` rather than ``3.0`` in messages (an int as it is: one past a float's range
    too)."""
    if isinstance(value, int):
        return str(value)
    return str(int(value)) if value.is_integer() else str(value)
