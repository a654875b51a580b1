"""Numbers and words every report prints the same way (console, Markdown, JUnit)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from signal_eval_cli.results import CaseResult
from signal_eval_cli.stats import PassRateStats

__all__ = [
    "assertion_label",
    "case_status_word",
    "failure_lines",
    "fmt_case_checks",
    "fmt_case_latency",
    "fmt_cost",
    "fmt_delta_pct",
    "fmt_interval",
    "fmt_ms",
    "fmt_pass_rate",
    "fmt_run_rate",
    "fmt_runs",
    "fmt_signed",
    "repeated",
    "truncate",
]


def fmt_ms(value: float) -> str:
    return f"{value:,.0f} ms"


def fmt_case_latency(case: CaseResult) -> str:
    """What was measured; "—" for a case that ended before anything was (its error says
    why): "0 ms" would read as instant."""
    if case.skipped:
        return "-"
    return fmt_ms(case.metrics.latency_ms) if case.latency_measured else "—"


def fmt_case_checks(case: CaseResult) -> str:
    """``passed/total``; "-" for a skipped case or one whose error came before any check
    ran ("0/0" would read as nothing to check)."""
    total = len(case.assertions)
    if case.skipped or (case.error and not total):
        return "-"
    return f"{total - len(case.failed_assertions)}/{total}"


def fmt_cost(value: float) -> str:
    return f"${value:.4f}"


def fmt_signed(value: float, unit: str = "", digits: int = 0) -> str:
    return f"{value:+,.{digits}f}{unit}"


def fmt_delta_pct(pct: float) -> str:
    """A percent change (already ×100) as ``+12%``; ``±0%`` when it rounds to nothing;
    ``—`` when there is none to give (a side's latency or cost was not a number)."""
    if not math.isfinite(pct):
        return "—"
    return "±0%" if round(pct) == 0 else f"{pct:+.0f}%"


def fmt_interval(low: float, high: float) -> str:
    """``49%–94%``; with as many decimals (up to 2) as it takes to tell the ends apart, so
    a narrow interval over many cases reads ``93.8%–94.1%``, not ``94%–94%``."""
    places = next((p for p in range(3) if f"{low:.{p}%}" != f"{high:.{p}%}"), 0)
    return f"{low:.{places}%}–{high:.{places}%}"


def fmt_pass_rate(stats: PassRateStats, *, interval: bool | None = None) -> str:
    """``80% (8/10)`` plus ``, 95% CI 49–94%`` when it is worth showing."""
    text = f"{stats.pass_rate:.0%} ({stats.passed_cases}/{stats.cases})"
    if interval if interval is not None else stats.show_interval:
        text += f", 95% CI {fmt_interval(*stats.interval)}"
    return text


def fmt_run_rate(stats: PassRateStats) -> str:
    """With repeats: ``87% of 30 runs (95% CI 70–95%), 2 flaky``."""
    return (
        f"{stats.run_pass_rate:.0%} of {stats.runs} runs (95% CI "
        f"{fmt_interval(*stats.run_interval)}), {stats.flaky_cases} flaky"
    )


def fmt_runs(stats: PassRateStats) -> str:
    """Run-level pass rate beside the case-level one: ``80% (4/5)`` of the runs."""
    return f"{stats.run_pass_rate:.0%} ({stats.passed_runs}/{stats.runs})"


def repeated(*sides: PassRateStats) -> bool:
    """Whether any side ran some case more than once (then runs are worth showing)."""
    return any(s.runs > s.cases for s in sides)


def case_status_word(case: CaseResult) -> str:
    if case.skipped:
        return "skipped"
    if case.flaky:
        return f"flaky {case.pass_count}/{case.run_count}"
    return "passed" if case.passed else "failed"


def assertion_label(assertion: dict[str, Any]) -> str:
    return str(assertion.get("type", "?"))


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def failure_lines(case: CaseResult, *, limit: int = 300) -> list[str]:
    """``type: message`` per failed assertion, the error first."""
    lines = [f"error: {truncate(case.error, limit)}"] if case.error else []
    lines += [
        f"{assertion_label(a.assertion)}: {truncate(a.message, limit)}"
        for a in case.failed_assertions
    ]
    return lines


def ran(cases: Iterable[CaseResult]) -> list[CaseResult]:
    return [c for c in cases if not c.skipped]
