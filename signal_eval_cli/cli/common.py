"""What every command shares: consoles, exit codes, input errors, output paths
(report options: :mod:`.report_options`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, NoReturn, cast

import typer
import yaml
from rich.console import Console

from signal_eval_cli import files
from signal_eval_cli.cli.command import LOG
from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.results import CaseResult, SignalsPolicy


class _Console(Console):
    """A console whose reader going away (``| head``) silences it, and no more: rich's
    own handling ends the process (exit 1), before the command writes its reports."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        with contextlib.suppress(OSError, ValueError):  # no descriptor (a test's buffer)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.file.fileno())  # what else is written there, too
            os.close(devnull)


def _console(*, stderr: bool = False) -> Console:
    """Rich console. Written to a log, a file or a pipe (no terminal, no COLUMNS), a line
    is never broken: rich broke ``ok /a/long/path.yaml (dataset)`` inside the path, which
    a CI log's reader then cannot copy nor grep; tables get 120 columns there instead of
    80. A width asked for (COLUMNS) is kept by every line. No markup: what it prints
    holds the user's text (a case id ``x[/y]``, a file ``cases[v2].yaml``), which rich
    read as tags: the table of a run whose case id held ``[/y]`` raised MarkupError
    before the results were written, and ``[v2]`` vanished. Styles are given as styles
    (``style=``, :class:`rich.text.Text`)."""
    console = _Console(stderr=stderr, markup=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = _Console(stderr=stderr, width=120, soft_wrap=True, markup=False)
    return console


out = _console()
err = _console(stderr=True)

EXIT_OK, EXIT_FAILED, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def print_problems(error: InputError) -> None:
    """One ``file:line:col: message`` per line, unwrapped, on stderr (with ``--verbose``,
    first the traceback of the exception that caused it)."""
    cause = error.__cause__ or error.__context__
    if cause is not None:
        LOG.debug("caused by:", exc_info=cause)
    print_notices(error.problems)


def print_notices(notices: Iterable[Problem]) -> None:
    """What an input that is valid should still tell its reader (a warning at
    ``file:line:col``), one unwrapped line each on stderr."""
    for notice in notices:
        typer.echo(str(notice), err=True)


def fail_input(error: InputError) -> NoReturn:
    print_problems(error)
    raise typer.Exit(EXIT_INPUT)


def signals_policy(value: str) -> SignalsPolicy:
    """The ``--signals`` value, checked: ``all``, ``failed`` or ``none``; else exit 2."""
    if value not in ("all", "failed", "none"):
        fail_input(InputError(f"--signals must be all, failed or none, got {value!r}"))
    return cast(SignalsPolicy, value)


def table_choice(value: str) -> Any:
    """The ``--table`` value, checked: ``auto``, ``all``, ``failed`` or ``none``; else exit 2."""
    from signal_eval_cli.reports.console import TABLE_CHOICES

    if value not in TABLE_CHOICES:
        fail_input(InputError(f"--table must be {', '.join(TABLE_CHOICES)}, got {value!r}"))
    return value


def positive_ms(value: float | None) -> float | None:
    """A timeout option: more than 0 ms (at 0 or less every case times out at once)."""
    if value is not None and value <= 0:
        raise typer.BadParameter(f"{value:g} ms: a timeout must be more than 0 ms")
    return value


def parse_params(items: list[str]) -> dict[str, Any]:
    """``key=value`` pairs; values are read as YAML scalars (``3`` → 3, ``true`` → True)."""
    params: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            fail_input(InputError(f"--param expects key=value, got {item!r}"))
        try:
            params[key] = yaml.safe_load(value) if value else ""
        except yaml.YAMLError:
            params[key] = value
    return params


class Progress:
    """A progress bar on a terminal; one plain line per case otherwise."""

    def __init__(self, total: int | None, *, quiet: bool) -> None:
        """``total``: ``None`` until :meth:`begin` (a run that reads its journal first)."""
        self.total, self.done, self.quiet = total, 0, quiet
        self.results: list[CaseResult] = []
        self.bar: Any = None
        if not quiet and err.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            self.bar = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=err,
                transient=True,
            )
            self.task = self.bar.add_task("running", total=total)

    def __enter__(self) -> Progress:
        if self.bar is not None and self.total is not None:
            self.bar.start()
        return self

    def begin(self, total: int) -> None:
        """The total, now known: the bar starts."""
        self.total = total
        if self.bar is not None:
            self.bar.update(self.task, total=total)
            self.bar.start()

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def __call__(self, result: CaseResult, *, label: str | None = None) -> None:
        """A finished case; ``label`` names what it ran under (a matrix's variant)."""
        self.results.append(result)
        status = "skip" if result.skipped else "pass" if result.passed else "FAIL"
        self.tick(f"{label} › {result.case_id}" if label else result.case_id, status)

    def tick(self, name: str, status: str) -> None:
        """One more thing finished: advance the bar, or print ``[i/n] name: status``."""
        self.done += 1
        if self.bar is not None:
            self.bar.advance(self.task)
        elif not self.quiet:
            err.print(f"[{self.done}/{self.total}] {name}: {status}", highlight=False)


