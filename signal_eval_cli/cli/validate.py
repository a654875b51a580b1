"""``signal-eval validate``: check input files without running anything."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from signal_eval_cli.cli.command import VerboseOpt
from signal_eval_cli.cli.common import EXIT_INPUT, EXIT_OK, out, print_notices, print_problems
from signal_eval_cli.errors import InputError
from signal_eval_cli.validate import validate_path

__all__ = ["validate_command"]


def validate_command(
    files: Annotated[
        list[Path],
        typer.Argument(
            metavar="FILE...", help="Datasets, scenarios, matrices (YAML/JSON) or traces (.jsonl)."
        ),
    ],
    verbose: VerboseOpt = False,
) -> None:
    """Validate files against their schemas; print every problem; exit 0 or 2."""
    invalid = 0
    for path in files:
        kind, problems = validate_path(path, note=lambda notice: print_notices([notice]))
        if problems:
            invalid += 1
            print_problems(InputError(problems))
        else:
            out.print(Text.assemble(("ok", "green"), f" {path} ({kind})"), soft_wrap=True)
    raise typer.Exit(EXIT_INPUT if invalid else EXIT_OK)
