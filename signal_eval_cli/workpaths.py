"""Paths a scenario's files name, kept inside their directory.

Neutral ground for the scenario runner (its agentTask, its workspace) and the file
assertions (``file-exists``, ``file-contains``, ``diff-match``), which both read them:
neither has to import the other. A path is checked by its text first (no ``..``,
nothing absolute on any system), then with symlinks resolved, before anything is read
or written. Where a scenario's paths resolve (:func:`project_root`, :func:`fixture_dir`)
is here too: the runner reads the fixture there, and a run's fingerprint hashes it.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from signal_eval_cli.errors import EvalError
from signal_eval_cli.files import not_a_file

if TYPE_CHECKING:
    from signal_eval_cli.scenarios.model import Scenario

__all__ = [
    "AgentTaskError",
    "PathEscapeError",
    "check_relative_path",
    "fixture_dir",
    "is_absolute_text",
    "project_root",
    "read_text",
    "resolve_inside",
]

_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:|[\\/]{2})")


class AgentTaskError(EvalError, ValueError):
    """An agentTask that cannot be applied; nothing was written."""


class PathEscapeError(AgentTaskError):
    """A path that would leave its directory (``..``, absolute, or through a symlink)."""


def is_absolute_text(path: str) -> bool:
    """Whether ``path`` is absolute on any system (``/x``, ``\\x``, ``C:``, ``//host``),
    by its text alone: a scenario file must mean the same everywhere."""
    return path.startswith(("/", "\\")) or _WINDOWS_ABSOLUTE.match(path) is not None


def check_relative_path(path: str) -> None:
    """Reject what is not a plain relative file path, by its text alone."""
    if not path:
        raise PathEscapeError("empty path")
    if "\0" in path:
        raise PathEscapeError(f"path {path!r} contains a NUL byte")
    if is_absolute_text(path):
        raise PathEscapeError(f"path {path!r} is absolute; give a path relative to the workspace")
    parts = re.split(r"[\\/]", path)
    if ".." in parts:
        raise PathEscapeError(f"path {path!r} contains '..', which could leave the workspace")
    if all(part in ("", ".") for part in parts):
        raise PathEscapeError(f"path {path!r} names the workspace itself, not a file")


def resolve_inside(base: Path, path: str) -> Path:
    """``base/path`` with symlinks resolved, or :class:`PathEscapeError` if it leaves ``base``."""
    check_relative_path(path)
    root = Path(os.path.realpath(base))
    target = Path(os.path.realpath(root / path))
    if target == root or not target.is_relative_to(root):
        link = _first_symlink(root, path)
        via = f" through the symlink '{link}'" if link else ""
        raise PathEscapeError(f"path {path!r} leads outside {root}{via} (to {target})")
    return target


def _first_symlink(root: Path, path: str) -> str | None:
    current = root
    for part in PurePosixPath(path.replace("\\", "/")).parts:
        current = current / part
        if current.is_symlink():
            return current.relative_to(root).as_posix()
    return None


def read_text(path: Path) -> str | None:
    """File contents as text (undecodable bytes replaced), or None when there is no file
    (or a directory); :class:`OSError` for a named pipe, a socket or a device."""
    kind = not_a_file(path)
    if kind is not None and kind != "a directory":
        raise OSError(errno.EINVAL, f"{kind}, not a file", str(path))
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def project_root(scenario: Scenario, root: Path | str | None = None) -> Path:
    """Where a scenario's relative paths resolve: its fixture and ``scope: repo`` files.

    ``root`` when given (``--root``, the repo-scoped case). Else, whatever the current
    directory, the scenario file's directory or the nearest parent of it that holds the
    fixture: ``fixtures/x`` works for a file in ``scenarios/`` beside ``fixtures/``, and
    so does ``../fixtures/x``. A scenario built in code (no file) uses the current one.
    """
    if root is not None:
        return Path(root).resolve()
    start = scenario.directory
    if scenario.source is None:
        return start
    return next(
        (base for base in (start, *start.parents) if (base / scenario.fixture.path).is_dir()),
        start,
    )


def fixture_dir(scenario: Scenario, root: Path | str | None = None) -> Path:
    """The fixture directory: ``fixture.path`` under :func:`project_root` (or absolute)."""
    return project_root(scenario, root) / scenario.fixture.path
