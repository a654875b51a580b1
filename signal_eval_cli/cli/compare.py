"""``signal-eval compare BASE CAND``: the CI gate (two results, or two matrices variant
by variant; ``--variant ID`` compares one variant of two matrices).

Exit codes: 0 compared (and, with ``--fail-on-regression``, nothing blocks) · 1
``--fail-on-regression`` and a critical regression · 2 unreadable, old, malformed
or incompatible result files, with the reason — including results that cannot gate
a merge: an interrupted baseline or candidate, a candidate in which no case ran,
or a case id that repeats on either side.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from signal_eval_cli.cli.command import VerboseOpt
from signal_eval_cli.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    SignalsOpt,
    check_outputs,
    fail_input,
    out,
    signals_policy,
)
from signal_eval_cli.cli.report_options import ReportPaths, report_options, write_command_reports
from signal_eval_cli.compare import (
    CompareOptions,
    IncompatibleResults,
    compare_files,
    compare_files_with_sides,
)
from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.reports.terminal import print_result

__all__ = ["compare_command"]


@report_options("comparison", "matrixComparison")
def compare_command(
    baseline: Annotated[Path, typer.Argument(metavar="BASE", help="Baseline results JSON.")],
    candidate: Annotated[Path, typer.Argument(metavar="CAND", help="Candidate results JSON.")],
    fail_on_regression: Annotated[
        bool,
        typer.Option("--fail-on-regression", help="Exit 1 when a critical regression blocks."),
    ] = False,
    latency_threshold: Annotated[
        float, typer.Option(min=0, help="Relative latency change that counts (0.10 = 10%).")
    ] = 0.10,
    latency_floor_ms: Annotated[
        float, typer.Option(min=0, help="A latency change of at most this many ms never counts.")
    ] = 50.0,
    cost_threshold: Annotated[
        float, typer.Option(min=0, help="Relative cost change that counts (0.10 = 10%).")
    ] = 0.10,
    pass_rate_threshold: Annotated[
        float, typer.Option(min=0, max=1, help="Pass-rate change that sets the verdict.")
    ] = 0.05,
    significance: Annotated[
        float,
        typer.Option(
            min=0, max=1, help="With repeats: Fisher p-value at or below which a drop is real."
        ),
    ] = 0.05,
    variant: Annotated[
        str | None,
        typer.Option(metavar="ID", help="Compare this variant of two matrix results only."),
    ] = None,
    signals: SignalsOpt = "failed",
    verbose: VerboseOpt = False,
    *,
    reports: ReportPaths,
) -> None:
    """Compare two results; with --fail-on-regression, exit 1 when a regression blocks."""
    policy = signals_policy(signals)
    check_outputs(*reports.values(), inputs=[baseline, candidate])
    sides = None
    try:
        options = CompareOptions(
            pass_rate_threshold=pass_rate_threshold,
            latency_threshold=latency_threshold,
            latency_floor_ms=latency_floor_ms,
            cost_threshold=cost_threshold,
            significance=significance,
        )
        if reports.get("html") is None:
            result = compare_files(baseline, candidate, options, variant=variant)
        else:  # the page shows flipped cases' timelines: keep both results
            result, sides = compare_files_with_sides(baseline, candidate, options, variant=variant)
    except InputError as exc:
        fail_input(exc)
    except IncompatibleResults as exc:
        fail_input(InputError([Problem(f"{baseline} vs {candidate}", 0, 0, str(exc))]))
    print_result(result, out)
    for note in result.notes:  # e.g. passing baseline cases the candidate no longer has
        out.print(f"note: {note}", style="yellow", highlight=False)
    write_command_reports(result, reports, signals=policy, sides=sides)
    blocked = fail_on_regression and result.summary.should_block
    raise typer.Exit(EXIT_FAILED if blocked else EXIT_OK)
