"""What a report format is: :class:`Reporter` (see :mod:`.reporters` for the list of them),
and how a report picks its rendering by the result's kind (:func:`renderer`)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from signal_eval_cli.kinds import RESULT_KINDS as _KINDS
from signal_eval_cli.kinds import Result, kind_of
from signal_eval_cli.results import SignalsPolicy

__all__ = [
    "RESULT_KINDS",
    "LazyReporter",
    "ReportContext",
    "ReportOptions",
    "Reporter",
    "renderer",
]

RESULT_KINDS = frozenset(_KINDS)
"""Every kind of result the package makes (:data:`signal_eval_cli.kinds.RESULT_KINDS`)."""


@dataclass(frozen=True, slots=True)
class ReportContext:
    """What a report may need besides the result and its own path."""

    signals: SignalsPolicy = "failed"
    """Signals kept in the file (JSON, HTML)."""
    sides: tuple[Any, Any] | None = None
    """A comparison's baseline and candidate results: the HTML page shows both timelines."""
    paths: Mapping[str, Path] = field(default_factory=dict)
    """Every report written with this one, by reporter name (Markdown links the HTML)."""


@dataclass(frozen=True, slots=True)
class ReportOptions:
    """What the Markdown and JSON reports keep (the command line uses the defaults)."""

    include_signals: bool = False
    """Add each detailed case's signal trace (when the result kept it)."""
    include_passing_details: bool = False
    """Detail passing cases' assertions too, not only failures."""
    max_cases_in_detail: int = 10
    """Cases given a detail section; the rest are counted, not shown."""
    html_link: str | None = None
    """The HTML report written beside this one (``--html``): linked at the top."""


class Reporter(Protocol):
    """One report format."""

    name: str
    """Its key in :func:`write_reports`' ``paths`` (and the command's parameter name)."""
    options: tuple[str, ...]
    """The command-line option naming its file (``("--output", "-o")``)."""
    help: str
    kinds: frozenset[str]
    """The result kinds it writes (of :data:`RESULT_KINDS`)."""
    appends: bool
    """Several datasets of one ``run`` may share its file (each appends its part)."""
    noun: str
    """What it writes, in messages: ``"<noun> written to <path>"``."""

    def write(self, result: Result, path: Path, context: ReportContext) -> None: ...


@dataclass
class LazyReporter:
    """A :class:`Reporter` whose ``write`` is named, not imported: ``writer`` is a
    ``"module:function"`` string imported when the first report of this format is written,
    so a command imports the modules of the formats it writes, no others."""

    name: str
    options: tuple[str, ...]
    help: str
    kinds: frozenset[str]
    appends: bool
    noun: str
    writer: str
    """``"module:function"``; the function takes ``(result, path, context)``."""

    def write(self, result: Result, path: Path, context: ReportContext) -> None:
        module, _, function = self.writer.partition(":")
        write: Callable[[Result, Path, ReportContext], None] = getattr(
            importlib.import_module(module), function
        )
        write(result, path, context)


_Render = TypeVar("_Render")


def renderer(renders: Mapping[str, _Render], result: object, report: str) -> _Render:
    """The entry of ``renders`` (result kind → how a report draws it) for ``result``; a
    kind the report has no entry for is a ``TypeError`` naming the kind and the report."""
    kind = kind_of(result)
    try:
        return renders[kind]
    except KeyError:
        known = ", ".join(renders)
        raise TypeError(f"no {report} for a {kind} result (it renders: {known})") from None
