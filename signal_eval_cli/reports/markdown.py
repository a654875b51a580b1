"""Markdown reports for a GitHub step summary or a PR comment.

:func:`generate_markdown_report` takes a dataset (or scenario) result, a
:class:`MatrixResult` or a :class:`Comparison`; the three share the table and
case-detail helpers below. :func:`write_markdown_report` *appends*, as
``$GITHUB_STEP_SUMMARY`` expects, so several steps can add their sections.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from signal_eval_cli.assertions import AssertionResult
from signal_eval_cli.compare.matrix import MatrixComparison, MatrixComparisonSummary
from signal_eval_cli.comparison import CaseChange, Comparison, ComparisonSummary
from signal_eval_cli.files import append_bytes, utf8
from signal_eval_cli.kinds import CaseResults, Result
from signal_eval_cli.matrix_model import MatrixResult
from signal_eval_cli.redaction import redact_text
from signal_eval_cli.reports._format import (
    assertion_label,
    case_status_word,
    fmt_case_checks,
    fmt_case_latency,
    fmt_cost,
    fmt_delta_pct,
    fmt_ms,
    fmt_pass_rate,
    fmt_run_rate,
    fmt_runs,
    repeated,
    truncate,
)
from signal_eval_cli.reports.reporter import ReportContext, ReportOptions, renderer
from signal_eval_cli.results import AggregateMetrics, CaseResult
from signal_eval_cli.stats import PassRateStats, pass_rate_stats

__all__ = ["ReportOptions", "generate_markdown_report", "write_markdown_report", "write_report"]

MAX_TABLE_ROWS = 200
MAX_SIGNALS = 200
MESSAGE_LIMIT = 500
SHORT_VALUE = 80
"""Expected/actual get their own line only when short (the message usually quotes them)."""


def generate_markdown_report(result: Result, options: ReportOptions | None = None) -> str:
    """A Markdown report of a dataset/scenario result, a matrix result or a comparison."""
    opts = options or ReportOptions()
    lines = renderer(_RENDERS, result, "Markdown report")(result, opts)
    if opts.html_link:
        link = f"📄 Full report with timelines: [{_prose(Path(opts.html_link).name)}](<{opts.html_link}>)"
        lines[1:1] = ["", link]
    return "\n".join(lines).rstrip() + "\n"


def write_markdown_report(
    result: Result, path: str | Path, options: ReportOptions | None = None
) -> None:
    """Append the report to ``path`` (created if missing), separated by a blank line."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = redact_text(generate_markdown_report(result, options))
    needs_gap = target.exists() and target.stat().st_size > 0
    append_bytes(target, utf8(("\n" if needs_gap else "") + text))


def write_report(result: Result, path: Path, context: ReportContext) -> None:
    """``--markdown`` (:data:`~signal_eval_cli.reports.reporters.REPORTERS`): appended,
    so a job's step summary collects every command's part; it links the HTML report
    written with it."""
    html = context.paths.get("html")
    write_markdown_report(result, path, ReportOptions(html_link=str(html) if html else None))


# -- shared helpers ----------------------------------------------------------------------------


def _cell(value: object) -> str:
    """Table cells cannot hold pipes or newlines."""
    return str(value).replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


def _table(headers: Sequence[str], rows: Iterable[Sequence[object]], align: str = "") -> list[str]:
    """A GitHub table; ``align`` has one of ``l``/``r``/``c`` per column (default left)."""
    marks = {"l": "---", "r": "---:", "c": ":---:"}
    out = [
        "| " + " | ".join(headers) + " |",
        "| " + " | ".join(marks[a] for a in align.ljust(len(headers), "l")) + " |",
    ]
    out += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return [*out, ""]


def _details(summary: str, body: list[str]) -> list[str]:
    return ["<details>", f"<summary>{summary}</summary>", "", *body, "</details>", ""]