def check_outputs(*paths: Path | None, inputs: Iterable[Path | str] = ()) -> None:
    """Refuse, before anything runs, an output path that cannot become a file or is one
    of the command's ``inputs`` (exit 2; :func:`signal_eval_cli.files.check_outputs`)."""
    try:
        files.check_outputs(*paths, inputs=map(Path, inputs))
    except InputError as exc:
        fail_input(exc)


STDOUT = Path("/dev/stdout")
"""What ``-`` names in an option that writes a file: the standard output."""


def file_path(value: str) -> Path:
    """A report option's file, as typed; ``-`` is the standard output (:data:`STDOUT`).
    One ending in ``/`` names a directory: exit 2 (``Path`` would drop the slash, and the
    report would become a file named after it)."""
    if value == "-":
        return STDOUT
    if value.endswith(("/", os.sep)):
        fail_input(InputError([Problem(value, 0, 0, "is a directory: give a file path in it")]))
    return Path(value)


def place_path(value: str) -> Path:
    """An option's folder, or file read as well as written (``--out-dir``,
    ``--case-into``): ``-`` cannot be the standard output there (exit 2), nor become a
    file or folder named ``-``."""
    if value == "-":
        raise typer.BadParameter("- (stdout) holds no folder or dataset: give a path")
    return Path(value)


@contextlib.contextmanager
def stdout_for_files(options: Mapping[str, Any]) -> Iterator[None]:
    """While a command writes one of its files to stdout (``-o -``, ``--junit
    /dev/stdout``), what it prints for people (tables, notes) goes to stderr, and so does
    what its harness prints: stdout holds the file alone, for a pipe (``| jq``). Two such
    files would be mixed there: exit 2. ``options``: each option's name and its value."""
    names = [n for n, v in options.items() if isinstance(v, Path) and files.is_stdout(v)]
    if len(names) > 1:
        given = ", ".join(names)
        fail_input(InputError(f"{given}: only one of them can write to stdout (-)"))
    was, out.stderr = out.stderr, out.stderr or bool(names)
    try:
        with files.stdout_for_files_only() if names else contextlib.nullcontext():
            yield
    finally:
        out.stderr = was


def file_option(*names: str, help: str) -> Any:
    """A ``typer.Option`` naming a file to write (see :func:`file_path`)."""
    return typer.Option(*names, parser=file_path, metavar="<path>", help=help)


QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")]
SignalsOpt = Annotated[str, typer.Option(help="Signals kept in results: all, failed or none.")]
TableOpt = Annotated[
    str,
    typer.Option(help="Cases in the table: auto (up to 50, failures first), all, failed or none."),
]
