"""The ``signal-eval`` command line: a thin layer over the library.

One module per command; this one builds the Typer app and names them. A command's
module (and the library behind it) is imported only when that command runs or shows
its help: ``signal-eval --help`` and each command start in a fraction of a second.
Exit codes: 0 all passed · 1 evaluation failures or a blocking regression ·
2 invalid input (``file:line:col`` messages, no traceback) · 130 interrupted.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import itertools
import os
import signal
import sys
import threading
from _io import _IOBase
from collections.abc import Iterator
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from signal_eval_cli.errors import InputError

__all__ = ["COMMANDS", "app", "main", "main_and_exit"]

COMMANDS: dict[str, tuple[str, str]] = {  # name: (module:function, its docstring's summary)
    "init": (
        "init:init_command",
        "Write a starter project (a harness and a dataset) that runs offline at once.",
    ),
    "run": (
        "run:run_command",
        "Run datasets (or evaluate recorded traces) and print a table of results.",
    ),
    "matrix": (
        "matrix:matrix_command",
        "Run a matrix of harness variants over one dataset (or of agents over scenarios); rank them and recommend one.",
    ),
    "compare": (
        "compare:compare_command",
        "Compare two results; with --fail-on-regression, exit 1 when a regression blocks.",
    ),
    "validate": (
        "validate:validate_command",
        "Validate files against their schemas; print every problem; exit 0 or 2.",
    ),
    "scenario": (
        "scenario:scenario_command",
        "Run coding-agent scenarios: copy the fixture, apply the agentTask, run the goals.",
    ),
    "merge": (
        "merge:merge_command",
        "Join the shards of one run (--shard i/N) into one result, as if run unsharded.",
    ),
    "import": (
        "import_traces:import_command",
        "Import OpenAI Agents SDK, OTLP/JSON (GenAI) or LangGraph traces as signal JSONL or test cases.",
    ),
    "report": (
        "report:report_command",
        "Write reports of a saved result (run, scenarios, matrix or comparison).",
    ),
}

_SETTINGS: dict[str, Any] = {
    "add_completion": False,
    "pretty_exceptions_enable": False,
    "context_settings": {"help_option_names": ["-h", "--help"]},
    "rich_markup_mode": None,  # plain help: the rich renderer shows flags as taking a <bool>
}


def command_function(name: str) -> Any:
    """The function behind command ``name`` (importing its module)."""
    module, function = COMMANDS[name][0].split(":")
    return getattr(importlib.import_module(f"signal_eval_cli.cli.{module}"), function)


class _LazyGroup(TyperGroup):
    """Names every command, builds one only when it is asked for."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in COMMANDS:
            return None
        from signal_eval_cli.cli.command import Command  # flags refuse a value

        single = typer.Typer(**_SETTINGS)
        single.command(cmd_name, cls=Command)(command_function(cmd_name))
        return typer.main.get_command(single)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        from typer._click.utils import make_default_short_help

        limit = formatter.width - 6 - max(map(len, COMMANDS))
        rows = [
            (n, make_default_short_help(summary, limit)) for n, (_, summary) in COMMANDS.items()
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


app = typer.Typer(
    name="signal-eval",
    help="Evaluate AI agent workflows by asserting over the signals they emit.",
    no_args_is_help=True,
    cls=_LazyGroup,
    **_SETTINGS,
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


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except InputError as exc:  # raised from deep inside a command: still no traceback
        from signal_eval_cli.cli.common import EXIT_INPUT, print_problems

        print_problems(exc)
        sys.exit(EXIT_INPUT)
    except OSError as exc:  # a path the checks missed (too long, vanished): still exit 2
        from signal_eval_cli.cli.common import EXIT_INPUT, print_problems

        where = f"{exc.filename}: " if exc.filename else ""
        print_problems(InputError(f"{str(where)[:200]}{exc.strerror or exc}"))
        sys.exit(EXIT_INPUT)


def main_and_exit() -> NoReturn:
    """:func:`main`, then the end of the process without tearing the interpreter down.

    After a run, freeing its objects one by one (the modules' dicts, a last garbage
    collection over every case and signal) takes 0.2-0.4 s that the user waits for and
    nothing needs. What a normal exit does that matters still happens, in its order:
    other non-daemon threads are joined, ``atexit`` handlers run (cassettes saved,
    proxies stopped), files left open (a harness's log) and the standard streams are
    flushed; the processes a harness left running are killed; then ``os._exit``. Anything unusual (an exit message, a stream that cannot
    be flushed, an exception) takes the normal way.
    """
    code = 0
    try:
        main()
    except SystemExit as exc:
        if not isinstance(exc.code, int | None):
            raise
        code = exc.code or 0
    with _ctrl_c_noted() as late:
        for thread in threading.enumerate():
            if thread is not threading.current_thread() and not thread.daemon:
                while thread.is_alive() and not late:  # Ctrl-C: wait no more
                    thread.join(0.1)
        atexit._run_exitfuncs()
        _flush_open_files()
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed pipe: Python's own exit reports it
            sys.exit(code)
        scope = sys.modules.get("signal_eval_cli.process_scope")  # a command that ran harnesses
        if scope is not None:  # ends what they left running: it would hold a `| cat` open
            scope.kill_descendants()
    deadline = sys.modules.get("signal_eval_cli.deadline")  # a run may leave os._exit
    if deadline is not None:  # refused (a harness stuck for good): end the process anyway
        deadline.exit_process(code)
    os._exit(code)


@contextlib.contextmanager
def _ctrl_c_noted() -> Iterator[list[int]]:
    """While the process ends, a Ctrl-C is noted (in the list given), not raised: the
    command is done, its results written. Raised, it printed a traceback from wherever the
    ending was (killing a harness's processes, saving a cassette) and cut it short; noted,
    it stops only the wait for threads. A second one ends the process at once."""
    late: list[int] = []

    def noted(signum: int, frame: object) -> None:
        late.append(signum)
        signal.signal(signum, signal.SIG_DFL)

    previous = signal.getsignal(signal.SIGINT)
    # ignored when the command started, it stays so; only the main thread handles signals
    if previous is signal.SIG_IGN or threading.current_thread() is not threading.main_thread():
        yield late
        return
    signal.signal(signal.SIGINT, noted)
    try:
        yield late
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


def _flush_open_files() -> None:
    """Write out what files left open still hold in their buffers, as the teardown that
    closes them would: every object of a class built on ``_io._IOBase`` (what the
    teardown closes; ``io.IOBase``'s subclasses are its subclasses too).

    Found at C speed (``map``, ``compress``), each type asked once and without the ABC
    machinery of ``io.IOBase``: after a 5000-case run, a loop in Python over its 200,000
    tracked objects took 90 ms of CPU, this about 40."""
    objects = gc.get_objects()
    types = list(map(type, objects))  # once: reading each object's type is the cost
    kinds = {kind for kind in set(types) if issubclass(kind, _IOBase)}
    for obj in itertools.compress(objects, map(kinds.__contains__, types)):
        if obj is not sys.stdout and obj is not sys.stderr:
            with contextlib.suppress(OSError, ValueError):  # closed, detached, a dead pipe
                obj.flush()
