"""The scenario's working directory: a temp copy of the fixture, baselines, the agent's edit.

The original fixture is never written to when it is copied. Every path an agentTask or
an assertion names is checked to stay inside its directory — no ``..``, nothing
absolute, and no symlink inside the fixture leading out of it — *before* anything is
written, so a rejected task leaves no trace anywhere.

agentTask commands (seed 000, phase 1)::

    WRITE|<relativePath>|<contents>

The contents are everything after the second ``|`` up to the end of the command, so
they may hold ``|`` and newlines — and a line starting with ``WRITE|`` inside them is
content, never a second command. To make several edits, give ``instruction`` as a list,
one command per item. Parent directories are created; files are written as UTF-8,
byte for byte.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from signal_eval_cli.errors import closest

__all__ = [
    "VERBS",
    "AgentTaskError",
    "PathEscapeError",
    "Workspace",
    "WriteOp",
    "apply_agent_task",
    "check_relative_path",
    "parse_agent_task",
    "prepare_workspace",
    "read_text",
    "resolve_inside",
]

VERBS = ("WRITE",)
_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:|[\\/]{2})")


class AgentTaskError(ValueError):
    """An agentTask that cannot be applied; nothing was written."""


class PathEscapeError(AgentTaskError):
    """A path that would leave its directory (``..``, absolute, or through a symlink)."""


@dataclass(frozen=True, slots=True)
class WriteOp:
    path: str
    contents: str


def check_relative_path(path: str) -> None:
    """Reject what is not a plain relative file path, by its text alone."""
    if not path:
        raise PathEscapeError("empty path")
    if "\0" in path:
        raise PathEscapeError(f"path {path!r} contains a NUL byte")
    if path.startswith(("/", "\\")) or _WINDOWS_ABSOLUTE.match(path):
        raise PathEscapeError(f"path {path!r} is absolute; give a path relative to the workspace")
    parts = re.split(r"[\\/]", path)
    if ".." in parts:
        raise PathEscapeError(f"path {path!r} contains '..', which could leave the workspace")
    if all(part in ("", ".") for part in parts):
        raise PathEscapeError(f"path {path!r} names the workspace itself, not a file")


def parse_agent_task(instruction: str | Sequence[str]) -> list[WriteOp]:
    """Parse (not apply) the commands; raises :class:`AgentTaskError`."""
    commands = [instruction] if isinstance(instruction, str) else list(instruction)
    ops = []
    for number, command in enumerate(commands, 1):
        try:
            ops.append(_parse_command(command))
        except AgentTaskError as exc:
            if len(commands) == 1:
                raise
            raise type(exc)(f"command {number}: {exc}") from None
    return ops


def _parse_command(command: str) -> WriteOp:
    verb, sep, rest = command.partition("|")
    verb = verb.strip()
    if not sep:
        preview = command.strip().split("\n", 1)[0][:60]
        raise AgentTaskError(
            f"not an agentTask command: {preview!r} (expected 'WRITE|<relativePath>|<contents>')"
        )
    if verb not in VERBS:
        guess = closest(verb, list(VERBS))
        hint = f" — did you mean '{guess}'?" if guess else ""
        raise AgentTaskError(f"unknown agentTask verb {verb!r}{hint} (known: {', '.join(VERBS)})")
    path, sep, contents = rest.partition("|")
    if not sep:
        raise AgentTaskError(
            f"WRITE needs 'WRITE|<relativePath>|<contents>': no '|' after the path {path[:60]!r}"
        )
    check_relative_path(path)
    return WriteOp(path, contents)


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
    """File contents as text (undecodable bytes replaced), or None when there is no file."""
    try:
        return path.read_bytes().decode("utf-8", errors="replace")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def _link_count(path: Path) -> int:
    try:
        return os.lstat(path).st_nlink
    except OSError:  # not there yet: a new file has one name
        return 1


def apply_agent_task(ops: Sequence[WriteOp], workspace: Path) -> list[str]:
    """Write every op inside ``workspace``; check them all first so a bad one writes nothing."""
    targets = [(resolve_inside(workspace, op.path), op) for op in ops]
    root = Path(os.path.realpath(workspace))
    planned_dirs: set[Path] = set()
    for target, op in targets:
        if target.is_dir() or target in planned_dirs:
            raise AgentTaskError(f"cannot WRITE {op.path!r}: it is a directory")
        for parent in target.relative_to(root).parents:
            directory = root / parent
            if directory.exists() and not directory.is_dir():
                raise AgentTaskError(
                    f"cannot WRITE {op.path!r}: '{parent.as_posix()}' is a file, not a directory"
                )
            planned_dirs.add(directory)
    for target, op in targets:
        links = _link_count(target)
        if links > 1:  # writing would change the other names too (a file outside, maybe)
            raise AgentTaskError(
                f"cannot WRITE {op.path!r}: the file has {links} hard links, and writing "
                "through it would change every one of them"
            )
    planned_files = {target for target, _ in targets}
    if clash := planned_files & planned_dirs:
        raise AgentTaskError(f"cannot WRITE both a file and a directory at {sorted(clash)[0]}")
    for target, op in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(op.contents.encode("utf-8"))
    return [op.path for op in ops]


@dataclass(slots=True)
class Workspace:
    """Where goals run and the agentTask writes; ``temp_dir`` is what cleanup removes."""

    path: Path
    fixture: Path
    copied: bool
    temp_dir: Path | None = None

    def cleanup(self) -> None:
        if self.temp_dir is not None:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            self.temp_dir = None


def prepare_workspace(fixture: Path, *, copy: bool = True, label: str = "scenario") -> Workspace:
    """Copy ``fixture`` into a fresh temp directory (symlinks kept as symlinks), or use it."""
    if not fixture.is_dir():
        raise FileNotFoundError(f"fixture directory not found: {fixture}")
    if not copy:
        return Workspace(fixture.resolve(), fixture, copied=False)
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", label)[:40]
    temp_dir = Path(tempfile.mkdtemp(prefix=f"signal-eval-{safe}-"))
    try:
        destination = temp_dir / (fixture.resolve().name or "fixture")
        shutil.copytree(fixture, destination, symlinks=True)
    except BaseException:
        shutil.rmtree(temp_dir, ignore_errors=True)
        raise
    return Workspace(destination, fixture, copied=True, temp_dir=temp_dir)