def _code(text: str) -> str:
    """Inline code that survives backticks in the text (CommonMark: a longer fence)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _prose(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """User or model text on one line, with no HTML a renderer would swallow."""
    flat = " ".join(text.split())
    return html.escape(truncate(flat, limit), quote=False)


INTERRUPTED = "⚠️"
"""Heads a partial result: never ✅, whatever the finished cases did."""


def _icon(passed: bool) -> str:
    return "✅" if passed else "❌"


def _duration(result: object) -> float | None:
    value = getattr(result, "duration_ms", None)
    return float(value) if isinstance(value, (int, float)) else None


def _headline(stats: PassRateStats, agg: AggregateMetrics, duration_ms: float | None) -> list[str]:
    """Counts, pass rate (with its interval), latency, cost and tokens of a set of cases."""
    failed = stats.cases - stats.passed_cases
    lines = [
        f"**{stats.passed_cases} passed · {failed} failed** — pass rate {fmt_pass_rate(stats)}",
        "",
    ]
    if stats.repeated:
        lines += [f"Repeated runs: {fmt_run_rate(stats)}.", ""]
    header = ["p50 latency", "p95 latency", "avg latency", "total cost", "tokens"]
    row: list[object] = [
        fmt_ms(agg.p50_latency_ms),
        fmt_ms(agg.p95_latency_ms),
        fmt_ms(agg.avg_latency_ms),
        fmt_cost(agg.total_cost),
        f"{agg.total_tokens:,}",
    ]
    if duration_ms is not None:
        header.append("duration")
        row.append(f"{duration_ms / 1000:.2f} s")
    return lines + _table(header, [row], "r" * len(header))


def _assertion_lines(
    error: str | None, assertions: Sequence[AssertionResult], *, passing: bool
) -> list[str]:
    """The error, then each failed (and, when ``passing``, passed) assertion with its why."""
    lines = [f"- **error**: {_prose(error)}"] if error else []
    for a in assertions:
        if a.passed and not passing:
            continue
        label = _code(assertion_label(a.assertion))
        lines.append(f"- {'✔' if a.passed else '✘'} {label} {_prose(a.message)}")
        expected, actual = _short(a.expected), _short(a.actual)
        shown = a.expected is not None or a.actual is not None
        if not a.passed and shown and max(len(expected), len(actual)) <= SHORT_VALUE:
            lines.append(f"  - expected {_code(expected)}, actual {_code(actual)}")
    return lines


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return truncate(" ".join(text.split()), 200)


def _signal_lines(case: CaseResult) -> list[str]:
    if not case.signals:
        return ["_(signals not kept in this result)_", ""]
    shown = case.signals[:MAX_SIGNALS]
    body = ["```"]
    for i, s in enumerate(shown):
        agent = f" [{s.agent}]" if s.agent else ""
        payload = "" if s.payload is None else " " + _short(s.payload)
        body.append(f"{i:>4} {s.name}{agent}{payload}")
    if len(case.signals) > len(shown):
        body.append(f"… {len(case.signals) - len(shown)} more signals")
    body += ["```", ""]
    return _details(f"{len(case.signals)} signals", body)


def _case_detail(case: CaseResult, opts: ReportOptions, level: int) -> list[str]:
    title = f"{'#' * level} {_icon(case.passed)} {_code(case.case_id)}"
    if case.name:
        title += f" — {_prose(case.name)}"
    if case.flaky:
        title += f" (flaky: {case.pass_count}/{case.run_count} runs passed)"
    passing = opts.include_passing_details
    lines = [title, "", *_assertion_lines(case.error, case.assertions, passing=passing), ""]
    if opts.include_signals:
        lines += _signal_lines(case)
    return lines


def _cases_in_detail(cases: Sequence[CaseResult], opts: ReportOptions, level: int) -> list[str]:
    """Failing cases (and passing ones when asked), at most ``max_cases_in_detail``."""
    chosen = [c for c in cases if not c.skipped and (not c.passed or opts.include_passing_details)]
    lines: list[str] = []
    for case in chosen[: max(0, opts.max_cases_in_detail)]:
        lines += _case_detail(case, opts, level)
    hidden = len(chosen) - max(0, opts.max_cases_in_detail)
    if hidden > 0:
        lines += [f"_… {hidden} more case{'s' if hidden > 1 else ''} not shown in detail._", ""]
    return lines


def _case_table(cases: Sequence[CaseResult]) -> list[str]:
    rows = [
        (
            _code(c.case_id),
            case_status_word(c),
            fmt_case_checks(c),
            fmt_case_latency(c),
            fmt_cost(c.metrics.cost) if not c.skipped else "-",
        )
        for c in cases[:MAX_TABLE_ROWS]
    ]
    lines = _table(["case", "status", "checks", "latency", "cost"], rows, "llrrr")
    if len(cases) > MAX_TABLE_ROWS:
        lines.insert(-1, f"_… {len(cases) - MAX_TABLE_ROWS} more cases_")
    return lines


# -- dataset / scenario results ---------------------------------------------------------------


def _case_results(
    name: str,
    cases: Sequence[CaseResult],
    opts: ReportOptions,
    duration_ms: float | None,
    interrupted: bool = False,
    level: int = 2,
) -> list[str]:
    stats = pass_rate_stats(cases)
    skipped = len(cases) - stats.cases
    icon = INTERRUPTED if interrupted else _icon(stats.passed_cases == stats.cases)
    lines = [f"{'#' * level} {icon} {_prose(name)}", ""]
    if interrupted:
        lines += [f"{INTERRUPTED} Interrupted: only the cases that finished are shown.", ""]
    lines += _headline(stats, AggregateMetrics.of(cases), duration_ms)
    if skipped:
        lines += [f"{skipped} case{'s' if skipped > 1 else ''} skipped.", ""]
    lines += _cases_in_detail(cases, opts, level + 1)
    lines += _details(f"All {len(cases)} cases", _case_table(cases))
    return lines


# -- matrix -------------------------------------------------------------------------------------


def _matrix(result: MatrixResult, opts: ReportOptions) -> list[str]:
    lines = [f"## Matrix: {_prose(result.name)}", ""]
    rec = result.recommendation
    if rec is not None:
        chosen = result.variant(rec.variant_id)
        lines += [
            f"**Recommendation: {_code(rec.variant_id)}** ({_prose(chosen.variant_name)}) — "
            f"confidence **{rec.confidence}**",
            "",
            rec.reason[:1].upper() + rec.reason[1:] + ".",
            "",
        ]
        if rec.tradeoffs:
            lines += ["Trade-offs:", *[f"- {t}" for t in rec.tradeoffs], ""]
    frontier = set(result.comparison.pareto_frontier)
    rows = []
    for v in result.variants:
        agg = v.result.aggregate_metrics
        mark = ("★" if v.variant_id in frontier else "") + (
            " 🎯" if rec and rec.variant_id == v.variant_id else ""
        )
        rows.append(
            (
                mark.strip(),
                f"{_code(v.variant_id)} {_prose(v.variant_name)}",
                fmt_pass_rate(pass_rate_stats(v.result.cases)),
                fmt_cost(agg.avg_cost_per_case),
                fmt_ms(agg.p50_latency_ms),
                fmt_ms(agg.p95_latency_ms),
                fmt_cost(agg.total_cost),
            )
        )
    headers = ["", "variant", "pass rate", "cost/case", "p50", "p95", "total cost"]
    lines += _table(headers, rows, "clrrrrr")
    lines += ["★ on the Pareto frontier (pass rate ↑, cost ↓, p50 latency ↓) · 🎯 recommended", ""]
    if result.interrupted:
        lines += [f"{INTERRUPTED} Interrupted: only the cases that finished are shown.", ""]
    for v in result.variants:
        stats = pass_rate_stats(v.result.cases)
        if stats.passed_cases == stats.cases and not opts.include_passing_details:
            continue
        body = _cases_in_detail(v.result.cases, opts, 4)
        failed = stats.cases - stats.passed_cases
        lines += _details(f"{_prose(v.variant_name)}: {failed} failed", body)
    return lines


# -- comparison ---------------------------------------------------------------------------------


_VERDICT = {"better": "📈", "worse": "📉", "equivalent": "🟰", "mixed": "🔀"}


def _gate_head(title: str, name: str, s: ComparisonSummary | MatrixComparisonSummary) -> list[str]:
    """``## 📉 Comparison: name — worse, 🚫 blocks merge`` and why it blocks."""
    gate = "🚫 blocks merge" if s.should_block else "✅ does not block"
    lines = [f"## {_VERDICT[s.verdict]} {title}: {_prose(name)} — {s.verdict}, {gate}", ""]
    if s.block_reason:
        lines += [f"> **Blocked:** {_prose(s.block_reason)}", ""]
    return lines


