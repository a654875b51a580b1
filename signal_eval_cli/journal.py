"""The run journal: every finished case, appended as it finishes, so a crash loses only
what was in flight.

A line is written and flushed before :meth:`Journal.record` returns, so it is in the
operating system's hands: killing the process (even ``kill -9``) cannot lose it. The
fsync that also guards it against a power cut runs on a thread of its own, one fsync
for whatever was appended in the last :data:`SYNC_EVERY_S` at most: an fsync per case on
the event loop (about 5 ms each) would serialize the whole run behind the disk, and one
per case on the thread costs kernel time to no purpose.

:meth:`Journal.record` returns the unit as a reader of the line gets it back, so the run
builds its results from memory and never reads back what it has just written.

A journal is JSON lines next to the results file (``out.json`` → ``out.json.journal.jsonl``).
The first line is a header saying what the run was (kind, name, the selected case ids in
order, the fingerprint of what gives results their meaning, the shard); each later line
is one finished unit: ``{"variant": "", "case": ID, "result": {...}}`` with the case's
full JSON (every signal: the results file applies ``--signals`` when it is built).

``kill -9`` can leave a torn last line; :func:`read_journal` ignores it (the case it
held was in flight) and :func:`rewrite_journal` drops it before appending again. A
damaged line anywhere else is an input error (``file:line:col``), never a guess.
"""

from __future__ import annotations

import contextlib
import decimal
import fcntl
import json
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from signal_eval_cli.errors import InputError, Problem, at_byte, malformed, shorten
from signal_eval_cli.files import atomic_write_bytes, utf8
from signal_eval_cli.json_text import compact_encoder
from signal_eval_cli.result_check import journal_entry_problems
from signal_eval_cli.sharding import shard_ids

__all__ = [
    "JOURNAL_SUFFIX",
    "Journal",
    "JournalContents",
    "JournalHeader",
    "journal_path",
    "read_journal",
    "rewrite_journal",
    "run_slot",
    "slot_run",
]

JOURNAL_VERSION = 1
JOURNAL_SUFFIX = ".journal.jsonl"
Key = tuple[str, str]
"""(variant id, case id); the variant is ``""`` outside a matrix (a repeated scenario's
run: :func:`run_slot`; a matrix-over-scenarios variant's run: see
:mod:`signal_eval_cli.resume`)."""


def run_slot(run: int) -> str:
    """A repeated scenario's key slot: ``""`` for run 0 (as unrepeated), ``run2``…"""
    return f"run{run}" if run else ""


def slot_run(slot: str) -> int:
    """The run of a :func:`run_slot`."""
    return int(slot[3:]) if slot.startswith("run") else 0


def journal_path(output: Path) -> Path:
    """Where the journal of a run writing ``output`` lives: right beside it."""
    return output.with_name(output.name + JOURNAL_SUFFIX)


