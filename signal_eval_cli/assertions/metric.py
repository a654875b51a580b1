"""metric.* — latency, cost, tokens and activations, bounded from above or below."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal, TypeVar

from signal_eval_cli.assertions.context import EvalContext
from signal_eval_cli.assertions.fields import Bounds, Exact, Notes
from signal_eval_cli.assertions.helpers import count_outcome, num
from signal_eval_cli.assertions.options import Field, NotRequired
from signal_eval_cli.assertions.outcome import Outcome
from signal_eval_cli.assertions.registry import assertion
from signal_eval_cli.signals import TraceMetrics


class LimitOptions(Notes):
    """A limit on one of the run's metrics."""

    value: Annotated[float, Field(minimum=0, description="The limit: ms, USD or tokens.")]


TokenField = Literal["input", "output", "total"]


class TokensOptions(LimitOptions):
    """A limit on the run's tokens: input, output or (default) total."""

    field: NotRequired[Annotated[TokenField, Field(description="Which tokens (default: total).")]]


L = TypeVar("L", bound=LimitOptions)

_TOKEN_FIELDS: dict[TokenField, Callable[[TraceMetrics], float]] = {
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
    options: type[L],
    read: Callable[[L, TraceMetrics], float | None],
) -> None:
    """``metric.<what>.max`` and ``.min``: the run's ``what`` at most / at least ``value``."""
    for bound in ("max", "min"):
        upper = bound == "max"

        def check(a: L, ctx: EvalContext, upper: bool = upper) -> Outcome:
            return _bounded(what, unit, read(a, ctx.trace.metrics), a["value"], upper=upper)

        check.__doc__ = f"The run's {what} is {'at most' if upper else 'at least'} ``value``."
        assertion(f"metric.{what}.{bound}", options=options)(check)


_register("latency", " ms", LimitOptions, lambda a, m: m.latency_ms)
_register("cost", " USD", LimitOptions, lambda a, m: m.cost)
_register("tokens", "", TokensOptions, lambda a, m: _TOKEN_FIELDS[a.get("field", "total")](m))


class ActivationsOptions(Notes, Bounds, Exact):
    """Bounds on the run's agent activations."""


@assertion("metric.activations", options=ActivationsOptions)
def metric_activations(a: ActivationsOptions, ctx: EvalContext) -> Outcome:
    """How many agent activations the run had (no bound: any number)."""
    return count_outcome("agent activations", ctx.trace.metrics.activations, a, at_least_once=False)
