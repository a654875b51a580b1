"""Report options from the list of reporters (:data:`~signal_eval_cli.reports.reporters.REPORTERS`).

A command says which result kinds it writes (``@report_options("dataset")``) and takes
``reports``: it gets one option per reporter that writes one of those kinds, and
``reports`` maps each reporter's name to the file given (or ``None``). So a reporter
added to the list is an option of every command its results fit, with nothing to edit
here or in the commands.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from signal_eval_cli.cli.common import err, fail_input, file_path
from signal_eval_cli.errors import InputError
from signal_eval_cli.reports.reporters import REPORTERS, Reporter, write_reports
from signal_eval_cli.results import SignalsPolicy

__all__ = ["ReportPaths", "report_options", "write_command_reports"]

ReportPaths = dict[str, Path | None]
_F = TypeVar("_F", bound=Callable[..., Any])
_BEFORE = ("signals", "verbose")
"""The report options go before the first of these (``--signals`` is about them)."""


def _parser(reporter: Reporter, required: bool) -> Callable[[str], Path | None]:
    """An empty value (``--markdown "$GITHUB_STEP_SUMMARY"`` outside GitHub) means no
    report, said on stderr (exit 2 if the report is required); a value ending in ``/``
    is refused (:func:`file_path`)."""

    def parse(value: str) -> Path | None:
        option = reporter.options[0]
        if not value and required:
            fail_input(InputError(f"{option} is empty: give the file to write"))
        if not value:
            why = "an unset variable, e.g. $GITHUB_STEP_SUMMARY outside GitHub?"
            err.print(f"note: {option} is empty ({why}): no {reporter.noun}", highlight=False)
            return None
        return file_path(value)

    return parse


def _option(reporter: Reporter, required: bool) -> Any:
    option = typer.Option(
        *reporter.options, parser=_parser(reporter, required), metavar="<path>", help=reporter.help
    )
    return Annotated[Path if required else Path | None, option]


def report_options(*kinds: str, required: tuple[str, ...] = ()) -> Callable[[_F], _F]:
    """Give the command one option per reporter taking any of ``kinds`` (``required``:
    reporter names whose option must be given)."""

    def decorate(command: _F) -> _F:
        offered = [r for r in REPORTERS if r.kinds & set(kinds)]
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "reports"]
        at = next((i for i, p in enumerate(own) if p.name in _BEFORE), len(own))
        added = [
            inspect.Parameter(
                r.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if r.name in required else None,
                annotation=_option(r, r.name in required),
            )
            for r in offered
        ]
        after = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own[at:]]
        parameters = [*own[:at], *added, *after]

        @functools.wraps(command)
        def with_reports(*args: Any, **kwargs: Any) -> Any:
            paths: ReportPaths = {r.name: kwargs.pop(r.name, None) for r in offered}
            return command(*args, reports=paths, **kwargs)

        with_reports.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        with_reports.__annotations__ = {
            p.name: p.annotation for p in parameters
        }  # what Typer reads
        return with_reports  # type: ignore[return-value]

    return decorate


def write_command_reports(
    result: Any,
    reports: Mapping[str, Path | None],
    *,
    signals: SignalsPolicy,
    sides: tuple[Any, Any] | None = None,
) -> None:
    """The library's :func:`write_reports`, saying what it wrote; a bad path is exit 2."""

    def written(reporter: Reporter, path: Path) -> None:
        err.print(f"{reporter.noun} written to {path}", highlight=False, soft_wrap=True)

    try:
        write_reports(result, reports, signals=signals, sides=sides, on_written=written)
    except InputError as exc:
        fail_input(exc)
