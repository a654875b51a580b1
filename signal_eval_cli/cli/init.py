"""``signal-eval init [DIR]``: write a starter project, then say what to run next."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from signal_eval_cli.cli.command import VerboseOpt
from signal_eval_cli.cli.common import fail_input, out, place_path
from signal_eval_cli.errors import InputError
from signal_eval_cli.starter import DATASET, init_project

__all__ = ["init_command"]


def init_command(
    directory: Annotated[
        Path,
        typer.Argument(
            metavar="[DIR]", parser=place_path, help="Where to write it (created if missing)."
        ),
    ] = Path("."),
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite the starter's files if they exist.")
    ] = False,
    verbose: VerboseOpt = False,
) -> None:
    """Write a starter project (a harness and a dataset) that runs offline at once."""
    try:
        written = init_project(directory, force=force)
    except InputError as exc:
        fail_input(exc)
    for path in written:
        out.print(f"wrote {path}", highlight=False)
    dataset = _argument(directory / DATASET)
    out.print("\nNext:", highlight=False)
    for command in (f"signal-eval validate {dataset}", f"signal-eval run {dataset}"):
        out.print(f"  {command}", highlight=False)
    out.print(
        f"Then put your agent in {_argument(directory / 'agent.py')} and your cases in {dataset}.",
        highlight=False,
    )


def _argument(path: Path) -> str:
    """``path`` as the shell passes it to a command as a file: quoted, and a relative path
    that starts with ``-`` (``init -- -evals``) led by ``./``, not read as an option."""
    text = str(path)
    return shlex.quote(f"./{text}" if text.startswith("-") else text)
