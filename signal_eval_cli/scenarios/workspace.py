"""The scenario's working directory: a temp copy of the fixture, baselines, the agent's edit.

The original fixture is never written to when it is copied. Every path an agentTask or
an assertion names is checked to stay inside its directory — no ``..``, nothing
absolute, and no symlink inside the fixture leading out of it — *before* anything is
written, so a rejected task leaves no trace anywhere.

agentTask commands::

    WRITE|<relativePath>|<contents>
    PATCH|<unified diff>          (git diff / git format-patch / diff -u; several files)
    DELETE|<relativePath>
    RENAME|<fromPath>|<toPath>

The contents of WRITE (and the diff of PATCH) are everything after the verb's fields
up to the end of the command, so they may hold ``|`` and newlines — and a line starting
with ``WRITE|`` inside them is content, never a second command. To make several edits,
give ``instruction`` as a list, one command per item. All commands are planned in
memory first (each sees the previous ones' results); only when every one of them
applies is anything written, and a write that fails midway is rolled back.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from signal_eval_cli.errors import closest
from signal_eval_cli.files import not_a_file
from signal_eval_cli.process_scope import owner_gone, owner_tag
from signal_eval_cli.scenarios.overlay import can_overlay, mount_overlay, unmount
from signal_eval_cli.scenarios.patching import FilePatch, PatchError, apply_file_patch, parse_patch
from signal_eval_cli.workpaths import (
    AgentTaskError,
    PathEscapeError,
    check_relative_path,
    is_absolute_text,
    read_text,
    resolve_inside,
)

__all__ = [
    "VERBS",
    "AgentTaskError",
    "DeleteOp",
    "PatchOp",
    "PathEscapeError",
    "RenameOp",
    "TaskOp",
    "Workspace",
    "WriteOp",
    "apply_agent_task",
    "check_relative_path",
    "copy_strategy",
    "is_absolute_text",
    "parse_agent_task",
    "prepare_workspace",
    "prepare_workspace_in_thread",
    "read_text",
    "resolve_inside",
]

_USAGE = {
    "WRITE": "WRITE|<relativePath>|<contents>",
    "PATCH": "PATCH|<unified diff>",
    "DELETE": "DELETE|<relativePath>",
    "RENAME": "RENAME|<fromPath>|<toPath>",
}
VERBS = tuple(_USAGE)


@dataclass(frozen=True, slots=True)
class WriteOp:
    path: str
    contents: str


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str


@dataclass(frozen=True, slots=True)
class RenameOp:
    source: str
    target: str


@dataclass(frozen=True, slots=True)
class PatchOp:
    text: str
    files: tuple[FilePatch, ...] = field(compare=False, repr=False, default=())


TaskOp = WriteOp | DeleteOp | RenameOp | PatchOp


def parse_agent_task(instruction: str | Sequence[str]) -> list[TaskOp]:
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


def _fields(verb: str, rest: str, count: int) -> list[str]:
    """``count`` '|'-separated fields, the last running to the end of the command."""
    fields = rest.split("|", count - 1)
    if len(fields) < count:
        raise AgentTaskError(
            f"{verb} needs '{_USAGE[verb]}': {len(fields)} field(s) in {rest[:60]!r}"
        )
    return fields


def _parse_command(command: str) -> TaskOp:
    verb, sep, rest = command.partition("|")
    verb = verb.strip()
    if not sep:
        preview = command.strip().split("\n", 1)[0][:60]
        raise AgentTaskError(
            f"not an agentTask command: {preview!r} (expected one of: {', '.join(_USAGE.values())})"
        )
    if verb not in VERBS:
        guess = closest(verb, list(VERBS))
        hint = f" — did you mean '{guess}'?" if guess else ""
        raise AgentTaskError(f"unknown agentTask verb {verb!r}{hint} (known: {', '.join(VERBS)})")
    if verb == "PATCH":
        try:
            files = tuple(parse_patch(rest))
        except PatchError as exc:
            raise AgentTaskError(f"PATCH: {exc}") from None
        for patch in files:
            for path in (patch.source, patch.target):
                if path is not None:
                    check_relative_path(path)
        return PatchOp(rest, files)
    if verb == "DELETE":
        path = rest.rstrip("\n")
        if "|" in path:
            raise AgentTaskError(f"DELETE needs '{_USAGE[verb]}': too many fields")
        check_relative_path(path)
        return DeleteOp(path)
    if verb == "RENAME":
        source, target = (p.rstrip("\n") for p in _fields(verb, rest, 2))
        if "|" in target:
            raise AgentTaskError(f"RENAME needs '{_USAGE[verb]}': too many fields")
        check_relative_path(source)
        check_relative_path(target)
        return RenameOp(source, target)
    if "|" not in rest:
        raise AgentTaskError(f"WRITE needs '{_USAGE[verb]}': no '|' after the path {rest[:60]!r}")
    path, contents = _fields(verb, rest, 2)
    check_relative_path(path)
    return WriteOp(path, contents)


@dataclass(slots=True)
class _Change:
    contents: bytes | None
    """None: the file is deleted."""
    mode: int | None = None


class _Plan:
    """The workspace as the commands so far left it, in memory; disk is read, never written."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.changes: dict[Path, _Change] = {}
        self.names: dict[Path, str] = {}

    def target(self, path: str) -> Path:
        resolved = resolve_inside(self.root, path)
        self.names.setdefault(resolved, path)
        return resolved

    def read(self, target: Path) -> bytes | None:
        if target in self.changes:
            return self.changes[target].contents
        if kind := not_a_file(target):  # a directory; a named pipe would block the read
            raise AgentTaskError(f"'{self.names[target]}' is {kind}, not a file")
        return self.read_disk(target)

    def mode(self, target: Path) -> int | None:
        change = self.changes.get(target)
        return change.mode if change is not None else self.mode_disk(target)

    @staticmethod
    def read_disk(target: Path) -> bytes | None:
        try:
            return target.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None

    @staticmethod
    def mode_disk(target: Path) -> int | None:
        try:
            return stat.S_IMODE(target.stat().st_mode)
        except OSError:
            return None

    def existing(self, verb: str, path: str) -> tuple[Path, bytes]:
        target = self.target(path)
        contents = self.read(target)
        if contents is None:
            raise AgentTaskError(f"cannot {verb} {path!r}: no such file")
        return target, contents

    def absent(self, verb: str, path: str) -> Path:
        target = self.target(path)
        if self.read(target) is not None:
            raise AgentTaskError(f"cannot {verb} {path!r}: the file already exists")
        return target

    def set(self, target: Path, contents: bytes | None, mode: int | None = None) -> None:
        self.changes[target] = _Change(contents, mode)