def _comparison(result: Comparison, opts: ReportOptions) -> list[str]:
    s, base, cand = result.summary, result.baseline, result.candidate
    lines = _gate_head("Comparison", result.name, s)
    lines += [
        *(f"> **Note:** {_prose(note)}" for note in result.notes),
        *([""] if result.notes else []),
    ]
    flips = [r for r in result.regressions if r.type == "pass_to_fail"]
    fixes = [i for i in result.improvements if i.type == "fail_to_pass"]
    flipped = _changes_section("Flipped", [*flips, *fixes])  # what a reviewer reads first
    lines += flipped or ["No case flipped between pass and fail.", ""]
    rows = [
        (
            "pass rate",
            fmt_pass_rate(base.stats),
            fmt_pass_rate(cand.stats),
            f"{s.pass_rate_delta * 100:+.1f} pts",
        ),
        *(
            [("runs passed", fmt_runs(base.stats), fmt_runs(cand.stats), "")]
            if repeated(base.stats, cand.stats)
            else []
        ),
        (
            "avg latency",
            fmt_ms(base.aggregate.avg_latency_ms),
            fmt_ms(cand.aggregate.avg_latency_ms),
            fmt_delta_pct(s.avg_latency_delta_pct),
        ),
        (
            "total cost",
            fmt_cost(base.aggregate.total_cost),
            fmt_cost(cand.aggregate.total_cost),
            fmt_delta_pct(s.cost_delta_pct),
        ),
        (
            "cases",
            str(base.total_cases),
            str(cand.total_cases),
            f"{len(result.new_cases)} new, {len(result.removed_cases)} removed",
        ),
    ]
    lines += ["### Metrics", "", *_table(["", "baseline", "candidate", "change"], rows, "lrrr")]
    lines += _changes_section(
        "Other regressions", [r for r in result.regressions if r.type != "pass_to_fail"]
    )
    metrics = [i for i in result.improvements if i.type != "fail_to_pass"]
    if metrics:
        table = _changes_table(metrics)
        plural = "s" if len(metrics) != 1 else ""
        lines += _details(f"{len(metrics)} per-case metric improvement{plural}", table)
    for title, ids in (("New cases", result.new_cases), ("Removed cases", result.removed_cases)):
        if ids:
            shown = ", ".join(_code(i) for i in ids[:MAX_TABLE_ROWS])
            more = f" … and {len(ids) - MAX_TABLE_ROWS} more" if len(ids) > MAX_TABLE_ROWS else ""
            lines += [f"**{title} ({len(ids)}):** {shown}{more}", ""]
    critical = [r for r in result.critical if r.failed_assertions or r.error]
    for r in critical[: max(0, opts.max_cases_in_detail)]:
        lines += [f"### ❌ {_code(r.case_id)} — what failed", ""]
        lines += [*_assertion_lines(r.error, r.failed_assertions, passing=False), ""]
    return lines


