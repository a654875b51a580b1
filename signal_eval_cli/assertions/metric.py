"""metric.* — latency, cost, tokens and activations, bounded from above or below."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from signal_eval_cli.assertions._helpers import count_outcome, num
from signal_eval_cli.assertions._registry import EvalContext, Outcome, assertion
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
    type_name: str,
    what: str,
    unit: str,
    read: Callable[[Mapping[str, Any], TraceMetrics], float | None],
) -> None:
    upper = type_name.endswith(".max")

    @assertion(type_name)
    def check(a: Mapping[str, Any], ctx: EvalContext) -> Outcome:
        return _bounded(what, unit, read(a, ctx.trace.metrics), a["value"], upper=upper)


for _bound in ("max", "min"):
    _register(f"metric.latency.{_bound}", "latency", " ms", lambda a, m: m.latency_ms)
    _register(f"metric.cost.{_bound}", "cost", " USD", lambda a, m: m.cost)
    _register(
        f"metric.tokens.{_bound}",
        "tokens",
        "",
        lambda a, m: _TOKEN_FIELDS[a.get("field", "total")](m),
    )


@assertion("metric.activations")
def metric_activations(a: Mapping[str, Any], ctx: EvalContext) -> Outcome:
    return count_outcome("agent activations", ctx.trace.metrics.activations, a, at_least_once=False)