def _plan_op(plan: _Plan, op: TaskOp) -> None:
    if isinstance(op, WriteOp):
        target = plan.target(op.path)
        plan.read(target)  # a directory is refused
        plan.set(target, op.contents.encode("utf-8"), plan.mode(target))
    elif isinstance(op, DeleteOp):
        target, _ = plan.existing("DELETE", op.path)
        plan.set(target, None)
    elif isinstance(op, RenameOp):
        source, contents = plan.existing("RENAME", op.source)
        target = plan.absent("RENAME", op.target)
        mode = plan.mode(source)
        plan.set(source, None)
        plan.set(target, contents, mode)
    else:
        for patch in op.files:
            _plan_patch(plan, patch)


def _plan_patch(plan: _Plan, patch: FilePatch) -> None:
    if patch.source is None:
        assert patch.target is not None
        source, old, mode = None, None, None
    else:
        source, old = plan.existing("PATCH", patch.source)
        mode = plan.mode(source)
    try:
        new = apply_file_patch(patch, old)
    except PatchError as exc:
        raise AgentTaskError(f"PATCH: {exc}") from None
    if patch.target is not None and patch.target != patch.source:
        target = plan.absent(
            "PATCH (new file)" if source is None else "PATCH (rename)", patch.target
        )
    else:
        target = source if source is not None else plan.target(patch.source or "")
    if source is not None and source != target:
        plan.set(source, None)
    plan.set(target, new, patch.mode if patch.mode is not None else mode)


def _check_layout(plan: _Plan) -> None:
    """Refuse a file where a directory is (or will be), and the reverse, before writing."""
    root = plan.root
    files = {t for t, c in plan.changes.items() if c.contents is not None}
    planned_dirs: set[Path] = set()
    for target in files:
        name = plan.names.get(target, str(target))
        for parent in target.relative_to(root).parents:
            directory = root / parent
            if directory in plan.changes and plan.changes[directory].contents is not None:
                raise AgentTaskError(f"cannot write both a file and a directory at {directory}")
            if directory.exists() and not directory.is_dir() and directory not in plan.changes:
                raise AgentTaskError(
                    f"cannot write {name!r}: '{parent.as_posix()}' is a file, not a directory"
                )
            planned_dirs.add(directory)
    if clash := files & planned_dirs:
        raise AgentTaskError(f"cannot write both a file and a directory at {sorted(clash)[0]}")


