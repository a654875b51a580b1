"""``signal-eval report RESULT.json --html FILE``: the HTML report of any saved result.

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
    HtmlOpt,
    MarkdownOpt,
    SignalsOpt,
    check_outputs,
    fail_input,
    signals_policy,
    write_reports,
)
from signal_eval_cli.errors import InputError
from signal_eval_cli.persistence import load_result

__all__ = ["report_command"]


def report_command(
    result_path: Annotated[Path, typer.Argument(metavar="RESULT", help="A saved result JSON.")],
    html: HtmlOpt = None,
    markdown: MarkdownOpt = None,
    signals: SignalsOpt = "all",
    verbose: VerboseOpt = False,
) -> None:
    """Write reports of a saved result (run, scenarios, matrix or comparison)."""
    policy = signals_policy(signals)
    if html is None and markdown is None:
        fail_input(InputError("nothing to write: give --html FILE and/or --markdown FILE"))
    check_outputs(html, markdown)
    try:
        result = load_result(result_path)
    except InputError as exc:
        fail_input(exc)
    write_reports(result, output=None, markdown=markdown, junit=None, signals=policy, html=html)
    raise typer.Exit(EXIT_OK)
