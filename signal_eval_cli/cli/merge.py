"""``signal-eval merge PART... -o all.json``: join shards (results files or journals)
into the result one unsharded run would have written.

Exit codes as ``run``: 0 all passed (a matrix: merged), 1 cases failed, 2 the parts
do not make one whole run (missing, duplicated, mismatched or unfinished shards).
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
    TableOpt,
    check_outputs,
    fail_input,
    out,
    signals_policy,
    table_choice,
)
from signal_eval_cli.cli.report_options import ReportPaths, report_options, write_command_reports
from signal_eval_cli.errors import InputError
from signal_eval_cli.kinds import passed
from signal_eval_cli.merging import merge_parts
from signal_eval_cli.reports.terminal import print_result

__all__ = ["merge_command"]


@report_options("dataset", "scenarios", "matrix", required=("json",))
def merge_command(
    parts: Annotated[
        list[Path],
        typer.Argument(metavar="PART...", help="Every shard's results file (or journal)."),
    ],
    signals: SignalsOpt = "failed",
    table: TableOpt = "auto",
    verbose: VerboseOpt = False,
    *,
    reports: ReportPaths,
) -> None:
    """Join the shards of one run (--shard i/N) into one result, as if run unsharded."""
    policy = signals_policy(signals)
    rows = table_choice(table)
    check_outputs(*reports.values(), inputs=parts)
    try:
        result = merge_parts(parts)
    except InputError as exc:
        fail_input(exc)
    print_result(result, out, rows)
    write_command_reports(result, reports, signals=policy)
    raise typer.Exit(EXIT_OK if passed(result) else EXIT_FAILED)
