"""Unified diffs for the ``PATCH`` agentTask verb: parse with ``unidiff``, apply exactly.

Pure functions over bytes, so the workspace can compute every file's new contents
before it writes anything. A patch is what ``git diff`` or ``git format-patch`` prints
(several files; new, deleted and renamed files; mode changes; ``\\ No newline at end of
file``) or plain ``diff -u``. Hunks apply at the line their header names, with every
context and removed line equal byte for byte: no offset search, no fuzz, so what is
applied is exactly what the diff says. A hunk that does not match raises
:class:`PatchError` showing the hunk and the file's lines where it should have applied.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from unidiff import PatchedFile, PatchSet
from unidiff.constants import DEV_NULL, LINE_TYPE_NO_NEWLINE, RE_HUNK_HEADER
from unidiff.errors import UnidiffParseError

from signal_eval_cli.errors import EvalError

__all__ = [
    "FilePatch",
    "Hunk",
    "PatchError",
    "apply_file_patch",
    "parse_patch",
    "split_lines",
]

_GIT_PREFIXES = ("a/", "b/", "i/", "w/", "c/", "o/")  # git's default and mnemonic prefixes
_MODE = re.compile(r"^(?:new file mode|new mode) (\d+)$")
_RENAME = re.compile(r"^rename (from|to) (.+)$")
_SHOWN = 3
"""File lines shown before and after where a failing hunk should have applied."""


class PatchError(EvalError, ValueError):
    """A patch that cannot be parsed or does not apply; nothing was written."""


@dataclass(frozen=True, slots=True)
class Hunk:
    header: str
    source_start: int
    source_length: int
    old: tuple[bytes, ...]
    new: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class FilePatch:
    """One file's part of a patch: ``source`` None for a new file, ``target`` None for a
    deleted one, both set and different for a rename."""

    source: str | None
    target: str | None
    hunks: tuple[Hunk, ...]
    mode: int | None = None
    """Permission bits from ``new file mode``/``new mode`` (``0o755``), if given."""

    @property
    def label(self) -> str:
        if self.source and self.target and self.source != self.target:
            return f"{self.source} → {self.target}"
        return self.target or self.source or "?"


def split_lines(data: bytes) -> list[bytes]:
    """Lines ending in ``\\n`` (a ``\\r`` is content, as in git); the last may lack it."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _strip_prefix(path: str) -> str:
    return path[2:] if path.startswith(_GIT_PREFIXES) else path


def _counted(text: str, seen: list[int]) -> Iterator[str]:
    """The patch's lines, counting them so a parse error can name its line."""
    start = 0
    while start < len(text):  # split at "\n" only: a "\r" is content
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        seen[0] += 1
        yield text[start:end]
        start = end


def _hunk(hunk: object) -> Hunk:
    """unidiff's hunk as old and new lines, each ``\\ No newline`` marker applied."""
    old: list[bytes] = []
    new: list[bytes] = []
    previous = ""
    for line in hunk:  # type: ignore[attr-defined]
        kind, value = line.line_type, line.value.encode("utf-8")
        if kind == LINE_TYPE_NO_NEWLINE:
            for side, applies in ((old, previous in " -"), (new, previous in " +")):
                if applies and side and side[-1].endswith(b"\n"):
                    side[-1] = side[-1][:-1]
            continue
        if kind in (" ", "-"):
            old.append(value)
        if kind in (" ", "+"):
            new.append(value)
        if kind in (" ", "-", "+"):
            previous = kind
    header = (
        f"@@ -{hunk.source_start},{hunk.source_length} +{hunk.target_start},{hunk.target_length} @@"  # type: ignore[attr-defined]
    )
    return Hunk(header, hunk.source_start, hunk.source_length, tuple(old), tuple(new))  # type: ignore[attr-defined]


