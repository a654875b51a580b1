"""``signal-eval report RESULT.json --html FILE``: the reports of any saved result.

A saved comparison holds no cases, so its page lists the flips without timelines;
``signal-eval compare BASE CAND --html FILE`` keeps both sides for them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from signal_eval_cli.cli.command import VerboseOpt
from signal_eval_cli.cli.common import (
    EXIT_OK,
    SignalsOpt,
    check_outputs,
    fail_input,
    signals_policy,
)
from signal_eval_cli.cli.report_options import ReportPaths, report_options, write_command_reports
from signal_eval_cli.errors import InputError
from signal_eval_cli.persistence import load_result
from signal_eval_cli.reports.reporters import REPORTERS

__all__ = ["report_command"]


@report_options("dataset", "scenarios", "matrix", "comparison")
def report_command(
    result_path: Annotated[Path, typer.Argument(metavar="RESULT", help="A saved result JSON.")],
    signals: SignalsOpt = "all",
    verbose: VerboseOpt = False,
    *,
    reports: ReportPaths,
) -> None:
    """Write reports of a saved result (run, scenarios, matrix or comparison)."""
    policy = signals_policy(signals)
    if not any(reports.values()):
        options = " and/or ".join(f"{r.options[0]} FILE" for r in REPORTERS if r.name in reports)
        fail_input(InputError(f"nothing to write: give {options}"))
    check_outputs(*reports.values(), inputs=[result_path])
    try:
        result = load_result(result_path)
    except InputError as exc:
        fail_input(exc)
    write_command_reports(result, reports, signals=policy)
    raise typer.Exit(EXIT_OK)
