"""Pass rates with their uncertainty: what compare, the matrix ranking and every report use.

Stdlib only: a Wilson score interval for a pass rate, a one-sided Fisher exact test for
a drop in pass counts, and :class:`PassRateStats`, the pass counts of a set of cases per
case (pass^k) and per run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from signal_eval_cli.results import CaseResult

__all__ = ["Z_95", "PassRateStats", "fisher_exact_greater", "pass_rate_stats", "wilson_interval"]

Z_95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95 % by default); ``(0, 1)`` for ``n = 0``.

    Unlike the normal approximation it stays inside [0, 1] and is honest for 0/n and n/n.
    """
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if successes <= 0 else max(0.0, centre - half)
    high = 1.0 if successes >= n else min(1.0, centre + half)  # exact ends, no float dust
    return low, high


def fisher_exact_greater(a_passes: int, a_runs: int, b_passes: int, b_runs: int) -> float:
    """One-sided Fisher exact p-value that A's pass probability is greater than B's.

    Under the null hypothesis (same pass probability) A's pass count is hypergeometric
    given the margins; the p-value is the chance of A passing ``a_passes`` times or more.
    """
    total, passes = a_runs + b_runs, a_passes + b_passes
    if a_runs <= 0 or b_runs <= 0:
        return 1.0
    upper = min(passes, a_runs)
    tail = sum(
        math.comb(passes, x) * math.comb(total - passes, a_runs - x)
        for x in range(a_passes, upper + 1)
    )
    return min(1.0, tail / math.comb(total, a_runs))


@dataclass(frozen=True, slots=True)
class PassRateStats:
    """Pass counts of a set of cases, per case (pass^k) and per run, with 95 % intervals."""

    cases: int
    passed_cases: int
    runs: int
    passed_runs: int
    flaky_cases: int
    repeated: bool

    @property
    def pass_rate(self) -> float:
        return self.passed_cases / self.cases if self.cases else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.passed_cases, self.cases)

    @property
    def run_pass_rate(self) -> float:
        return self.passed_runs / self.runs if self.runs else 0.0

    @property
    def run_interval(self) -> tuple[float, float]:
        return wilson_interval(self.passed_runs, self.runs)

    @property
    def show_interval(self) -> bool:
        """Worth printing when runs were repeated or there are many cases (issue 5)."""
        return self.repeated or self.cases >= 10

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "cases": self.cases,
            "passedCases": self.passed_cases,
            "passRate": self.pass_rate,
            "passRateInterval": _interval_dict(self.interval),
            "runs": self.runs,
            "passedRuns": self.passed_runs,
            "flakyCases": self.flaky_cases,
        }
        if self.repeated:
            out["runPassRate"] = self.run_pass_rate
            out["runPassRateInterval"] = _interval_dict(self.run_interval)
        return out


def _interval_dict(interval: tuple[float, float]) -> dict[str, float]:
    low, high = interval
    return {"low": round(low, 6), "high": round(high, 6), "level": 0.95}


def pass_rate_stats(cases: Iterable[CaseResult]) -> PassRateStats:
    """Counts over the cases that ran (skipped ones excluded)."""
    n = passed = runs = passed_runs = flaky = 0
    repeated = False
    for case in cases:  # hot: 100,000-case results; no per-case property calls
        if case.skipped:
            continue
        n += 1
        passed += case.passed
        outcomes = case.outcomes
        if outcomes is None:
            runs += 1
            passed_runs += case.passed
        else:
            k = sum(outcomes)
            runs += len(outcomes)
            passed_runs += k
            flaky += 0 < k < len(outcomes)
            repeated = True
    return PassRateStats(n, passed, runs, passed_runs, flaky, repeated)
