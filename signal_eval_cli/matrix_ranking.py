"""Ranking a matrix's variants: orderings, the Pareto frontier and the one to ship.

Ranking uses, per variant, its pass rate (cases that passed all their runs ÷ cases
run), its average cost per case and its p50 latency. Ties are broken by
declaration order, so the same results always give the same answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from signal_eval_cli.stats import pass_rate_stats, wilson_interval

if TYPE_CHECKING:
    from signal_eval_cli.matrix_model import VariantResult

__all__ = [
    "MATERIAL_DIFFERENCE",
    "MIN_CASES_FOR_CONFIDENCE",
    "Confidence",
    "VariantComparison",
    "VariantPoint",
    "VariantRecommendation",
    "compare_variants",
    "pareto_frontier",
    "recommend",
]

Confidence = Literal["high", "medium", "low"]

MIN_CASES_FOR_CONFIDENCE = 5
"""Below this many cases run per variant, confidence is ``low`` whatever the numbers."""
MATERIAL_DIFFERENCE = 0.10
"""A cost or latency gap counts as real when it exceeds 10 % (compare's default threshold)."""


@dataclass(frozen=True, slots=True)
class VariantPoint:
    """A variant as the ranking sees it: pass counts, cost per case, p50 latency."""

    id: str
    passed: int
    ran: int
    cost: float
    latency: float
    """In whole milliseconds, as shown: a sub-millisecond gap is timer noise, never a
    reason to rank one variant above another."""

    def __post_init__(self) -> None:
        """An unknown cost or latency (NaN: a harness's ``provider:end`` said ``cost: NaN``)
        ranks last: NaN compares false with everything, so it was never dominated, sorted
        in no order, and recommended as "cheaper ($nan vs $0.0100 per case)"."""
        for axis in ("cost", "latency"):
            if not math.isfinite(getattr(self, axis)):
                object.__setattr__(self, axis, math.inf)

    @property
    def pass_rate(self) -> float:
        return self.passed / self.ran if self.ran else 0.0

    @classmethod
    def of(cls, variant: VariantResult) -> VariantPoint:
        stats = pass_rate_stats(variant.result.cases)
        agg = variant.result.aggregate_metrics
        return cls(
            variant.variant_id,
            stats.passed_cases,
            stats.cases,
            agg.avg_cost_per_case,
            float(round(agg.p50_latency_ms)),
        )


@dataclass(slots=True)
class VariantComparison:
    by_pass_rate: list[str]
    """Best first."""
    by_cost: list[str]
    """Cheapest first (average cost per case)."""
    by_latency: list[str]
    """Fastest first (p50 latency)."""
    pareto_frontier: list[str]
    """Not dominated on (pass rate ↑, cost ↓, p50 latency ↓); declaration order."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "byPassRate": self.by_pass_rate,
            "byCost": self.by_cost,
            "byLatency": self.by_latency,
            "paretoFrontier": self.pareto_frontier,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VariantComparison:
        return cls(
            *(
                [str(v) for v in data[key]]
                for key in ("byPassRate", "byCost", "byLatency", "paretoFrontier")
            )
        )


@dataclass(slots=True)
class VariantRecommendation:
    variant_id: str
    reason: str
    confidence: Confidence
    tradeoffs: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "variantId": self.variant_id,
            "reason": self.reason,
            "tradeoffs": self.tradeoffs,
            "confidence": self.confidence,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VariantRecommendation:
        confidence = data["confidence"]
        if confidence not in ("high", "medium", "low"):
            raise ValueError(f"unknown confidence {confidence!r}")
        return cls(
            variant_id=str(data["variantId"]),
            reason=str(data["reason"]),
            confidence=confidence,
            tradeoffs=[str(t) for t in data.get("tradeoffs", [])],
        )


def _same(a: float, b: float) -> bool:
    """Equal up to float noise (sums of costs in a different order)."""
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _dominates(a: VariantPoint, b: VariantPoint) -> bool:
    """``a`` is no worse than ``b`` on every axis and better on at least one."""
    axes = (  # (a's value, b's value, higher is better)
        (a.pass_rate, b.pass_rate, True),
        (a.cost, b.cost, False),
        (a.latency, b.latency, False),
    )
    if any(not _same(x, y) and (x < y) == higher for x, y, higher in axes):
        return False
    return any(not _same(x, y) for x, y, _ in axes)


def pareto_frontier(points: Sequence[VariantPoint]) -> list[str]:
    """Ids of the points no other point dominates, in the order given.

    Identical points do not dominate each other, so ties are all on the frontier.
    """
    return [p.id for p in points if not any(_dominates(q, p) for q in points if q is not p)]


def _rank_key(index: int, point: VariantPoint) -> tuple[float, float, float, int]:
    return (-point.pass_rate, point.cost, point.latency, index)


def compare_variants(points: Sequence[VariantPoint]) -> VariantComparison:
    """Orderings by pass rate, cost and latency (ties: declaration order) and the frontier."""
    order = list(enumerate(points))

    def ids(key: Callable[[tuple[int, VariantPoint]], Any]) -> list[str]:
        return [p.id for _, p in sorted(order, key=key)]

    return VariantComparison(
        by_pass_rate=ids(lambda ip: (-ip[1].pass_rate, ip[0])),
        by_cost=ids(lambda ip: (ip[1].cost, ip[0])),
        by_latency=ids(lambda ip: (ip[1].latency, ip[0])),
        pareto_frontier=pareto_frontier(points),
    )


def _dollars(cost: float) -> str:
    return f"${cost:.4f}" if math.isfinite(cost) else "an unknown cost"


def _ms(latency: float) -> str:
    return f"{latency:,.0f} ms" if math.isfinite(latency) else "unknown"


def _gap(mine: float, theirs: float) -> float:
    """How much lower ``mine`` is than ``theirs``, relative to ``theirs`` (0.3 = 30 % lower)."""
    return (theirs - mine) / theirs if theirs > 0 else 0.0


def _tradeoff(chosen: VariantPoint, other: VariantPoint) -> str:
    gains = []
    cheaper, faster = _gap(other.cost, chosen.cost), _gap(other.latency, chosen.latency)
    if cheaper > 0 and not _same(other.cost, chosen.cost):
        gains.append(f"{cheaper:.0%} cheaper")
    if faster > 0 and not _same(other.latency, chosen.latency):
        gains.append(f"{faster:.0%} faster")
    points = (chosen.pass_rate - other.pass_rate) * 100
    lost = (
        f"its pass rate is {points:.0f} points lower ({other.pass_rate:.0%} vs "
        f"{chosen.pass_rate:.0%})"
        if points > 0 and not _same(chosen.pass_rate, other.pass_rate)
        else f"its pass rate is the same ({other.pass_rate:.0%})"
    )
    return f"{other.id} is {' and '.join(gains) or 'no cheaper or faster'} but {lost}"


def recommend(points: Sequence[VariantPoint]) -> VariantRecommendation | None:
    """Recommend the variant to ship: quality first, then cost, then latency.

    The recommended variant has the highest pass rate; among equal pass rates the
    lowest average cost per case, then the lowest p50 latency, then the one declared
    first. It is therefore always on the Pareto frontier. Trade-offs name what every
    other frontier variant would gain (cheaper, faster) and lose (pass rate).

    Confidence, comparing the recommended variant with the runner-up (the next in
    that same order):

    * ``high`` — its pass rate is higher and the two 95 % Wilson intervals of the pass
      rates do not overlap: the quality lead is unlikely to be noise.
    * ``medium`` — its pass rate is higher but the intervals overlap; or the pass rates
      are equal and it is more than 10 % cheaper or faster than the runner-up.
    * ``low`` — anything else: equal pass rates and cost and latency within 10 % (the
      choice is close to arbitrary); fewer than 5 cases ran per variant; or a single
      variant (nothing to compare against).
    """
    if not points:
        return None
    ranked = [p for _, p in sorted(enumerate(points), key=lambda ip: _rank_key(*ip))]
    best = ranked[0]
    frontier = set(pareto_frontier(points))
    tradeoffs = [_tradeoff(best, p) for p in points if p.id in frontier and p is not best]
    if len(ranked) == 1:
        return VariantRecommendation(best.id, "the only variant", "low", tradeoffs)
    runner = ranked[1]
    confidence: Confidence
    if not _same(best.pass_rate, runner.pass_rate):
        best_low, _ = wilson_interval(best.passed, best.ran)
        _, runner_high = wilson_interval(runner.passed, runner.ran)
        confidence = "high" if best_low > runner_high else "medium"
        reason = (
            f"highest pass rate: {best.pass_rate:.0%} ({best.passed}/{best.ran} cases) vs "
            f"{runner.pass_rate:.0%} for {runner.id}"
        )
    else:
        cheaper, faster = _gap(best.cost, runner.cost), _gap(best.latency, runner.latency)
        if cheaper > MATERIAL_DIFFERENCE or faster > MATERIAL_DIFFERENCE:
            confidence = "medium"
        else:
            confidence = "low"
        if not _same(best.cost, runner.cost):
            why = f"cheaper ({_dollars(best.cost)} vs {_dollars(runner.cost)} per case)"
        elif not _same(best.latency, runner.latency):
            why = f"faster (p50 {_ms(best.latency)} vs {_ms(runner.latency)})"
        else:
            why = "declared first (same cost and latency)"
        reason = f"ties {runner.id} on pass rate ({best.pass_rate:.0%}) and is {why}"
    if best.ran < MIN_CASES_FOR_CONFIDENCE:
        confidence = "low"
        reason += f"; only {best.ran} case{'s' if best.ran != 1 else ''} ran"
    return VariantRecommendation(best.id, reason, confidence, tradeoffs)
