"""What a report format is: :class:`Reporter` (see :mod:`.reporters` for the list of them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from signal_eval_cli.kinds import RESULT_KINDS as _KINDS
from signal_eval_cli.kinds import Result
from signal_eval_cli.results import SignalsPolicy

__all__ = ["RESULT_KINDS", "ReportContext", "Reporter"]

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