def _file_patch(patched: PatchedFile) -> FilePatch:
    info = [str(line).rstrip("\n") for line in patched.patch_info or ()]
    renames: dict[str, str] = {
        m.group(1): m.group(2) for line in info if (m := _RENAME.match(line))
    }
    modes = [int(m.group(1)[-3:], 8) for line in info if (m := _MODE.match(line))]
    source = None if patched.source_file == DEV_NULL else _strip_prefix(patched.source_file)
    target = None if patched.target_file == DEV_NULL else _strip_prefix(patched.target_file)
    source = renames.get("from", source)
    target = renames.get("to", target)
    if patched.is_binary_file:
        raise PatchError(f"{target or source}: binary patches are not supported")
    return FilePatch(source, target, tuple(_hunk(h) for h in patched), modes[-1] if modes else None)


def parse_patch(text: str) -> list[FilePatch]:
    """Every file of a unified diff, or :class:`PatchError` naming the patch line."""
    seen = [0]
    if text and not text.endswith("\n"):  # a trimmed string: git ends every line
        text += "\n"
    try:
        patch = PatchSet(_counted(text, seen))
    except UnidiffParseError as exc:
        raise PatchError(f"patch line {seen[0]}: {exc}".rstrip()) from None
    _check_no_stray_lines(text, patch)
    files = [_file_patch(patched) for patched in patch]
    if not files:
        raise PatchError("no file changes found (expected a unified diff: '--- a/x', '+++ b/x')")
    return files


def _check_no_stray_lines(text: str, patch: PatchSet) -> None:
    """A body line outside every hunk means the hunk's line counts are wrong (unidiff
    would keep it as free text, silently dropping an edit)."""
    covered = {line.diff_line_no for patched in patch for hunk in patched for line in hunk}
    in_diff = False
    for number, line in enumerate(_counted(text, [0]), 1):
        if line == "-- \n":  # format-patch's signature separator: the diff is over
            return
        if RE_HUNK_HEADER.match(line):
            in_diff = True
            continue
        stray = line[:1] in ("+", "-", " ") and not line.startswith(("--- ", "+++ "))
        if in_diff and stray and number not in covered:
            raise PatchError(
                f"patch line {number}: {line.rstrip()[:60]!r} is outside every hunk "
                f"(does the hunk header above count its lines right?)"
            )


def _show(lines: Sequence[bytes], first: int, last: int) -> str:
    """File lines ``first..last`` (1-based), numbered."""
    rows = []
    for number in range(max(1, first), min(len(lines), last) + 1):
        text = lines[number - 1].decode("utf-8", "replace").rstrip("\n")
        rows.append(f"  {number:>5} | {text}")
    return "\n".join(rows) if rows else "  (the file has no lines there)"


def _hunk_text(hunk: Hunk) -> str:
    body = [hunk.header]
    body += ["  " + line.decode("utf-8", "replace").rstrip("\n") for line in hunk.old]
    return "\n".join(body)


def apply_file_patch(patch: FilePatch, old: bytes | None) -> bytes | None:
    """The new contents of one file (None: deleted), or :class:`PatchError`."""
    lines = split_lines(old or b"")
    out: list[bytes] = []
    position = 0  # index into lines up to which ``out`` holds the result
    for number, hunk in enumerate(patch.hunks, 1):
        start = hunk.source_start - 1 if hunk.source_length else hunk.source_start
        actual = lines[start : start + len(hunk.old)]
        if start < position or tuple(actual) != hunk.old:
            where = f"line {hunk.source_start}"
            raise PatchError(
                f"hunk {number} of {patch.label} does not apply at {where}:\n"
                f"{_hunk_text(hunk)}\n"
                f"the file has there:\n"
                f"{_show(lines, hunk.source_start - _SHOWN, start + len(hunk.old) + _SHOWN)}"
            )
        out += lines[position:start]
        out += hunk.new
        position = start + len(hunk.old)
    out += lines[position:]
    result = b"".join(out)
    if patch.target is None:
        if result:
            raise PatchError(
                f"{patch.label}: the patch deletes the file but the file has other lines:\n"
                f"{_show(split_lines(result), 1, 2 * _SHOWN)}"
            )
        return None
    return result
