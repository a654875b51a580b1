"""metric.* — latency, cost, tokens and activations, bounded from above or below."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from signal_eval_cli.assertions.context import EvalContext
from signal_eval_cli.assertions.fields import BOUNDS, EXACT, NOTES
from signal_eval_cli.assertions.helpers import count_outcome, num
from signal_eval_cli.assertions.outcome import Outcome
from signal_eval_cli.assertions.registry import assertion
from signal_eval_cli.signals import TraceMetrics

_TOKEN_FIELDS: dict[str, Callable[[TraceMetrics], float]] = {
    "input": lambda m: m.input_tokens,
    "output": lambda m: m.output_tokens,
    "total": lambda m: m.total_tokens,
}


def _bounded(what: str, unit: str, actual: float | None, limit: float, *, upper: bool) -> Outcome:
    if actual is None:
        return Outcome(
            False, f"no {what} recorded (no harness:end durationMs, no signal timestamps)", limit
        )
    ok = actual <= limit if upper else actual >= limit
    relation = "≤" if upper else "≥"
    verdict = "" if ok else "not "
    return Outcome(
        ok, f"{what} {num(actual)}{unit} is {verdict}{relation} {num(limit)}{unit}", limit, actual
    )


def _register(
    what: str,
    unit: str,
    read: Callable[[Mapping[str, Any], TraceMetrics], float | None],
    **fields: Any,
) -> None:
    """``metric.<what>.max`` and ``.min``: the run's ``what`` at most / at least ``value``."""
    schema = {
        "required": ["value"],
        "properties": {**NOTES, "value": {"type": "number", "minimum": 0}, **fields},
    }
    for bound in ("max", "min"):
        upper = bound == "max"

        def check(a: Mapping[str, Any], ctx: EvalContext, upper: bool = upper) -> Outcome:
            return _bounded(what, unit, read(a, ctx.trace.metrics), a["value"], upper=upper)

        check.__doc__ = f"The run's {what} is {'at most' if upper else 'at least'} ``value``."
        assertion(f"metric.{what}.{bound}", schema=schema)(check)


_register("latency", " ms", lambda a, m: m.latency_ms)
_register("cost", " USD", lambda a, m: m.cost)
_register(
    "tokens",
    "",
    lambda a, m: _TOKEN_FIELDS[a.get("field", "total")](m),
    field={"enum": list(_TOKEN_FIELDS)},
)


@assertion("metric.activations", schema={"properties": {**NOTES, **BOUNDS, **EXACT}})
def metric_activations(a: Mapping[str, Any], ctx: EvalContext) -> Outcome:
    """How many agent activations the run had (no bound: any number)."""
    return count_outcome("agent activations", ctx.trace.metrics.activations, a, at_least_once=False)
