"""Rich console tables for matrix results (Pareto variants marked) and comparisons
(regressions first; two matrices: a row per variant, then each variant's changes)."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from signal_eval_cli.compare.matrix import MatrixComparison
from signal_eval_cli.comparison import CaseChange, Comparison, Regression
from signal_eval_cli.matrix_model import MatrixResult, VariantResult
from signal_eval_cli.reports._format import (
    fmt_cost,
    fmt_delta_pct,
    fmt_interval,
    fmt_ms,
    fmt_pass_rate,
    fmt_runs,
    repeated,
)
from signal_eval_cli.reports.console import plain_console
from signal_eval_cli.stats import pass_rate_stats

__all__ = [
    "comparison_table",
    "matrix_table",
    "print_comparison",
    "print_matrix",
    "print_matrix_comparison",
    "variant_line",
]

_CONFIDENCE_STYLE = {"high": "bold green", "medium": "yellow", "low": "red"}
_VERDICT_STYLE = {"better": "green", "worse": "red", "equivalent": "dim", "mixed": "yellow"}
MAX_ROWS = 200


def matrix_table(result: MatrixResult) -> Table:
    """One row per variant; ★ marks the Pareto frontier, bold the recommended one."""
    repeated = any(pass_rate_stats(v.result.cases).repeated for v in result.variants)
    table = Table(title=f"matrix: {result.name}", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("", no_wrap=True, min_width=1)
    table.add_column("variant", style="cyan", overflow="fold")  # the column that gives way
    table.add_column("pass rate", justify="right", no_wrap=True)
    table.add_column("95% CI", justify="right", no_wrap=True)
    if repeated:
        table.add_column("runs", justify="right", no_wrap=True)
        table.add_column("flaky", justify="right", no_wrap=True)
    table.add_column("cost/case", justify="right", no_wrap=True)
    table.add_column("p50", justify="right", no_wrap=True)
    frontier = set(result.comparison.pareto_frontier)
    chosen = result.recommendation.variant_id if result.recommendation else None
    for v in result.variants:
        agg = v.result.aggregate_metrics
        stats = pass_rate_stats(v.result.cases)
        runs = [f"{stats.passed_runs}/{stats.runs}", str(stats.flaky_cases)]
        table.add_row(
            Text("★", style="yellow") if v.variant_id in frontier else "",
            v.variant_id,
            f"{stats.pass_rate:.0%} ({stats.passed_cases}/{stats.cases})",
            fmt_interval(*stats.interval),
            *(runs if repeated else []),
            fmt_cost(agg.avg_cost_per_case),
            fmt_ms(agg.p50_latency_ms),
            style="bold" if v.variant_id == chosen else None,
        )
    return table


def variant_line(variant: VariantResult) -> str:
    """The progress line of a variant that finished: ``✓ <name>: <pass rate>``."""
    return f"✓ {variant.variant_name}: {fmt_pass_rate(pass_rate_stats(variant.result.cases))}"


def print_matrix(result: MatrixResult, console: Console | None = None) -> None:
    console = plain_console(console)
    console.print(matrix_table(result))
    console.print(
        Text("★ Pareto frontier (pass rate ↑, cost ↓, p50 latency ↓)", style="dim"),
    )
    rec = result.recommendation
    if rec is not None:
        line = Text("recommendation: ", style="bold")
        line.append(rec.variant_id, style="bold cyan")
        line.append(f" (confidence {rec.confidence})", style=_CONFIDENCE_STYLE[rec.confidence])
        line.append(f" — {rec.reason}")
        console.print(line)
        for tradeoff in rec.tradeoffs:
            console.print(Text(f"  · {tradeoff}", style="dim"))
    if result.interrupted:
        console.print(
            Text(
                "(interrupted: only the cases that finished are shown; no recommendation "
                "from partial results)",
                style="bold yellow",
            )
        )


def _change_row(change: CaseChange) -> tuple[Text, str, str, str]:
    if isinstance(change, Regression):
        badge = (
            Text("CRITICAL", style="bold red")
            if change.severity == "critical"
            else Text("warning", style="yellow")
        )
    else:
        badge = Text("improved", style="green")
    return badge, change.case_id, change.type, change.description


def comparison_table(result: Comparison) -> Table:
    """Regressions (critical first), fixed cases, then new and removed cases.

    Per-case metric improvements are only counted (in :func:`summary_text`): after a
    cheaper model they are every row and would bury the regressions.
    """
    table = Table(title=f"compare: {result.name}", title_justify="left")
    table.add_column("", no_wrap=True)
    table.add_column("case", style="cyan", no_wrap=True)
    table.add_column("type", no_wrap=True)
    table.add_column("what changed", overflow="fold")
    fixed = [i for i in result.improvements if i.type != "metric_improved"]
    changes: list[CaseChange] = [*result.regressions, *fixed]
    for change in changes[:MAX_ROWS]:
        table.add_row(*_change_row(change))
    if len(changes) > MAX_ROWS:
        table.add_row("", f"… {len(changes) - MAX_ROWS} more", "", "")
    sides = (
        ("new", result.new_cases, set(result.new_failing), "fails in the candidate"),
        ("removed", result.removed_cases, set(result.removed_passing), "passed in the baseline"),
    )
    for label, ids, noted, note in sides:
        for case_id in ids[:MAX_ROWS]:
            table.add_row(Text(label, style="blue"), case_id, "", note if case_id in noted else "")
    return table


def summary_text(result: Comparison) -> Text:
    s, base, cand = result.summary, result.baseline, result.candidate
    text = Text(f"verdict: {s.verdict}", style=f"bold {_VERDICT_STYLE[s.verdict]}")
    text.append(
        f"  · pass rate {fmt_pass_rate(base.stats)} → {fmt_pass_rate(cand.stats)}"
        f" ({s.pass_rate_delta * 100:+.1f} pts)"
        + (
            f" · runs passed {fmt_runs(base.stats)} → {fmt_runs(cand.stats)}"
            if repeated(base.stats, cand.stats)
            else ""
        )
        + f" · avg latency {fmt_delta_pct(s.avg_latency_delta_pct)}"
        f" · cost {fmt_delta_pct(s.cost_delta_pct)}"
        f" · {len(result.unchanged)} unchanged",
        style="dim",
    )
    faster = sum(i.type == "metric_improved" for i in result.improvements)
    if faster:
        plural = "s" if faster != 1 else ""
        text.append(
            f" · {faster} per-case metric improvement{plural} (see --markdown)", style="dim"
        )
    if s.should_block:
        text.append(f"\nBLOCK: {s.block_reason}", style="bold red")
    return text


def print_comparison(result: Comparison, console: Console | None = None) -> None:
    console = plain_console(console)
    table = comparison_table(result)
    if table.row_count:
        console.print(table)
    console.print(summary_text(result))


def print_matrix_comparison(result: MatrixComparison, console: Console | None = None) -> None:
    """A row per variant; then the changes of each variant that has any."""
    console = plain_console(console)
    table = Table(title=f"compare matrix: {result.name}", title_justify="left")
    table.add_column("variant", style="cyan", overflow="fold")
    table.add_column("verdict", no_wrap=True)
    table.add_column("pass rate", justify="right", no_wrap=True)
    table.add_column("regressions", justify="right", no_wrap=True)
    table.add_column("fixed", justify="right", no_wrap=True)
    table.add_column("gate", no_wrap=True)
    for v in result.variants:
        c, s = v.comparison, v.comparison.summary
        table.add_row(
            v.variant_id,
            Text(s.verdict, style=_VERDICT_STYLE[s.verdict]),
            f"{fmt_pass_rate(c.baseline.stats)} → {fmt_pass_rate(c.candidate.stats)}",
            str(len(c.regressions)),
            str(sum(i.type == "fail_to_pass" for i in c.improvements)),
            Text("BLOCK", style="bold red") if s.should_block else Text("ok", style="green"),
        )
    for label, ids in (("new", result.new_variants), ("removed", result.removed_variants)):
        for variant_id in ids:
            table.add_row(variant_id, Text(label, style="blue"), "", "", "", "")
    console.print(table)
    for v in result.variants:
        changes = comparison_table(v.comparison)
        if changes.row_count:
            changes.title = f"variant {v.variant_id}: {v.comparison.name}"
            console.print(changes)
    overall = result.summary
    verdict = overall.verdict
    console.print(Text(f"verdict: {verdict}", style=f"bold {_VERDICT_STYLE[verdict]}"))
    if overall.should_block:
        console.print(Text(f"BLOCK: {overall.block_reason}", style="bold red"))