def _write(target: Path, change: _Change) -> None:
    if change.contents is None:
        target.unlink(missing_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(change.contents)
    if change.mode is not None:
        target.chmod(change.mode)


def _prune_empty_dirs(root: Path, deleted: Sequence[Path]) -> None:
    """Remove directories a deletion left empty, as ``git apply`` does."""
    for target in deleted:
        for parent in target.parents:
            if parent == root or not parent.is_relative_to(root):
                break
            try:
                parent.rmdir()
            except OSError:
                break


def _link_count(path: Path) -> int:
    try:
        return os.lstat(path).st_nlink
    except OSError:  # not there yet: a new file has one name
        return 1


def _check_links(plan: _Plan) -> None:
    """Refuse to write through a hard-linked file: in place (``copyToTemp: false``) its
    other name may be a file outside the workspace, which the write would change too."""
    for target, change in plan.changes.items():
        links = _link_count(target)
        if change.contents is not None and links > 1:
            name = plan.names.get(target, str(target))
            raise AgentTaskError(
                f"cannot write {name!r}: the file has {links} hard links, and writing "
                "through it would change every one of them"
            )


def apply_agent_task(ops: Sequence[TaskOp], workspace: Path) -> list[str]:
    """Apply every op inside ``workspace``: all planned first, so a bad one writes nothing.

    Returns the relative paths changed (written, created or deleted), in order.
    """
    root = Path(os.path.realpath(workspace))
    plan = _Plan(root)
    for op in ops:
        _plan_op(plan, op)
    _check_layout(plan)
    _check_links(plan)
    originals = {t: (plan.read_disk(t), plan.mode_disk(t)) for t in plan.changes}
    deleted = [t for t, c in plan.changes.items() if c.contents is None]
    order = [*deleted, *(t for t in plan.changes if t not in deleted)]
    done: list[Path] = []
    try:
        for target in order:  # deletions first: a deleted file's name may become a directory
            done.append(target)
            _write(target, plan.changes[target])
            if deleted and target is deleted[-1]:
                _prune_empty_dirs(root, deleted)
    except OSError:
        for target in reversed(done):  # put back what was there before
            contents, mode = originals[target]
            _write(target, _Change(contents, mode))
        raise
    return [t.relative_to(root).as_posix() for t in plan.changes]


@dataclass(slots=True)
class Workspace:
    """Where goals run and the agentTask writes; ``temp_dir`` is what cleanup removes."""

    path: Path
    fixture: Path
    copied: bool
    """A workspace apart from the fixture (a copy or an overlay): the fixture is safe."""
    temp_dir: Path | None = None
    strategy: str = "copy"
    """``overlay``, ``reflink`` or ``copy`` (``in-place`` when not copied)."""

    @property
    def private_dirs(self) -> tuple[Path, ...]:
        """Directories next to the workspace that are its own (an overlay's layers)."""
        if self.temp_dir is None or self.strategy != "overlay":
            return ()
        return (self.temp_dir / ".upper", self.temp_dir / ".work")

    def cleanup(self) -> None:
        if self.temp_dir is not None:
            if self.strategy == "overlay":
                unmount(self.path)
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            self.temp_dir = None


_FICLONE = 0x40049409  # linux/fs.h: share the source's extents (copy-on-write)


def copy_strategy(fixture: Path) -> str:
    """``reflink`` when the temp dir's file system can clone the fixture's files (btrfs,
    XFS, ZFS 2.2+, APFS via cp -c is not used), else ``copy``. Probed by cloning one
    fixture file into a temp file: nothing is ever written into the fixture."""
    sample = next((p for p in fixture.rglob("*") if p.is_file() and not p.is_symlink()), None)
    if sample is None or not hasattr(os, "O_RDONLY"):
        return "copy"
    import fcntl

    with tempfile.NamedTemporaryFile(prefix="signal-eval-probe-") as probe:
        try:
            with sample.open("rb") as source:
                fcntl.ioctl(probe.fileno(), _FICLONE, source.fileno())
        except OSError:
            return "copy"
    return "reflink"


_CP = shutil.which("cp") if sys.platform.startswith("linux") else None


def _copy_tree(fixture: Path, destination: Path) -> None:
    """A full, independent copy: GNU ``cp -a --reflink=auto`` (shares blocks copy-on-write
    where the file system can, else copies in the kernel), or shutil's copy."""
    if _CP is not None:
        done = subprocess.run(
            [_CP, "-a", "--reflink=auto", "--", f"{fixture}/.", str(destination)],
            capture_output=True,
            check=False,
        )
        if done.returncode == 0:
            return
        shutil.rmtree(destination, ignore_errors=True)  # not GNU cp: do it ourselves
    shutil.copytree(fixture, destination, symlinks=True, copy_function=_copy_entry)


def _copy_entry(source: str, destination: str) -> str:
    """One file of :func:`_copy_tree`'s shutil copy; a named pipe (a socket, a device) is
    made anew, as ``cp -a`` does: copying its contents would wait for a writer for ever."""
    st = os.lstat(source)
    if stat.S_ISREG(st.st_mode):
        return str(shutil.copy2(source, destination))
    os.mknod(destination, st.st_mode, st.st_rdev)
    return destination


def prepare_workspace(
    fixture: Path, *, copy: bool = True, label: str = "scenario", overlay: bool = True
) -> Workspace:
    """A fresh workspace of ``fixture`` in a temp directory (or the fixture itself).

    Never hard links or a shared tree: a coding agent or a goal writing a file in place
    must not reach the fixture or another workspace. An overlay mount when this
    process may mount (``overlay=False`` for a workspace that outlives the run), else a
    full copy, sharing data blocks copy-on-write where the file system has reflinks.
    """
    if not fixture.is_dir():
        raise FileNotFoundError(f"fixture directory not found: {fixture}")
    if not copy:
        return Workspace(fixture.resolve(), fixture, copied=False, strategy="in-place")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", label)[:40]
    _remove_dead_runs_workspaces_once()
    temp_dir = Path(tempfile.mkdtemp(prefix=f"signal-eval-{safe}-{owner_tag()}-"))
    try:
        destination = temp_dir / (fixture.resolve().name or "fixture")
        if overlay and can_overlay(fixture.resolve()):
            layers = [temp_dir / ".upper", temp_dir / ".work", destination]
            for layer in layers:
                layer.mkdir()
            if mount_overlay(fixture.resolve(), *layers):
                return Workspace(
                    destination, fixture, copied=True, temp_dir=temp_dir, strategy="overlay"
                )
            for layer in layers:
                shutil.rmtree(layer)
        _copy_tree(fixture, destination)
    except BaseException:
        shutil.rmtree(temp_dir, ignore_errors=True)
        raise
    return Workspace(destination, fixture, copied=True, temp_dir=temp_dir)


_WORKSPACE_OWNER = re.compile(r"signal-eval-.*-(p\d+t\d+n\d+)-[^-]+")


@functools.cache
def _remove_dead_runs_workspaces_once() -> None:
    remove_dead_runs_workspaces(Path(tempfile.gettempdir()))


def remove_dead_runs_workspaces(temp: Path) -> list[Path]:
    """Remove the workspaces in ``temp`` whose run is gone without removing them (a
    ``kill -9``): their directory names their owner (:func:`.owner_tag`). An overlay
    still mounted is unmounted first; one that will not unmount is left. Returns them."""
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(temp):
            found = _WORKSPACE_OWNER.fullmatch(entry.name)
            if found is None or not owner_gone(found[1]) or not entry.is_dir(follow_symlinks=False):
                continue
            mounts = [Path(e.path) for e in os.scandir(entry.path) if os.path.ismount(e.path)]
            if all(unmount(m) for m in mounts):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(Path(entry.path))
    return removed


async def prepare_workspace_in_thread(fixture: Path, **options: Any) -> Workspace:
    """:func:`prepare_workspace` in a thread. Cancelled while it copies (Ctrl-C, SIGTERM),
    the workspace the thread still makes is removed, not left in the temp dir: whichever
    of the thread and the cancelled task comes second cleans it up."""
    lock = threading.Lock()
    made: list[Workspace] = []
    abandoned = False

    def prepare() -> Workspace:
        workspace = prepare_workspace(fixture, **options)
        with lock:
            made.append(workspace)
            if not abandoned:
                return workspace
        workspace.cleanup()
        return workspace

    try:
        return await asyncio.to_thread(prepare)
    except asyncio.CancelledError:
        with lock:
            abandoned = True
            finished = list(made)
        for workspace in finished:
            workspace.cleanup()
        raise
