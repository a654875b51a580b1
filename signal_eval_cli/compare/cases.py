"""Two results compared case by case: the rules of regressions, improvements and the verdict.

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

Baseline cases missing from the candidate are listed in ``removed_cases``, candidate
cases the baseline lacks in ``new_cases``; the removed ones that passed in the baseline
and the new ones that fail in the candidate are named in :attr:`Comparison.notes`
(printed by the CLI and every report) but do not block: a new case has no baseline to
regress from, and ``run``'s exit code already reports its failure.

The model it builds (:class:`Comparison`…) is :mod:`signal_eval_cli.comparison`; the
statistics are :mod:`signal_eval_cli.stats`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from signal_eval_cli.comparison import (
    CompareOptions,
    Comparison,
    ComparisonSummary,
    Improvement,
    Regression,
    ResultSummary,
    Side,
    Verdict,
)
from signal_eval_cli.errors import IncompatibleResults
from signal_eval_cli.kinds import CaseResults, has_cases, kind_of
from signal_eval_cli.results import CaseResult
from signal_eval_cli.stats import fisher_exact_greater

__all__ = ["compare"]

_EPS = 1e-12


def _check_compatible(baseline: object, candidate: object) -> None:
    for label, result in (("baseline", baseline), ("candidate", candidate)):
        if not has_cases(result):
            raise IncompatibleResults(
                f"the {label} is a {kind_of(result)} result: compare takes results with "
                "cases (dataset or scenario results), or two matrix results"
            )
    base_kind, cand_kind = kind_of(baseline), kind_of(candidate)
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
    new_failing: list[str] = []
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
            if not (cand.passed or cand.skipped):
                new_failing.append(cand.case_id)
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
        new_failing=new_failing,
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