@dataclass(slots=True)
class JournalHeader:
    """What a run was: enough to rebuild its result from the journal alone."""

    kind: str
    """``dataset``, ``matrix``, ``scenarios`` or ``scenario-matrix``."""
    name: str
    order: list[str]
    """The selected case (scenario) ids of the whole run, every shard's, in the order
    results list them."""
    fingerprint: dict[str, str]
    shard: tuple[int, int] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    variants: list[dict[str, Any]] = field(default_factory=list)
    """A matrix's variants: ``{"id", "name", "metadata"}`` each, in order."""

    def own_ids(self) -> list[str]:
        """The ids this run's shard runs (all of :attr:`order` when unsharded)."""
        if self.shard is None:
            return list(self.order)
        mine = shard_ids(self.order, self.shard)
        return [i for i in self.order if i in mine]

    def to_dict(self) -> dict[str, Any]:
        return {
            "signalEvalJournal": JOURNAL_VERSION,
            "kind": self.kind,
            "name": self.name,
            "fingerprint": self.fingerprint,
            "shard": list(self.shard) if self.shard else None,
            "metadata": self.metadata,
            "variants": self.variants,
            "order": self.order,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JournalHeader:
        shard = data.get("shard")
        return cls(
            kind=str(data["kind"]),
            name=str(data["name"]),
            order=[str(i) for i in data["order"]],
            fingerprint={str(k): str(v) for k, v in dict(data["fingerprint"]).items()},
            shard=(int(shard[0]), int(shard[1])) if shard else None,
            metadata=dict(data.get("metadata") or {}),
            variants=[dict(v) for v in data.get("variants") or []],
        )


@dataclass(slots=True)
class JournalContents:
    header: JournalHeader
    entries: dict[Key, dict[str, Any]]
    """Finished units by key; a later line for the same key (a retry) wins."""
    path: Path


SYNC_EVERY_S = 0.1
"""The longest a flushed line waits for its fsync (a power cut may lose that much more)."""

_LINE = {"ensure_ascii": False, "separators": (",", ":")}
_encode_line = json.JSONEncoder(**_LINE, default=str).encode  # type: ignore[arg-type]


def _entry(key: Key, result: Mapping[str, Any]) -> dict[str, Any]:
    return {"variant": key[0], "case": key[1], "result": result}


def _entry_line(key: Key, result: Mapping[str, Any]) -> bytes:
    return utf8(_encode_line(_entry(key, result)) + "\n")


def _header_line(header: JournalHeader) -> bytes:
    return utf8(json.dumps(header.to_dict(), ensure_ascii=False, default=str) + "\n")


class Journal:
    """An open journal: :meth:`record` returns once the line is written and flushed; a
    background thread fsyncs behind it, and :meth:`close` waits for the last fsync."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle: IO[bytes] | None = open(path, "ab")  # noqa: SIM115 - closed by close()
        try:
            _lock(self._handle.fileno(), path)
        except BaseException:
            self._handle.close()
            raise
        self._encode = compact_encoder(default=self._as_text)  # a cycle: RecursionError
        self._inexact = False
        self._dirty = threading.Condition()
        self._pending = False
        self._closed = threading.Event()
        self._syncer = threading.Thread(target=self._sync_behind, name="journal-fsync", daemon=True)
        self._syncer.start()

    @classmethod
    def start(
        cls, path: Path, header: JournalHeader, kept: Iterable[tuple[Key, Mapping[str, Any]]] = ()
    ) -> Journal:
        """Write a new journal (header and ``kept`` entries, atomically) and open it."""
        rewrite_journal(path, header, kept)
        return cls(path)

    def record(
        self, key: Key, result: Mapping[str, Any], *, settled: bool = True
    ) -> Mapping[str, Any]:
        """Append the unit's line and flush it; the fsync follows on the syncing thread.

        Returns ``result`` as a reader of the line gets it back: ``result`` itself when
        the line holds it as it is (no value had to be written as its ``str``) and it is
        ``settled`` (nothing still running may change it), else the line decoded."""
        if self._handle is None:
            raise ValueError(f"journal {self.path} is closed")
        self._inexact = not settled
        try:
            line = self._encode(_entry(key, result))
        except (ValueError, TypeError, RecursionError):  # a payload writable only in part
            self._inexact = True  # the line holds the writable copy: return that
            line = self._encode(_entry(key, writable(result)))
        with self._naming_failure():
            self._handle.write(utf8(line + "\n"))
            self._handle.flush()
        with self._dirty:
            self._pending = True
            self._dirty.notify()
        if self._inexact:
            decoded: Mapping[str, Any] = json.loads(line)["result"]
            return decoded
        return result

    def _as_text(self, value: object) -> str:
        """The encoder's fallback for a value JSON has no type for: its ``str``, which is
        not the value a reader gets back."""
        self._inexact = True
        return str(value)

    def _sync_behind(self) -> None:
        """fsync whatever was flushed since the last fsync, until :meth:`close`; after
        each, gather lines for up to :data:`SYNC_EVERY_S` (or until the close)."""
        while True:
            with self._dirty:
                while not self._pending and not self._closed.is_set():
                    self._dirty.wait()
                if not self._pending:
                    return
                self._pending = False
                handle = self._handle
            if handle is not None:
                os.fsync(handle.fileno())
            self._closed.wait(SYNC_EVERY_S)

    def close(self) -> None:
        """Stop the syncing thread, fsync the tail, close the file."""
        if self._handle is None:
            return
        with self._dirty:
            self._closed.set()
            self._dirty.notify()
        self._syncer.join()
        handle, self._handle = self._handle, None
        with self._naming_failure(), handle:
            os.fsync(handle.fileno())

    @contextlib.contextmanager
    def _naming_failure(self) -> Iterator[None]:
        """An error writing the journal (the disk full) names it: the OS's own says only
        'No space left on device', and the user is left to guess which file."""
        try:
            yield
        except OSError as exc:
            if exc.filename is not None:
                raise
            raise OSError(exc.errno, f"cannot write: {exc.strerror}", str(self.path)) from None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


WRITABLE_DEPTH = 200
"""Nesting kept when a value too deep for JSON's encoder (about 1,000 levels) is written
(two frames a level here: well within the interpreter's recursion limit)."""


def writable(value: Any, depth: int = 0, path: frozenset[int] = frozenset()) -> Any:
    """``value`` as JSON can write it: a list or mapping that holds itself is written as
    ``"<cycle>"`` where it recurs, what lies deeper than :data:`WRITABLE_DEPTH` as
    ``"<nested too deep>"``, an integer past Python's limit for its text (4,300 digits)
    as ``"<integer of N digits>"``, an object whose ``str`` raises as ``"<Type>"`` and a
    key of another type than JSON's as its text (a harness's payload can be any of
    these; the case is kept)."""
    if not isinstance(value, (dict, list, tuple)):
        return _writable_leaf(value)
    if id(value) in path:
        return "<cycle>"
    if depth >= WRITABLE_DEPTH:
        return "<nested too deep>"
    inner = path | {id(value)}
    if isinstance(value, dict):
        return {_writable_key(k): writable(v, depth + 1, inner) for k, v in value.items()}
    return [writable(v, depth + 1, inner) for v in value]


def _writable_key(key: Any) -> Any:
    """A mapping's key as JSON can write it: a tuple's (or any other object's) text."""
    if key is None or isinstance(key, (str, float, bool)):
        return key
    text = _writable_leaf(key)
    return text if isinstance(text, (str, int)) else str(text)


def _writable_leaf(value: Any) -> Any:
    if isinstance(value, int):
        try:
            str(value)
        except ValueError:  # past sys.get_int_max_str_digits()
            return f"<integer of {len(decimal.Decimal(value).as_tuple().digits)} digits>"
        return value
    if value is None or isinstance(value, (str, float)):
        return value
    try:
        str(value)
    except Exception:  # the encoder writes other values as their str
        return f"<{type(value).__name__}>"
    return value


BUSY = (
    "another signal-eval run is writing this journal (and the results beside it): let it "
    "finish, or write the results elsewhere"
)


def claim(path: Path) -> int:
    """A descriptor holding the lock of the journal file at ``path`` (an empty one made if
    there is none), for a run to read it and start it anew (:meth:`Journal.start`, which
    locks the new file: close the descriptor after it); an :class:`InputError`
    (:data:`BUSY`) when another run holds it.

    Two runs given one ``--output`` each wrote the journal: the second replaced the
    first's, whose lines then went to a file no longer there (a crash lost them), and
    --resume of either read the other's. The lock is the open journal's own (flock,
    released when the process ends however it ends), checked to be the file at ``path``
    still: a run that replaced it in between is looked at anew."""
    Path(os.path.realpath(path)).parent.mkdir(parents=True, exist_ok=True)  # as a write makes
    while True:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)
        try:
            _lock(fd, path)
            if _is_at(fd, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _lock(fd: int, path: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise InputError([Problem(str(path), 0, 0, BUSY)]) from None


def _is_at(fd: int, path: Path) -> bool:
    try:
        there = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (there.st_dev, there.st_ino) == (held.st_dev, held.st_ino)


def rewrite_journal(
    path: Path, header: JournalHeader, entries: Iterable[tuple[Key, Mapping[str, Any]]]
) -> None:
    """Replace the journal at ``path`` with ``header`` and ``entries`` (atomically)."""
    data = _header_line(header) + b"".join(_entry_line(k, r) for k, r in entries)
    atomic_write_bytes(path, data)


def read_journal(path: Path) -> JournalContents:
    """Read a journal; a torn last line (a crash mid-write) is ignored."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(
            [Problem(str(path), 0, 0, f"cannot read journal: {exc.strerror}")]
        ) from None
    return parse_journal(path, raw)


def is_journal(raw: bytes) -> bool:
    """Whether ``raw`` (a file's bytes) starts as a journal: its header names the format."""
    return b'"signalEvalJournal"' in raw[:4096].split(b"\n", 1)[0]


def parse_journal(path: Path, raw: bytes) -> JournalContents:
    """The journal ``raw``, read from ``path`` (see :func:`read_journal`)."""
    name = str(path)
    lines = raw.split(b"\n")
    torn = lines.pop()  # after the last newline: empty, or a line the crash cut short
    del torn
    if not lines:
        raise InputError([Problem(name, 1, 1, "not a signal-eval journal: it is empty")])
    header = _parse_header(name, lines[0])
    entries: dict[Key, dict[str, Any]] = {}
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
            key = (str(entry["variant"]), str(entry["case"]))
            result = entry["result"]
            if not isinstance(result, dict):
                raise TypeError("result is not an object")
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError([_damaged_entry(name, number, line, exc)]) from None
        if problems := journal_entry_problems(name, number, line, header.kind, entry):
            raise InputError(problems)
        entries[key] = result
    return JournalContents(header, entries, path)


def _damaged_entry(name: str, number: int, line: bytes, exc: Exception) -> Problem:
    """Entry ``number`` unreadable: at the column where its JSON breaks, if it does (the
    message read "6:1: … line 1 column 5092" on a long line), else at its start."""
    if isinstance(exc, json.JSONDecodeError):
        return Problem(name, number, exc.colno, f"damaged journal entry: invalid JSON: {exc.msg}")
    if isinstance(exc, UnicodeDecodeError):
        column = at_byte(name, line, exc.start, "").column
        return Problem(name, number, column, "damaged journal entry: not UTF-8 text")
    return Problem(name, number, 1, f"damaged journal entry: {malformed(exc)}")


def _parse_header(name: str, line: bytes) -> JournalHeader:
    try:
        data = json.loads(line)
        if not isinstance(data, dict) or "signalEvalJournal" not in data:
            raise ValueError("no signalEvalJournal key")
    except ValueError:
        raise InputError(
            [Problem(name, 1, 1, "not a signal-eval journal (its first line is no journal header)")]
        ) from None
    found = data["signalEvalJournal"]
    if found != JOURNAL_VERSION or type(found) is not int:
        shown = shorten(json.dumps(found), 40)  # as written: the string "1" is not 1
        raise InputError(
            [
                Problem(
                    name,
                    1,
                    1,
                    f"journal version {shown} is not supported "
                    f"(this signal-eval reads the number {JOURNAL_VERSION})",
                )
            ]
        )
    try:
        return JournalHeader.from_dict(data)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise InputError(
            [Problem(name, 1, 1, f"damaged journal header: {malformed(exc)}")]
        ) from None
