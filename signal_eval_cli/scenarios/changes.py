"""What an agent changed in its workspace: the whole-tree diff and the escapes.

The baseline is the fixture itself (a copied workspace starts identical to it and the
fixture is never written). Files whose size, mtime and mode are unchanged are taken as
unchanged without reading them — a copy keeps mtimes, as git's index uses stat data.
The diff is what ``git add -A && git diff --cached --no-renames`` prints: ``diff --git``
headers, mode lines, ``index`` lines with 7-character blob ids, then the hunks.

An agent that runs as a command could write outside its workspace. What it leaves
behind is checked afterwards: a changed entry that is a symlink leading out of the
workspace, a file with another hard link, any change to the fixture or next to the
workspace (its temp parent), and any file or symlink created directly in the current
directory or the user's home are escapes, and fail the scenario. Home and the current directory are
watched for new entries at their top level only: files there change for other reasons
during a run (shell history, this run's own journal), and a whole home is too big to
walk per scenario.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from signal_eval_cli.diffing import quote_path, unified_diff

__all__ = [
    "FileState",
    "TreeSnapshot",
    "WorkspaceChange",
    "changed_files",
    "entries",
    "find_escapes",
    "snapshot",
    "workspace_diff",
]

_SKIP_DIRS = {".git"}
_ABBREV = 7


@dataclass(frozen=True, slots=True)
class FileState:
    size: int
    mtime_ns: int
    mode: int
    """git's mode: 0o100644, 0o100755 or 0o120000 (symlink)."""
    inode: int


TreeSnapshot = dict[str, FileState]


def _git_mode(st: os.stat_result) -> int:
    if stat.S_ISLNK(st.st_mode):
        return 0o120000
    return 0o100755 if st.st_mode & 0o100 else 0o100644


def _walk(root: Path, exclude: Collection[Path] = ()) -> Iterator[tuple[str, os.stat_result]]:
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in _SKIP_DIRS
            and not os.path.islink(os.path.join(directory, d))
            and Path(directory, d) not in exclude
        )
        links = [d for d in os.listdir(directory) if os.path.islink(os.path.join(directory, d))]
        for name in sorted({*files, *links}):
            path = os.path.join(directory, name)
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                yield os.path.relpath(path, root).replace(os.sep, "/"), st


def snapshot(root: Path, exclude: Collection[Path] = ()) -> TreeSnapshot:
    """Every file and symlink under ``root`` (``.git`` and ``exclude`` left out), by stat
    data only."""
    return {
        rel: FileState(st.st_size, st.st_mtime_ns, _git_mode(st), st.st_ino)
        for rel, st in _walk(root, exclude)
    }


def _content(root: Path, rel: str, state: FileState | None) -> bytes | None:
    if state is None:
        return None
    path = root / rel
    if state.mode == 0o120000:
        return os.fsencode(os.readlink(path))
    return path.read_bytes()


@dataclass(frozen=True, slots=True)
class WorkspaceChange:
    path: str
    old: bytes | None
    new: bytes | None
    old_mode: int | None
    new_mode: int | None


def changed_files(base: Path, workspace: Path) -> list[WorkspaceChange]:
    """Every file added, deleted or changed (content or mode) in ``workspace`` vs ``base``."""
    before, after = snapshot(base), snapshot(workspace)
    changes = []
    for rel in sorted(before.keys() | after.keys()):
        a, b = before.get(rel), after.get(rel)
        if (
            a is not None
            and b is not None
            and (a.size, a.mtime_ns, a.mode)
            == (
                b.size,
                b.mtime_ns,
                b.mode,
            )
        ):
            continue
        old, new = _content(base, rel, a), _content(workspace, rel, b)
        old_mode, new_mode = (a.mode if a else None), (b.mode if b else None)
        if old == new and old_mode == new_mode:
            continue
        changes.append(WorkspaceChange(rel, old, new, old_mode, new_mode))
    return changes


def _blob_id(data: bytes | None) -> str:
    if data is None:
        return "0" * _ABBREV
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()[:_ABBREV]


def _file_diff(change: WorkspaceChange) -> str:
    path = change.path
    lines = [f"diff --git {quote_path('a/', path)} {quote_path('b/', path)}\n"]
    index = f"index {_blob_id(change.old)}..{_blob_id(change.new)}"
    if change.old_mode is None:
        lines.append(f"new file mode {change.new_mode:o}\n")
    elif change.new_mode is None:
        lines.append(f"deleted file mode {change.old_mode:o}\n")
    elif change.old_mode != change.new_mode:
        lines.append(f"old mode {change.old_mode:o}\nnew mode {change.new_mode:o}\n")
    else:
        index += f" {change.new_mode:o}"
    if change.old != change.new:
        lines.append(index + "\n")
        old = None if change.old is None else change.old.decode("utf-8", "replace")
        new = None if change.new is None else change.new.decode("utf-8", "replace")
        if change.old_mode is None and change.new_mode is not None and not change.new:
            pass  # an empty new file: git prints no hunks
        elif change.new_mode is None and not change.old:
            pass  # an empty deleted file
        else:
            lines.append(unified_diff(old, new, path))
    return "".join(lines)


def workspace_diff(changes: list[WorkspaceChange]) -> str:
    """The changes as one patch (``PATCH`` applies it back onto the fixture)."""
    return "".join(_file_diff(change) for change in changes)


def entries(directory: Path) -> frozenset[str]:
    """The files and symlinks directly in ``directory`` (none when it cannot be listed).
    Not directories: tools make theirs on first use (``~/.cache``, ``.hypothesis``)."""
    try:
        with os.scandir(directory) as found:
            return frozenset(e.name for e in found if not e.is_dir(follow_symlinks=False))
    except OSError:
        return frozenset()


def find_escapes(
    workspace: Path,
    changes: list[WorkspaceChange],
    watched: dict[Path, TreeSnapshot],
    exclude: Collection[Path] = (),
    shallow: Mapping[Path, frozenset[str]] | None = None,
) -> list[str]:
    """Signs that an agent wrote outside ``workspace``; each says what and where.

    ``watched``: directories outside the workspace and their snapshots from before the
    agent ran (taken with the same ``exclude``: the workspace and its private dirs).
    ``shallow``: directories and their :func:`entries` from before: a new entry is an
    escape."""
    root = Path(os.path.realpath(workspace))
    found = []
    for change in changes:
        if change.new is None:
            continue
        path = workspace / change.path
        if change.new_mode == 0o120000:
            target = Path(os.path.realpath(path))
            if not target.is_relative_to(root):
                found.append(f"symlink {change.path} leads outside the workspace (to {target})")
        elif os.lstat(path).st_nlink > 1:
            found.append(f"{change.path} is a hard link shared with a file outside the workspace")
    for directory, before in watched.items():
        after = snapshot(directory, exclude) if directory.is_dir() else {}
        for rel in sorted(before.keys() | after.keys()):
            if before.get(rel) != after.get(rel):
                what = (
                    "created" if rel not in before else "deleted" if rel not in after else "changed"
                )
                found.append(f"{directory / rel} was {what} outside the workspace")
    for directory, before_names in (shallow or {}).items():
        for name in sorted(entries(directory) - before_names):
            found.append(f"{directory / name} was created outside the workspace")
    return found