def _matrix_comparison(result: MatrixComparison, opts: ReportOptions) -> list[str]:
    """A table of the variants, then each variant's comparison one heading level down."""
    lines = _gate_head("Matrix comparison", result.name, result.summary)
    rows = [
        (
            _code(v.variant_id),
            v.comparison.summary.verdict,
            fmt_pass_rate(v.comparison.baseline.stats),
            fmt_pass_rate(v.comparison.candidate.stats),
            f"{v.comparison.summary.pass_rate_delta * 100:+.1f} pts",
            fmt_delta_pct(v.comparison.summary.cost_delta_pct),
            fmt_delta_pct(v.comparison.summary.avg_latency_delta_pct),
            "🚫" if v.comparison.summary.should_block else "✅",
        )
        for v in result.variants
    ]
    head = ["variant", "verdict", "baseline", "candidate", "pass rate", "cost", "latency", "gate"]
    lines += _table(head, rows, "llrrrrrl")
    for title, ids in (
        ("New variants", result.new_variants),
        ("Removed variants", result.removed_variants),
    ):
        if ids:
            lines += [f"**{title} ({len(ids)}):** {', '.join(_code(i) for i in ids)}", ""]
    for v in result.variants:
        section = _comparison(v.comparison, opts)
        section[0] = section[0].replace("Comparison:", f"Variant {_code(v.variant_id)}:", 1)
        lines += [f"#{line}" if line.startswith("#") else line for line in section]
    return lines


_CHANGE_WORDS = {"pass_to_fail": "pass → fail", "fail_to_pass": "fail → pass"}


def _badge(change: CaseChange) -> str:
    severity = getattr(change, "severity", None)  # a regression's; improvements have none
    return {"critical": "🔴 critical", "warning": "🟡 warning"}.get(severity or "", "🟢")


def _changes_table(changes: Sequence[CaseChange]) -> list[str]:
    rows = [
        (_badge(c), _code(c.case_id), _CHANGE_WORDS.get(c.type, c.type), _prose(c.description))
        for c in changes[:MAX_TABLE_ROWS]
    ]
    lines = _table(["", "case", "change", "what changed"], rows)
    if len(changes) > MAX_TABLE_ROWS:
        lines.insert(-1, f"_… {len(changes) - MAX_TABLE_ROWS} more_")
    return lines


def _changes_section(title: str, changes: Sequence[CaseChange]) -> list[str]:
    return [f"### {title} ({len(changes)})", "", *_changes_table(changes)] if changes else []


def _run(result: CaseResults, opts: ReportOptions) -> list[str]:
    interrupted = bool(getattr(result, "interrupted", False))
    return _case_results(result.name, result.cases, opts, _duration(result), interrupted)


_RENDERS: dict[str, Callable[[Any, ReportOptions], list[str]]] = {
    "dataset": _run,
    "scenarios": _run,
    "matrix": _matrix,
    "comparison": _comparison,
    "matrixComparison": _matrix_comparison,
}
"""How each result kind is drawn: a kind missing here has no Markdown report."""
