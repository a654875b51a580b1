"""Baseline vs candidate: regressions, improvements, a verdict, and whether to block a merge.

:func:`compare` works on anything with ``.name`` and ``.cases: list[CaseResult]`` —
dataset results and scenario results alike — matching cases by id.

Results that cannot be gated are refused with :class:`IncompatibleResults`: an
interrupted baseline or candidate (a Ctrl-C'd run holds only the cases that finished),
a candidate in which no case ran, duplicate case ids on either side, results of
different kinds, or results with no case id in common.

Rules, per case present (and not skipped) on both sides:

* **Single runs**: passed → failed is a ``pass_to_fail`` regression (``critical``
  unless ``critical_on_pass_to_fail=False``); failed → passed is a ``fail_to_pass``
  improvement.
* **Repeats** (``outcomes`` on both sides): the pass counts are compared with a
  one-sided Fisher exact test; only a drop with ``p ≤ significance`` is a regression,
  so one flip in a flaky case does not block. A *consistent* pass → fail (every
  baseline run passed, every candidate run failed) is a ``pass_to_fail`` regression
  whatever p is: with two runs a side the smallest p is 1/6, so the test alone could
  never block it (the description still gives p). A significant drop between two
  *flaky* sides is a ``metric_degraded`` warning on the case's pass rate, never a
  blocking regression.
* **Metrics** (both sides ran without error): latency or cost above baseline by more
  than ``latency_threshold`` / ``cost_threshold`` (relative) is a ``metric_degraded``
  warning; below by more than it is a ``metric_improved`` improvement. A repeated
  case's latency is its median run's, and its cost (the total of its runs) is taken
  per run, so sides run with different ``--repeat`` compare fairly.

The pass-rate delta is the difference of the pass rates each side reports (over the
cases that ran on that side). The average-latency and cost (per run) deltas, their
percentages, and the latency/cost directions of the verdict are computed over the
cases that ran on *both* sides (present in both, skipped in neither), so a case
that is skipped, new or removed cannot make the candidate look cheaper or faster.
Percentages (``*_pct``) are percent, e.g. ``12.5`` for +12.5 %.

Baseline cases missing from the candidate are listed in ``removed_cases``; those
that passed in the baseline are counted in :attr:`Comparison.notes` (printed by the
CLI) but do not block.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from signal_eval_cli.assertions import AssertionResult
from signal_eval_cli.collector import gc_paused
from signal_eval_cli.errors import IncompatibleResults
from signal_eval_cli.persistence import load_result, register_result_kind
from signal_eval_cli.results import (
    RESULT_SCHEMA_VERSION,
    AggregateMetrics,
    CaseResult,
    DatasetResult,
    camel_case,
)

__all__ = [
    "CaseChange",
    "CompareOptions",
    "Comparison",
    "ComparisonSummary",
    "Improvement",
    "IncompatibleResults",
    "PassRateStats",
    "Regression",
    "ResultSummary",
    "Side",
    "compare",
    "compare_files",
    "fisher_exact_greater",
    "pass_rate_stats",
    "result_kind",
    "wilson_interval",
]

Severity = Literal["critical", "warning"]
Verdict = Literal["better", "worse", "equivalent", "mixed"]
Metric = Literal["passRate", "latency", "cost"]

Z_95 = 1.959963984540054
_EPS = 1e-12


# -- statistics (stdlib only) -----------------------------------------------------------------


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


# -- types -------------------------------------------------------------------------------------


class CaseResults(Protocol):
    """What :func:`compare` needs: dataset results, scenario results, …"""

    @property
    def name(self) -> str: ...

    @property
    def cases(self) -> list[CaseResult]: ...


@dataclass(frozen=True, slots=True)
class CompareOptions:
    pass_rate_threshold: float = 0.05
    """Minimum pass-rate change (absolute) that makes the verdict better or worse."""
    latency_threshold: float = 0.10
    """Relative latency change beyond which a case or the average counts as changed."""
    latency_floor_ms: float = 50.0
    """A latency change of at most this many ms never counts, whatever its percentage:
    on a fast harness 1 ms → 4 ms is +300 % of timer noise."""
    cost_threshold: float = 0.10
    """Relative cost change beyond which a case or the total counts as changed."""
    critical_on_pass_to_fail: bool = True
    significance: float = 0.05
    """With repeats: the one-sided Fisher p-value at or below which a change is real."""

    def to_dict(self) -> dict[str, Any]:
        return {camel_case(k): v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CompareOptions:
        defaults = cls()
        return cls(**{k: type(v)(data.get(camel_case(k), v)) for k, v in asdict(defaults).items()})


@dataclass(frozen=True, slots=True)
class Side:
    """One side of a change: did the case pass, and the value compared (ms, USD, rate)."""

    passed: bool
    value: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"passed": self.passed}
        if self.value is not None:
            out["value"] = self.value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Side:
        value = data.get("value")
        return cls(bool(data["passed"]), float(value) if value is not None else None)


@dataclass(slots=True)
class CaseChange:
    """What regressions and improvements share."""

    case_id: str
    type: str
    description: str
    baseline: Side
    candidate: Side
    case_name: str | None = None
    delta: float | None = None
    metric: Metric | None = None
    p_value: float | None = None
    """With repeats: the one-sided Fisher p-value behind the decision."""

    def _common_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"caseId": self.case_id}
        if self.case_name is not None:
            out["caseName"] = self.case_name
        out |= {
            "type": self.type,
            "description": self.description,
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
        }
        for key, value in (("delta", self.delta), ("metric", self.metric)):
            if value is not None:
                out[key] = value
        if self.p_value is not None:
            out["pValue"] = round(self.p_value, 6)
        return out

    @staticmethod
    def _common_kwargs(data: Mapping[str, Any]) -> dict[str, Any]:
        delta, p_value = data.get("delta"), data.get("pValue")
        return {
            "case_id": str(data["caseId"]),
            "type": str(data["type"]),
            "description": str(data.get("description", "")),
            "baseline": Side.from_dict(data["baseline"]),
            "candidate": Side.from_dict(data["candidate"]),
            "case_name": data.get("caseName"),
            "delta": float(delta) if delta is not None else None,
            "metric": data.get("metric"),
            "p_value": float(p_value) if p_value is not None else None,
        }


@dataclass(slots=True)
class Regression(CaseChange):
    """``pass_to_fail`` or ``metric_degraded``; ``critical`` ones block a merge."""

    severity: Severity = "critical"
    failed_assertions: list[AssertionResult] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = self._common_dict() | {"severity": self.severity}
        if self.failed_assertions:
            out["failedAssertions"] = [a.to_dict() for a in self.failed_assertions]
        if self.error is not None:
            out["error"] = self.error
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Regression:
        return cls(
            **cls._common_kwargs(data),
            severity="warning" if data.get("severity") == "warning" else "critical",
            failed_assertions=[
                AssertionResult.from_dict(a) for a in data.get("failedAssertions", [])
            ],
            error=data.get("error"),
        )


@dataclass(slots=True)
class Improvement(CaseChange):
    """``fail_to_pass`` or ``metric_improved``."""

    def to_dict(self) -> dict[str, Any]:
        return self._common_dict()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Improvement:
        return cls(**cls._common_kwargs(data))


@dataclass(slots=True)
class ResultSummary:
    """The headline numbers of one side, kept so a saved comparison stands on its own."""

    name: str
    kind: str
    total_cases: int
    passed_cases: int
    failed_cases: int
    skipped_cases: int
    pass_rate: float
    aggregate: AggregateMetrics
    stats: PassRateStats
    started_at: str = ""

    @classmethod
    def of(cls, result: CaseResults) -> ResultSummary:
        stats = pass_rate_stats(result.cases)
        return cls(
            name=result.name,
            kind=result_kind(result),
            total_cases=len(result.cases),
            passed_cases=stats.passed_cases,
            failed_cases=stats.cases - stats.passed_cases,
            skipped_cases=len(result.cases) - stats.cases,
            pass_rate=stats.pass_rate,
            aggregate=AggregateMetrics.of(result.cases),
            stats=stats,
            started_at=str(getattr(result, "started_at", "") or ""),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "totalCases": self.total_cases,
            "passedCases": self.passed_cases,
            "failedCases": self.failed_cases,
            "skippedCases": self.skipped_cases,
            "passRate": self.pass_rate,
            "aggregateMetrics": self.aggregate.to_dict(),
            "statistics": self.stats.to_dict(),
            "startedAt": self.started_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ResultSummary:
        st = data.get("statistics", {})
        stats = PassRateStats(
            cases=int(st.get("cases", 0)),
            passed_cases=int(st.get("passedCases", 0)),
            runs=int(st.get("runs", 0)),
            passed_runs=int(st.get("passedRuns", 0)),
            flaky_cases=int(st.get("flakyCases", 0)),
            repeated="runPassRate" in st,
        )
        return cls(
            name=str(data["name"]),
            kind=str(data.get("kind", "dataset")),
            total_cases=int(data["totalCases"]),
            passed_cases=int(data["passedCases"]),
            failed_cases=int(data["failedCases"]),
            skipped_cases=int(data.get("skippedCases", 0)),
            pass_rate=float(data["passRate"]),
            aggregate=AggregateMetrics.from_dict(data.get("aggregateMetrics", {})),
            stats=stats,
            started_at=str(data.get("startedAt", "")),
        )


@dataclass(slots=True)
class ComparisonSummary:
    pass_rate_delta: float
    avg_latency_delta_ms: float
    avg_latency_delta_pct: float
    cost_delta: float
    cost_delta_pct: float
    verdict: Verdict
    should_block: bool
    block_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "passRateDelta": round(self.pass_rate_delta, 6),
            "avgLatencyDeltaMs": round(self.avg_latency_delta_ms, 3),
            "avgLatencyDeltaPct": round(self.avg_latency_delta_pct, 3),
            "costDelta": round(self.cost_delta, 9),
            "costDeltaPct": round(self.cost_delta_pct, 3),
            "verdict": self.verdict,
            "shouldBlock": self.should_block,
        }
        if self.block_reason is not None:
            out["blockReason"] = self.block_reason
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ComparisonSummary:
        verdict = data["verdict"]
        if verdict not in ("better", "worse", "equivalent", "mixed"):
            raise ValueError(f"unknown verdict {verdict!r}")
        return cls(
            pass_rate_delta=float(data["passRateDelta"]),
            avg_latency_delta_ms=float(data["avgLatencyDeltaMs"]),
            avg_latency_delta_pct=float(data["avgLatencyDeltaPct"]),
            cost_delta=float(data["costDelta"]),
            cost_delta_pct=float(data["costDeltaPct"]),
            verdict=verdict,
            should_block=bool(data["shouldBlock"]),
            block_reason=data.get("blockReason"),
        )


@dataclass(slots=True)
class Comparison:
    baseline: ResultSummary
    candidate: ResultSummary
    regressions: list[Regression]
    improvements: list[Improvement]
    unchanged: list[str]
    """Cases with the same pass/fail status (they may still carry metric changes)."""
    new_cases: list[str]
    removed_cases: list[str]
    skipped_cases: list[str]
    """Present on both sides but skipped on at least one: not compared."""
    summary: ComparisonSummary
    options: CompareOptions = field(default_factory=CompareOptions)
    removed_passing: list[str] = field(default_factory=list)
    """Removed cases that passed in the baseline (not saved: the file keeps ``removedCases``)."""

    kind: ClassVar[str] = "comparison"

    @property
    def notes(self) -> list[str]:
        """Things a reviewer should see that do not block the merge."""
        n = len(self.removed_passing)
        if not n:
            return []
        shown = ", ".join(self.removed_passing[:5]) + (f" and {n - 5} more" if n > 5 else "")
        plural = "s" if n != 1 else ""
        verb = "were" if n != 1 else "was"
        return [
            f"{n} baseline case{plural} missing from the candidate "
            f"({verb} passing in the baseline): {shown}"
        ]

    @property
    def name(self) -> str:
        if self.baseline.name == self.candidate.name:
            return self.candidate.name
        return f"{self.baseline.name} → {self.candidate.name}"

    @property
    def critical(self) -> list[Regression]:
        return [r for r in self.regressions if r.severity == "critical"]

    def to_dict(self, signals: Any = None) -> dict[str, Any]:
        """The saved form (``signals`` is accepted for :func:`save_result` and ignored)."""
        return {
            "schemaVersion": RESULT_SCHEMA_VERSION,
            "kind": self.kind,
            "name": self.name,
            "options": self.options.to_dict(),
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
            "summary": self.summary.to_dict(),
            "regressions": [r.to_dict() for r in self.regressions],
            "improvements": [i.to_dict() for i in self.improvements],
            "unchanged": self.unchanged,
            "newCases": self.new_cases,
            "removedCases": self.removed_cases,
            "skippedCases": self.skipped_cases,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Comparison:
        return cls(
            baseline=ResultSummary.from_dict(data["baseline"]),
            candidate=ResultSummary.from_dict(data["candidate"]),
            regressions=[Regression.from_dict(r) for r in data["regressions"]],
            improvements=[Improvement.from_dict(i) for i in data["improvements"]],
            unchanged=[str(c) for c in data["unchanged"]],
            new_cases=[str(c) for c in data["newCases"]],
            removed_cases=[str(c) for c in data["removedCases"]],
            skipped_cases=[str(c) for c in data.get("skippedCases", [])],
            summary=ComparisonSummary.from_dict(data["summary"]),
            options=CompareOptions.from_dict(data.get("options", {})),
        )


register_result_kind("comparison", Comparison.from_dict)


# -- compare -----------------------------------------------------------------------------------


def compare_files(
    baseline: str | Path,
    candidate: str | Path,
    options: CompareOptions | None = None,
    *,
    variant: str | None = None,
) -> Any:
    """Load two saved results and compare them (what ``signal-eval compare`` does): a
    :class:`Comparison`, or for two matrices a
    :class:`~signal_eval_cli.compare_matrix.MatrixComparison` (``variant``: one
    variant's :class:`Comparison`).

    The files are read through their case indexes where they hold (``lean=True``).

    Raises:
        InputError: a file is unreadable, old, malformed or of an unknown kind.
        IncompatibleResults: see :func:`compare` and
            :func:`~signal_eval_cli.compare_matrix.compare_matrices`.
    """
    # Imported here: compare_matrix builds on this module.
    from signal_eval_cli.compare_matrix import compare_results

    # load_result pauses the collector while it builds a result; this pause is for what
    # follows: with the collector back on, the millions of objects just loaded are all
    # in the young generation and compare()'s first allocations would make it traverse
    # them (and then again in the older generations): about 1 s more for 2 × 100,000
    # cases. It also covers freeing both results on the way out.
    with gc_paused():
        base, cand = load_result(baseline, lean=True), load_result(candidate, lean=True)
        return compare_results(base, cand, options, variant=variant)


def result_kind(result: object) -> str:
    """``dataset``, ``matrix``, ``comparison``, or whatever ``kind`` a result declares."""
    kind = getattr(result, "kind", None)
    if isinstance(kind, str):
        return kind
    return "dataset" if type(result) is DatasetResult else type(result).__name__


def _check_compatible(baseline: object, candidate: object) -> None:
    for label, result in (("baseline", baseline), ("candidate", candidate)):
        if not isinstance(getattr(result, "cases", None), list):
            raise IncompatibleResults(
                f"the {label} is a {result_kind(result)} result: compare takes results with "
                "cases (dataset or scenario results), or two matrix results"
            )
    base_kind, cand_kind = result_kind(baseline), result_kind(candidate)
    if base_kind != cand_kind:
        raise IncompatibleResults(
            f"cannot compare a {base_kind} result with a {cand_kind} result: run the same "
            "command (run, or scenario) on both sides"
        )


def _by_id(label: str, result: CaseResults) -> dict[str, CaseResult]:
    """Cases by id; a repeated id makes the result ambiguous, so it is refused."""
    by_id = {c.case_id: c for c in result.cases}
    if len(by_id) != len(result.cases):
        seen: set[str] = set()
        for c in result.cases:
            if c.case_id in seen:
                raise IncompatibleResults(
                    f"the {label} '{result.name}' has more than one case with id "
                    f"'{c.case_id}': case ids must be unique to be compared"
                )
            seen.add(c.case_id)
    return by_id


def compare(
    baseline: CaseResults, candidate: CaseResults, options: CompareOptions | None = None
) -> Comparison:
    """Compare two results case by case; see the module docstring for the rules.

    Raises:
        IncompatibleResults: the results are of different kinds or not case results,
            either was interrupted, no case ran in the candidate, a case id repeats
            on either side, or they share no case id although both have cases.
    """
    opts = options or CompareOptions()
    _check_compatible(baseline, candidate)
    for label, result in (("baseline", baseline), ("candidate", candidate)):
        if getattr(result, "interrupted", False):
            ran = sum(not c.skipped for c in result.cases)
            raise IncompatibleResults(
                f"the {label} '{result.name}' was interrupted — re-run it: it holds only "
                f"the {ran} case(s) that finished, so it cannot gate a merge"
            )
    base_by_id = _by_id("baseline", baseline)
    cand_ids = _by_id("candidate", candidate).keys()
    if all(c.skipped for c in candidate.cases):
        what = "has no cases" if not candidate.cases else "skipped every case"
        raise IncompatibleResults(
            f"no case ran in the candidate '{candidate.name}' (it {what}): there is nothing to gate"
        )
    if base_by_id and not cand_ids & base_by_id.keys():
        raise IncompatibleResults(
            f"no case ids in common: '{baseline.name}' and '{candidate.name}' look like "
            "results of different datasets"
        )
    regressions: list[Regression] = []
    improvements: list[Improvement] = []
    unchanged: list[str] = []
    new_cases: list[str] = []
    skipped: list[str] = []
    both_ran = 0  # cases that ran on both sides: the latency and cost deltas are over them
    base_latency = cand_latency = base_cost = cand_cost = 0.0
    metric_thresholds: tuple[tuple[Literal["latency", "cost"], float], ...] = (
        ("latency", opts.latency_threshold),
        ("cost", opts.cost_threshold),
    )
    for cand in candidate.cases:
        base = base_by_id.get(cand.case_id)
        if base is None:
            new_cases.append(cand.case_id)
            continue
        if base.skipped or cand.skipped:
            skipped.append(cand.case_id)
            continue
        both_ran += 1
        base_latency += base.metrics.latency_ms
        cand_latency += cand.metrics.latency_ms
        base_cost += _cost_per_run(base)
        cand_cost += _cost_per_run(cand)
        if base.passed == cand.passed and (base.outcomes is None or cand.outcomes is None):
            unchanged.append(cand.case_id)  # the common case, without a call
        else:
            change = _status_change(base, cand, opts)
            if change is None:
                unchanged.append(cand.case_id)
            elif isinstance(change, Regression):
                regressions.append(change)
                if change.type != "pass_to_fail":
                    unchanged.append(cand.case_id)
            else:
                improvements.append(change)
                if change.type != "fail_to_pass":
                    unchanged.append(cand.case_id)
        if base.error is not None or cand.error is not None:
            continue
        for metric, threshold in metric_thresholds:
            found = _metric_change(base, cand, metric, threshold, opts.latency_floor_ms)
            if found is None:
                continue
            if isinstance(found, Regression):
                regressions.append(found)
            else:
                improvements.append(found)
    removed = [c for c in baseline.cases if c.case_id not in cand_ids]
    common = _CommonMetrics(
        base_avg_latency=base_latency / both_ran if both_ran else 0.0,
        cand_avg_latency=cand_latency / both_ran if both_ran else 0.0,
        base_cost=base_cost,
        cand_cost=cand_cost,
    )
    regressions.sort(key=lambda r: r.severity != "critical")  # stable: candidate order within
    base_summary, cand_summary = ResultSummary.of(baseline), ResultSummary.of(candidate)
    return Comparison(
        baseline=base_summary,
        candidate=cand_summary,
        regressions=regressions,
        improvements=improvements,
        unchanged=unchanged,
        new_cases=new_cases,
        removed_cases=[c.case_id for c in removed],
        skipped_cases=skipped,
        summary=_summarize(base_summary, cand_summary, common, regressions, improvements, opts),
        options=opts,
        removed_passing=[c.case_id for c in removed if c.passed and not c.skipped],
    )


def _failure_words(case: CaseResult) -> str:
    if case.error:
        return f"error: {case.error}"
    types = [str(a.assertion.get("type", "?")) for a in case.failed_assertions]
    if not types:
        return "failed"
    shown = ", ".join(types[:3]) + (f" and {len(types) - 3} more" if len(types) > 3 else "")
    return f"failed {shown}"


def _status_change(
    base: CaseResult, cand: CaseResult, opts: CompareOptions
) -> Regression | Improvement | None:
    if base.outcomes is not None and cand.outcomes is not None:
        return _repeated_change(base, cand, opts)
    if base.passed == cand.passed:
        return None
    if base.passed:
        return Regression(
            case_id=cand.case_id,
            case_name=cand.name,
            type="pass_to_fail",
            description=f"passed → {_failure_words(cand)}",
            baseline=Side(True),
            candidate=Side(False),
            severity="critical" if opts.critical_on_pass_to_fail else "warning",
            failed_assertions=cand.failed_assertions,
            error=cand.error,
        )
    return Improvement(
        case_id=cand.case_id,
        case_name=cand.name,
        type="fail_to_pass",
        description=f"{_failure_words(base)} → passed",
        baseline=Side(False),
        candidate=Side(True),
    )


def _repeated_change(
    base: CaseResult, cand: CaseResult, opts: CompareOptions
) -> Regression | Improvement | None:
    kb, nb, kc, nc = base.pass_count, base.run_count, cand.pass_count, cand.run_count
    worse = fisher_exact_greater(kb, nb, kc, nc)
    better = fisher_exact_greater(kc, nc, kb, nb)
    alpha = opts.significance + _EPS
    # Every baseline run passed and every candidate run failed: a consistent pass → fail
    # whatever p is (with two runs a side Fisher's smallest p is 1/6 > 0.05).
    consistent_drop = kb == nb and kc == 0 and nb > 0 and nc > 0
    if worse > alpha and better > alpha and not consistent_drop:
        return None
    both_flaky = base.flaky and cand.flaky
    p_value = worse if worse <= alpha or consistent_drop else better
    words = f"passed {kb}/{nb} runs → {kc}/{nc} (one-sided Fisher p = {p_value:.3g})"
    if consistent_drop and worse > alpha:
        words += ": every run passed before and every run fails now"
    common: dict[str, Any] = {
        "case_id": cand.case_id,
        "case_name": cand.name,
        "baseline": Side(base.passed, kb / nb),
        "candidate": Side(cand.passed, kc / nc),
        "delta": kc / nc - kb / nb,
        "metric": "passRate",
        "p_value": p_value,
    }
    if worse <= alpha or consistent_drop:
        if both_flaky:
            return Regression(
                **common,
                type="metric_degraded",
                description=f"flaky on both sides, pass rate fell: {words}",
                severity="warning",
            )
        return Regression(
            **common,
            type="pass_to_fail",
            description=words,
            severity="critical" if opts.critical_on_pass_to_fail else "warning",
            failed_assertions=cand.failed_assertions,
            error=cand.error,
        )
    if both_flaky:
        return Improvement(
            **common, type="metric_improved", description=f"flaky on both sides: {words}"
        )
    return Improvement(**common, type="fail_to_pass", description=words)


def _metric_change(
    base: CaseResult,
    cand: CaseResult,
    metric: Literal["latency", "cost"],
    threshold: float,
    floor_ms: float = 0.0,
) -> Regression | Improvement | None:
    b = base.metrics.latency_ms if metric == "latency" else _cost_per_run(base)
    c = cand.metrics.latency_ms if metric == "latency" else _cost_per_run(cand)
    if b == c:
        return None
    floor = floor_ms if metric == "latency" else 0.0
    direction = _relative_direction(b, c, threshold, floor)
    if direction == 0:
        return None
    change = f"{(c - b) / b:+.0%}" if b else "from zero"
    words = (
        f"{metric} {_fmt_metric(metric, b)} → {_fmt_metric(metric, c)} "
        f"({change}, threshold {threshold:.0%})"
    )
    common: dict[str, Any] = {
        "case_id": cand.case_id,
        "case_name": cand.name,
        "baseline": Side(base.passed, b),
        "candidate": Side(cand.passed, c),
        "delta": c - b,
        "metric": metric,
    }
    if direction > 0:
        return Regression(**common, type="metric_degraded", description=words, severity="warning")
    return Improvement(**common, type="metric_improved", description=words)


def _cost_per_run(case: CaseResult) -> float:
    """A repeated case's cost is its runs' total (``metrics.runs`` of them; results saved
    before runs were summed say nothing and hold one run's); compared per run, sides run
    with different ``--repeat`` compare fairly."""
    return case.metrics.cost / max(1, case.metrics.runs)


def _relative_direction(base: float, cand: float, threshold: float, floor: float = 0.0) -> int:
    """+1 when ``cand`` exceeds ``base`` by more than ``threshold`` (relative), −1 below, else 0.

    A change of at most ``floor`` (absolute) is 0. From a zero baseline any increase
    past the floor counts (the relative change is unbounded).
    """
    if abs(cand - base) <= floor:
        return 0
    if base <= 0:
        return 1 if cand > _EPS else 0
    change = (cand - base) / base
    if change > threshold + _EPS:
        return 1
    if change < -threshold - _EPS:
        return -1
    return 0


def _fmt_metric(metric: str, value: float) -> str:
    return f"{value:,.0f} ms" if metric == "latency" else f"${value:.4f}"


def _pct(delta: float, base: float) -> float:
    return delta / base * 100 if base else 0.0


@dataclass(frozen=True, slots=True)
class _CommonMetrics:
    """Average latency and total cost of each side over the cases that ran on both."""

    base_avg_latency: float
    cand_avg_latency: float
    base_cost: float
    cand_cost: float


def _summarize(
    base: ResultSummary,
    cand: ResultSummary,
    common: _CommonMetrics,
    regressions: Sequence[Regression],
    improvements: Sequence[Improvement],
    opts: CompareOptions,
) -> ComparisonSummary:
    pass_delta = cand.pass_rate - base.pass_rate
    latency_delta = common.cand_avg_latency - common.base_avg_latency
    cost_delta = common.cand_cost - common.base_cost
    latency_dir = _relative_direction(
        common.base_avg_latency,
        common.cand_avg_latency,
        opts.latency_threshold,
        opts.latency_floor_ms,
    )
    cost_dir = _relative_direction(common.base_cost, common.cand_cost, opts.cost_threshold)
    quality_lost = any(r.metric in (None, "passRate") for r in regressions)
    quality_won = any(i.metric in (None, "passRate") for i in improvements)
    worse = quality_lost or pass_delta <= -opts.pass_rate_threshold - _EPS or latency_dir > 0
    worse = worse or cost_dir > 0
    better = quality_won or pass_delta >= opts.pass_rate_threshold + _EPS or latency_dir < 0
    better = better or cost_dir < 0
    verdict: Verdict = (
        "mixed" if worse and better else "worse" if worse else "better" if better else "equivalent"
    )
    critical = [r for r in regressions if r.severity == "critical"]
    if critical:  # a comparison that blocks is worse, whatever else improved
        verdict = "worse"
    reason = None
    if critical:
        names = ", ".join(r.case_id for r in critical[:5])
        more = f" and {len(critical) - 5} more" if len(critical) > 5 else ""
        plural = "s" if len(critical) > 1 else ""
        reason = f"{len(critical)} critical regression{plural}: {names}{more}"
    return ComparisonSummary(
        pass_rate_delta=pass_delta,
        avg_latency_delta_ms=latency_delta,
        avg_latency_delta_pct=_pct(latency_delta, common.base_avg_latency),
        cost_delta=cost_delta,
        cost_delta_pct=_pct(cost_delta, common.base_cost),
        verdict=verdict,
        should_block=bool(critical),
        block_reason=reason,
    )
