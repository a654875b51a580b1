"""Rich console output: a table of cases with the failed assertions and why."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from signal_eval_cli.results import CaseResult, DatasetResult

__all__ = ["case_status", "dataset_table", "print_dataset"]

MESSAGE_LIMIT = 160


def case_status(case: CaseResult) -> Text:
    if case.skipped:
        return Text("SKIP", style="yellow")
    if case.flaky:
        return Text(f"FLAKY {case.pass_count}/{case.run_count}", style="magenta")
    return Text("PASS", style="green") if case.passed else Text("FAIL", style="bold red")


def _details(case: CaseResult) -> Text:
    text = Text()
    if case.error:
        text.append(f"error: {case.error}", style="red")
    for result in case.failed_assertions:
        if text:
            text.append("\n")
        message = (
            result.message
            if len(result.message) <= MESSAGE_LIMIT
            else result.message[:MESSAGE_LIMIT] + "…"
        )
        text.append(f"{result.assertion.get('type')}: ", style="bold")
        text.append(message)
    return text


MIN_DETAILS_WIDTH = 30
"""Narrower than this, the failed assertions go below the table instead of in a column."""


def dataset_table(result: DatasetResult, *, details: bool = True) -> Table:
    """One row per case; ``details=False`` leaves out the failed-assertions column."""
    table = Table(title=result.name, title_justify="left", show_lines=False)
    table.add_column("case", style="cyan", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("checks", justify="right", no_wrap=True)
    table.add_column("latency", justify="right", no_wrap=True)
    table.add_column("cost", justify="right", no_wrap=True)
    if details:
        table.add_column("failed assertions", overflow="fold")
    for case in result.cases:
        total = len(case.assertions)
        passed = total - len(case.failed_assertions)
        row: list[str | Text] = [
            case.case_id,
            case_status(case),
            f"{passed}/{total}" if not case.skipped and (total or not case.error) else "-",
            f"{case.metrics.latency_ms:,.0f} ms" if not case.skipped else "-",
            f"${case.metrics.cost:.4f}" if not case.skipped else "-",
        ]
        table.add_row(*row, *([_details(case)] if details else []))
    return table


def failures_below(result: DatasetResult) -> list[Text]:
    """For a narrow terminal: ``case — why`` per failed case, to print under the table."""
    lines = []
    for case in result.cases:
        why = _details(case)
        if why:
            lines.append(Text.assemble((case.case_id, "bold cyan"), " — ", why))
    return lines


def summary_line(result: DatasetResult) -> Text:
    agg = result.aggregate_metrics
    style = "green" if result.passed else "red"
    text = Text(
        f"{result.passed_cases} passed, {result.failed_cases} failed, "
        f"{result.skipped_cases} skipped",
        style=f"bold {style}",
    )
    text.append(
        f"  · pass rate {result.pass_rate:.0%} · p50 {agg.p50_latency_ms:,.0f} ms · p95 "
        f"{agg.p95_latency_ms:,.0f} ms · cost ${agg.total_cost:.4f} · tokens {agg.total_tokens:,}"
        f" · {result.duration_ms / 1000:.2f}s",
        style="dim",
    )
    if result.interrupted:
        text.append("  (interrupted: partial results)", style="bold yellow")
    return text


def print_dataset(result: DatasetResult, console: Console | None = None) -> None:
    console = console or Console()
    narrow = console.measure(dataset_table(result, details=False)).maximum
    if console.width - narrow >= MIN_DETAILS_WIDTH:
        console.print(dataset_table(result))
    else:  # no room for a readable column: the reasons go under the table, full width
        console.print(dataset_table(result, details=False))
        for line in failures_below(result):
            console.print(line)
    console.print(summary_line(result))
