"""Rich console output: a table of cases with the failed assertions and why.

A long run's table keeps to :data:`TABLE_ROWS` rows by default, the cases that need
attention first, and one line counts the rest: 100,000 rows would take a minute to
print and nobody reads them (the results file has them all)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from signal_eval_cli.reports._format import fmt_case_checks, fmt_case_latency, fmt_runs
from signal_eval_cli.results import CaseResult, DatasetResult
from signal_eval_cli.stats import pass_rate_stats

__all__ = [
    "TABLE_CHOICES",
    "TABLE_ROWS",
    "TableChoice",
    "case_status",
    "dataset_table",
    "print_dataset",
    "table_cases",
    "width_at_most",
]

MESSAGE_LIMIT = 160
TABLE_ROWS = 50

TableChoice = Literal["auto", "all", "failed", "none"]
TABLE_CHOICES: tuple[str, ...] = get_args(TableChoice)


def _needs_attention(case: CaseResult) -> bool:
    return not case.skipped and (not case.passed or case.flaky)


def table_cases(
    cases: Sequence[CaseResult], choice: TableChoice = "auto", limit: int = TABLE_ROWS
) -> list[CaseResult]:
    """The rows of the table: ``all``, ``failed`` (and flaky), ``none``; ``auto`` is every
    case up to ``limit``, past it the failing and flaky ones first, then the others."""
    if choice == "none":
        return []
    if choice == "all" or (choice == "auto" and len(cases) <= limit):
        return list(cases)
    failing = [c for c in cases if _needs_attention(c)]
    if choice == "failed" or len(failing) >= limit:
        return failing if choice == "failed" else failing[:limit]
    others = (c for c in cases if not _needs_attention(c))
    return failing + [c for _, c in zip(range(limit - len(failing)), others, strict=False)]


def case_status(case: CaseResult) -> Text:
    if case.skipped:
        return Text("SKIP", style="yellow")
    if case.flaky:
        return Text(f"FLAKY {case.pass_count}/{case.run_count}", style="magenta")
    return Text("PASS", style="green") if case.passed else Text("FAIL", style="bold red")


def _capped(message: str) -> str:
    return message if len(message) <= MESSAGE_LIMIT else message[:MESSAGE_LIMIT] + "…"


def _details(case: CaseResult) -> Text:
    """Why a case failed, each reason cut to MESSAGE_LIMIT: an error that quotes a 400 KB
    agent id took 7 s of CPU to fold into the table (found by bench/fuzz.py)."""
    text = Text()
    if case.error:
        text.append(f"error: {_capped(case.error)}", style="red")
    for result in case.failed_assertions:
        if text:
            text.append("\n")
        text.append(f"{result.assertion.get('type')}: ", style="bold")
        text.append(_capped(result.message))
    return text


MIN_DETAILS_WIDTH = 30
"""Narrower than this, the failed assertions go below the table instead of in a column."""


def dataset_table(
    result: DatasetResult, cases: Sequence[CaseResult] | None = None, *, details: bool = True
) -> Table:
    """The table of ``cases`` (default: every case of ``result``); ``details=False`` leaves
    out the failed-assertions column."""
    table = Table(title=result.name, title_justify="left", show_lines=False)
    table.add_column("case", style="cyan", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("checks", justify="right", no_wrap=True)
    table.add_column("latency", justify="right", no_wrap=True)
    table.add_column("cost", justify="right", no_wrap=True)
    if details:
        table.add_column("failed assertions", overflow="fold")
    for case in result.cases if cases is None else cases:
        row: list[str | Text] = [
            case.case_id,
            case_status(case),
            fmt_case_checks(case),
            fmt_case_latency(case),
            f"${case.metrics.cost:.4f}" if not case.skipped else "-",
        ]
        table.add_row(*row, *([_details(case)] if details else []))
    return table


def failures_below(cases: Sequence[CaseResult]) -> list[Text]:
    """For a narrow terminal: ``case — why`` per failed case, to print under the table."""
    lines = []
    for case in cases:
        why = _details(case)
        if why:
            lines.append(Text.assemble((case.case_id, "bold cyan"), " — ", why))
    return lines


def summary_line(result: DatasetResult) -> Text:
    """Counts and figures; with repeats the run-level pass rate beside the case-level
    one (a case passes only if all its runs do: 4/5 runs would read as plain failed)."""
    agg = result.aggregate_metrics
    stats = pass_rate_stats(result.cases)
    runs = f" · runs passed {fmt_runs(stats)}, {stats.flaky_cases} flaky" if stats.repeated else ""
    style = "green" if result.passed else "red"
    text = Text(
        f"{result.passed_cases} passed, {result.failed_cases} failed, "
        f"{result.skipped_cases} skipped",
        style=f"bold {style}",
    )
    text.append(
        f"  · pass rate {result.pass_rate:.0%}{runs} · p50 {agg.p50_latency_ms:,.0f} ms · p95 "
        f"{agg.p95_latency_ms:,.0f} ms · cost ${agg.total_cost:.4f} · tokens {agg.total_tokens:,}"
        f" · {result.duration_ms / 1000:.2f}s",
        style="dim",
    )
    if result.interrupted:
        text.append("  (interrupted: partial results)", style="bold yellow")
    return text


def hidden_line(hidden: Sequence[CaseResult]) -> Text:
    """``… 99,950 more cases not shown (99,950 passed): --table all lists them``."""
    counts = {
        "passed": sum(1 for c in hidden if not c.skipped and c.passed and not c.flaky),
        "failed or flaky": sum(1 for c in hidden if _needs_attention(c)),
        "skipped": sum(1 for c in hidden if c.skipped),
    }
    parts = ", ".join(f"{n:,} {word}" for word, n in counts.items() if n)
    return Text(
        f"… {len(hidden):,} more {'case' if len(hidden) == 1 else 'cases'} not shown ({parts}): "
        "--table all lists them",
        style="dim",
    )


def width_at_most(table: Table) -> int | None:
    """At least the width ``console.measure`` gives a :func:`dataset_table` (default box
    and padding), from its cells' lengths as written: markup and emoji codes only shorten
    a cell. ``None`` when a cell is not one printable line of text. Measuring renders
    every cell, a third of the cost of printing the table; this only counts."""
    total = len(table.columns) + 1  # the box's vertical lines
    for column in table.columns:
        widest = 0
        for cell in (column.header, *column.cells):
            text = cell.plain if isinstance(cell, Text) else cell
            if not isinstance(text, str) or not text.isprintable():
                return None
            widest = max(widest, cell_len(text))
        total += widest + 2  # a space either side
    return total


def plain_console(console: Console | None = None) -> Console:
    """``console``, else a new one that reads no markup: what a report prints holds the
    user's text (a case id ``x[/y]`` raised MarkupError, ``[red]c`` lost its brackets)."""
    return console or Console(markup=False)


def print_dataset(
    result: DatasetResult, console: Console | None = None, table: TableChoice = "auto"
) -> None:
    console = plain_console(console)
    shown = table_cases(result.cases, table)
    if shown:
        narrow = dataset_table(result, shown, details=False)
        room = console.width - MIN_DETAILS_WIDTH
        at_most = width_at_most(narrow)
        details = (at_most is not None and at_most <= room) or (
            console.measure(narrow).maximum <= room
        )
        console.print(dataset_table(result, shown, details=details))
        if not details:  # no room for a readable column: the reasons go under the table
            for line in failures_below(shown):
                console.print(line)
    if table != "none" and len(shown) < len(result.cases):
        listed = {id(c) for c in shown}
        console.print(hidden_line([c for c in result.cases if id(c) not in listed]))
    console.print(summary_line(result))
