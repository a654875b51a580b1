"""The ``signal-eval`` command line: a thin layer over the library.

One module per command; this one builds the Typer app and registers them.
Exit codes: 0 all passed · 1 evaluation failures or a blocking regression ·
2 invalid input (``file:line:col`` messages, no traceback) · 130 interrupted.
"""

from __future__ import annotations

import functools
import sys
from typing import Annotated, Any

import typer

from signal_eval_cli.cli.common import EXIT_INPUT, print_problems
from signal_eval_cli.cli.compare import compare_command
from signal_eval_cli.cli.import_traces import import_command
from signal_eval_cli.cli.matrix import matrix_command
from signal_eval_cli.cli.merge import merge_command
from signal_eval_cli.cli.report import report_command
from signal_eval_cli.cli.run import run_command
from signal_eval_cli.cli.scenario import scenario_command
from signal_eval_cli.cli.validate import validate_command
from signal_eval_cli.errors import InputError

__all__ = ["app", "command", "main"]

app = typer.Typer(
    name="signal-eval",
    help="Evaluate AI agent workflows by asserting over the signals they emit.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,  # plain help: the rich renderer shows flags as taking a <bool>
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"signal-eval {version('signal-eval')}")
        except PackageNotFoundError:  # run from a source tree that was never installed
            typer.echo("signal-eval (not installed)")
        raise typer.Exit()


@app.callback()
def _main(
    _: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Evaluate AI agent workflows by asserting over the signals they emit."""


app.command("run")(run_command)
app.command("matrix")(matrix_command)
app.command("compare")(compare_command)
app.command("validate")(validate_command)
app.command("scenario")(scenario_command)
app.command("merge")(merge_command)
app.command("import")(import_command)
app.command("report")(report_command)


@functools.cache
def command() -> Any:
    """The click command behind :data:`app`, built once per process (a fuzzer that forks
    a child per input builds it before forking)."""
    return typer.main.get_command(app)


def main() -> None:
    """Console-script entry point."""
    try:
        command()()
    except InputError as exc:  # raised from deep inside a command: still no traceback
        print_problems(exc)
        sys.exit(EXIT_INPUT)
    except OSError as exc:  # a path the checks missed (too long, vanished): still exit 2
        where = f"{exc.filename}: " if exc.filename else ""
        print_problems(InputError(f"{str(where)[:200]}{exc.strerror or exc}"))
        sys.exit(EXIT_INPUT)
