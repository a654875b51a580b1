"""Writing files so that a crash or Ctrl-C never leaves half a file behind, and refusing
before a run an output it could not write (:func:`check_outputs`)."""

from __future__ import annotations

import codecs
import contextlib
import errno
import fcntl
import os
import re
import select
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.redaction import redact_bytes
from signal_eval_cli.signal_wakeup import signal_wakeup

__all__ = [
    "LONE_SURROGATE",
    "MAX_OUTPUT_NAME",
    "TextEncoding",
    "append_bytes",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_outputs",
    "check_readable",
    "editing",
    "is_stdout",
    "not_a_file",
    "read_input",
    "read_input_text",
    "read_text_file",
    "replace_file",
    "replace_files",
    "stdout_for_files_only",
    "utf8",
    "without_lone_surrogates",
]

MAX_OUTPUT_NAME = 200  # bytes: NAME_MAX (255) less the atomic write's temp-file affixes


LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""A lone surrogate: half a UTF-16 pair, which no UTF-8 file (and no YAML) can hold."""


def utf8(text: str) -> bytes:
    """``text`` as UTF-8; a lone surrogate, which UTF-8 cannot hold (a model's stream cut
    inside an emoji's pair, decoded from JSON), as its ``\\uXXXX`` escape: in a JSON
    string (results, journals, the HTML report's data) that reads back as the same
    string; elsewhere (Markdown, JUnit) it is shown as written. The escape is only made
    when encoding fails: no cost otherwise."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return LONE_SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", text).encode()


def without_lone_surrogates(value: Any) -> Any:
    """``value`` (JSON-like) with each lone surrogate as U+FFFD, for YAML, which holds
    none, escaped or not (PyYAML writes ``"\\ud83d"`` and then refuses to read it)."""
    if isinstance(value, str):
        return LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, Mapping):
        return {without_lone_surrogates(k): without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_lone_surrogates(v) for v in value]
    return value


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` as UTF-8 (:func:`utf8`), as it is (no newline translation); see
    :func:`atomic_write_bytes`."""
    atomic_write_bytes(path, utf8(text))


def atomic_write_bytes(path: str | Path, data: bytes, *, redact: bool = True) -> None:
    """Write to a temp file beside ``path``, fsync, then rename over it.

    A symlink is followed (the file it points to is replaced, the link stays). The
    process's own streams (``/dev/stdout``, ``/proc/self/fd/1``: maybe redirected to a
    file) are written through their descriptor, and anything else that is not a regular
    file (``/dev/null``, a named pipe) is written to as it is: renaming over either
    would replace the device or the user's file.

    Secrets (see :mod:`signal_eval_cli.redaction`) are redacted from ``data`` first;
    ``redact=False`` for an edit of the user's own file, whose new parts are redacted
    already and whose own text (a password a case checks for) is theirs to keep.
    """
    if redact:
        data = redact_bytes(data)
    stream = _stream_fd(path)
    if stream is not None:  # the process's own stream: share its offset, never reopen
        for handle in (sys.stdout, sys.stderr):
            handle.flush()
        with open(stream, "wb", closefd=False) as out:
            out.write(data)
        return
    if _is_special(path):
        append_bytes(path, data)
        return
    replace_file(os.path.realpath(path), data)


@contextlib.contextmanager
def editing(path: str | Path) -> Iterator[None]:
    """Hold the edit of a file of the user's (read, changed, written back: ``import
    --case-into``, ``--update-expected``) against another command's edit in the same
    folder: two appends to one dataset at once (``import t.json --case-into d.yaml &`` in
    a loop) each read the file before the other wrote it, and one case was lost. The lock
    is an exclusive flock on the file's folder, made for it if missing (and removed again,
    when left empty, should the edit fail), let go when the edit is done or the process
    ends."""
    folder = Path(os.path.abspath(path)).parent
    made = [f for f in (folder, *folder.parents) if not f.exists()]  # deepest first
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    except BaseException:
        for empty in made:
            with contextlib.suppress(OSError):  # another command's file is in it: kept
                empty.rmdir()
        raise
    finally:
        os.close(fd)


def append_bytes(path: str | Path, data: bytes) -> None:
    """Append ``data`` to ``path`` (created if missing): a device or a pipe is written
    as it is. A named pipe that nothing reads yet would hold ``open`` for ever, deaf to
    Ctrl-C and SIGTERM (a signal after a run only lets its writes finish): it is opened
    without waiting, and while no reader comes the wait is said on stderr, and a signal
    ends it (:class:`InterruptedError`, which the command reports as the path it could
    not write)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
    try:
        fd = os.open(path, flags | os.O_NONBLOCK, 0o666)
    except OSError as exc:
        if exc.errno != errno.ENXIO:  # ENXIO: a named pipe with no reader
            raise
        fd = _wait_for_reader(path, flags)
    os.set_blocking(fd, True)
    with open(fd, "ab") as out:
        out.write(data)


def _wait_for_reader(path: str | Path, flags: int) -> int:
    print(
        f"{path}: waiting for a reader: a named pipe that nothing reads yet (Ctrl-C to stop)",
        file=sys.stderr,
        flush=True,
    )
    with signal_wakeup() as woken:
        watched = [woken] if woken is not None else []
        while True:
            try:
                return os.open(path, flags | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno != errno.ENXIO:
                    raise
            if select.select(watched, [], [], PIPE_POLL_S)[0]:
                message = "stopped while waiting for a reader of the named pipe"
                raise InterruptedError(errno.EINTR, message, str(path))


PIPE_POLL_S = 0.05
"""How often a named pipe an output waits on is tried for a reader."""


def replace_file(path: str | Path, data: bytes) -> None:
    """Put ``data`` at ``path`` whole or not at all: a temp file beside it, fsynced, then
    renamed over it. Whatever ``path`` is (a symlink, a named pipe) is replaced, never
    written through; its folders are made."""
    replace_files({Path(path): data})


def replace_files(contents: Mapping[Path, bytes]) -> None:
    """:func:`replace_file` for several files, all or none: each is written whole beside
    its place first, and only once every one is written are they renamed into place (a
    file replaced kept under a second name until the last rename). A failure (a
    read-only folder, a full disk, Ctrl-C) undoes what this call did: its temp files go,
    the files it replaced come back, those it put where none was and the folders it made
    are removed. The :class:`OSError` names the user's file, not a temp file."""
    targets = [Path(os.path.abspath(p)) for p in contents]
    folders = dict.fromkeys(f for t in targets for f in (t.parent, *t.parent.parents))
    made = [f for f in folders if not f.exists()]
    staged: list[tuple[str, Path]] = []
    done: list[tuple[Path, bool, str | None]] = []  # renamed into place; existed; kept as
    try:
        for given, target in zip(contents, targets, strict=True):
            Path(given).parent.mkdir(parents=True, exist_ok=True)  # an error names it as given
            staged.append((_stage(given, target, contents[given]), target))
        for i, (tmp, target) in enumerate(staged, 1):
            existed = os.path.lexists(target)
            later = i < len(staged)  # a rename after this one may fail: keep the old file
            old = _kept(target, tmp) if existed and later else None
            try:
                os.replace(tmp, target)
            except BaseException:
                if old is not None:
                    os.unlink(old)
                raise
            done.append((target, existed, old))
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        for target, existed, old in reversed(done):
            with contextlib.suppress(OSError):
                if old is not None:
                    os.replace(old, target)
                elif not existed:
                    target.unlink()
        for folder in sorted(made, key=lambda f: len(f.parts), reverse=True):
            with contextlib.suppress(OSError):
                folder.rmdir()  # empty, as we made it; else someone else's now: kept
        raise
    for _, _, old in done:
        if old is not None:
            with contextlib.suppress(OSError):
                os.unlink(old)


def _kept(target: Path, tmp: str) -> str | None:
    """A second name for ``target`` (a hard link, of a symlink itself) while it is
    replaced, to put back should a later file fail; ``None`` where no link can be made.
    Named as a temp file, so that a killed writer's is removed by the next write."""
    old = f"{tmp.removesuffix('.tmp')}.old.tmp"
    try:
        os.link(target, old, follow_symlinks=False)
    except OSError:
        return None
    return old


def _stage(given: str | Path, target: Path, data: bytes) -> str:
    """``data`` in a temp file beside ``target``, fsynced, with the mode ``target`` has
    (or would get); its path. An error names ``given``, the file asked for."""
    _remove_stale_temps(target)
    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent
        )
    except OSError as exc:  # name the file the user asked for, not our temp file
        raise OSError(exc.errno, exc.strerror, str(given)) from None
    try:
        os.chmod(tmp, _mode_for(target))  # mkstemp makes 0600; give what open() would
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:  # a full disk: the file asked for could not be written
        Path(tmp).unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(given)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def _remove_stale_temps(target: Path) -> None:
    """Delete ``.<name>.<pid>.*.tmp`` files a killed writer (``kill -9``) left beside
    ``target``: their pid names the writer, so a live writer's file is left alone."""
    prefix = f".{target.name}."
    with contextlib.suppress(OSError):
        for entry in os.scandir(target.parent):
            name = entry.name
            if not (name.startswith(prefix) and name.endswith(".tmp")):
                continue
            pid = name[len(prefix) :].split(".", 1)[0]
            if pid.isdigit() and not _pid_alive(int(pid)):
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_STREAM = re.compile(r"/dev/(?:(stdout)|(stderr)|fd/(\d+))|/proc/(?:self|thread-self)/fd/(\d+)")


def _named_fd(path: str | Path) -> int | None:
    """The descriptor ``path`` names (``/dev/stdout``, ``/proc/self/fd/3``…), if any."""
    found = _STREAM.fullmatch(os.path.abspath(path))
    if found is None:
        return None
    stdout, stderr, dev_fd, proc_fd = found.groups()
    return 1 if stdout else 2 if stderr else int(dev_fd or proc_fd)


def _stream_fd(path: str | Path) -> int | None:
    """The descriptor a write to ``path`` goes to: the one it names, standard output's
    where :func:`stdout_for_files_only` keeps it."""
    fd = _named_fd(path)
    return _stdout_fd if fd == 1 else fd


_stdout_fd = 1
"""The process's standard output: descriptor 1, or its copy while
:func:`stdout_for_files_only` lends descriptor 1 to stderr."""


@contextlib.contextmanager
def stdout_for_files_only() -> Iterator[None]:
    """While a command writes a file to stdout (``-o - | jq``), what else is written
    there (a harness's ``print``, a process it starts, a library's notice) goes to
    stderr, not into the file: descriptor 1 is stderr's for the block, and the file is
    written to a copy of the real standard output."""
    global _stdout_fd
    sys.stdout.flush()
    try:
        kept = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # no stderr (2>&-): stdout stays as it is
        yield
        return
    _stdout_fd = kept
    try:
        yield
    finally:
        with contextlib.suppress(ValueError, OSError):
            sys.stdout.flush()  # what was printed goes to stderr, where it belongs
        os.dup2(kept, 1)
        os.close(kept)
        _stdout_fd = 1


def check_readable(path: str | Path) -> None:
    """Raise :class:`OSError`, as reading it would, unless ``path`` is a file or a pipe
    (symlinks followed; a pipe: ``<(curl …)``, ``/dev/stdin`` piped): a device given as
    an input (``/dev/zero``, ``/dev/urandom``, a terminal) is read for ever, and the
    command would hang."""
    mode = os.stat(path).st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
        raise OSError(errno.EINVAL, "a device, not a file", str(path))


PIPE_NOTICE_AFTER_S = 0.5
"""How long a pipe may stay silent before :func:`read_input` says it is waiting on it."""


def read_input(path: str | Path) -> bytes:
    """The bytes of input file ``path``, read once (:func:`check_readable` first), as
    UTF-8: a file whose byte order mark says UTF-16 or UTF-32 (YAML allows them; Windows
    editors and PowerShell write them) is transcoded, so that every reader of YAML, JSON
    and JSONL reads it; one that is such text without a mark, or not valid text of the
    encoding its mark names, is an :class:`InputError` saying so.

    A pipe is read from the one descriptor that waits for it: a named pipe with no writer
    would hold ``open`` for ever in silence, so it is opened without waiting, and when
    nothing has come after :data:`PIPE_NOTICE_AFTER_S` the wait is said on stderr (the
    pipe, and Ctrl-C to stop); a second open would wait for a writer that has gone."""
    raw = _read_bytes(path)
    encoding, body = TextEncoding.of(raw)
    if encoding.codec == "utf-8":
        _refuse_unmarked_wide_text(path, raw)
        return raw
    return decode_as(path, body, encoding).encode("utf-8", "surrogatepass")


def read_text_file(path: str | Path) -> tuple[str, TextEncoding]:
    """A text file the user wrote and a command rewrites in place (``import --append``,
    ``--update-expected``): its text, and its encoding to write it back in (its byte
    order mark kept), so that only the edit changes its bytes."""
    raw = Path(path).read_bytes()
    encoding, body = TextEncoding.of(raw)
    return decode_as(path, body, encoding), encoding


def _read_bytes(path: str | Path) -> bytes:
    check_readable(path)
    if not stat.S_ISFIFO(os.stat(path).st_mode):
        return Path(path).read_bytes()
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with open(fd, "rb") as pipe:
        if not select.select([fd], [], [], PIPE_NOTICE_AFTER_S)[0]:
            print(
                f"{path}: waiting for a writer: a pipe that nothing has written to yet "
                "(Ctrl-C to stop)",
                file=sys.stderr,
                flush=True,
            )
            select.select([fd], [], [])
        os.set_blocking(fd, True)
        return pipe.read()


@dataclass(frozen=True, slots=True)
class TextEncoding:
    """How a text file is encoded: its byte order mark (``b""``: none) and the codec of
    the bytes after it."""

    bom: bytes
    codec: str

    @staticmethod
    def of(raw: bytes) -> tuple[TextEncoding, bytes]:
        """The encoding ``raw``'s byte order mark names (UTF-8 when it has none), and the
        bytes after the mark. UTF-32's marks first: UTF-32-LE's begins as UTF-16-LE's."""
        for bom, codec in _BOMS:
            if raw.startswith(bom):
                return TextEncoding(bom, codec), raw[len(bom) :]
        return TextEncoding(b"", "utf-8"), raw

    @property
    def name(self) -> str:
        return self.codec.upper()

    def encode(self, text: str) -> bytes:
        """``text`` as this encoding writes it, its mark first."""
        return self.bom + (utf8(text) if self.codec == "utf-8" else text.encode(self.codec))


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def decode_as(path: str | Path, body: bytes, encoding: TextEncoding) -> str:
    """``body`` (a file's bytes after its mark) decoded as ``encoding``; an
    :class:`InputError` at the line and column of the first bytes that are not."""
    try:
        return body.decode(encoding.codec)
    except UnicodeDecodeError as exc:
        before = body[: exc.start].decode(encoding.codec)
        line = before.count("\n") + 1
        column = len(before) - (before.rfind("\n") + 1) + 1
        marked = f" (its byte order mark says {encoding.name})" if encoding.bom else ""
        message = f"not {encoding.name} text{marked}: {exc.reason}"
        raise InputError([Problem(str(path), line, column, message)]) from None


# UTF-16 and UTF-32 text without a mark, by where the NULs of its first (ASCII)
# character fall, as YAML 1.2 (5.2) and RFC 4627 detect it
_UNMARKED = (
    (re.compile(b"\0\0\0[^\0]"), "UTF-32-BE"),
    (re.compile(b"[^\0]\0\0\0"), "UTF-32-LE"),
    (re.compile(b"\0[^\0]\0[^\0]"), "UTF-16-BE"),
    (re.compile(b"[^\0]\0[^\0]\0"), "UTF-16-LE"),
)


def _refuse_unmarked_wide_text(path: str | Path, raw: bytes) -> None:
    """An :class:`InputError` for UTF-16 or UTF-32 text without a byte order mark: it
    cannot be told from binary data for sure, so it is named and not guessed at."""
    for pattern, name in _UNMARKED:
        if pattern.match(raw):
            message = (
                f"{name} text without a byte order mark: save it as UTF-8 "
                f"(or as {name} with a byte order mark)"
            )
            raise InputError([Problem(str(path), 1, 1, message)])


def read_input_text(path: str | Path, encoding: str = "utf-8") -> str:
    """:func:`read_input` decoded, its line ends made ``\\n`` as a text-mode read makes
    them (``\\r\\n`` and a lone ``\\r``)."""
    text = read_input(path).decode(encoding)
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def not_a_file(path: str | Path) -> str | None:
    """What ``path`` is ("a directory", "a named pipe", …) when it is there but is no
    regular file (symlinks followed), else None. Such a thing is never read: opening a
    named pipe waits for a writer that never comes, and a device never ends."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    return (
        "a named pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    )


def is_stdout(path: str | Path) -> bool:
    """Whether writing ``path`` writes this process's standard output (``/dev/stdout``,
    ``/proc/self/fd/1``)."""
    return _named_fd(path) == 1


def _is_special(path: str | Path) -> bool:
    """An existing device, pipe or socket (symlinks followed): written to, not replaced."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _mode_for(target: Path) -> int:
    """The existing file's mode, else 0666 less the umask (what a plain open() creates)."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def check_outputs(*paths: Path | None, inputs: Iterable[Path] = ()) -> None:
    """Refuse, before anything runs, an output path that cannot become a file
    (:class:`InputError` listing every such path): a directory, a file's child, a name
    too long for the atomic write's temp file, a directory we cannot write in, one of the
    command's ``inputs`` (``run d.yaml -o d.yaml`` replaced the dataset with its results),
    or another of ``paths`` (``-o r.json --html r.json``: the report replaced the results).
    The run's results must not be lost after it ran, nor the user's files by it."""
    problems = []
    read = [p for p in inputs if p.is_file()]
    written: set[str] = set()
    for path in filter(None, paths):
        where = os.path.realpath(path)
        if where in written and not _is_special_file(path):  # /dev/null twice is fine
            problems.append(
                Problem(str(path), 0, 0, "is named for two outputs: one would replace the other")
            )
            continue
        written.add(where)
        if len(path.name.encode()) > MAX_OUTPUT_NAME:
            message = f"cannot write here: the file name is longer than {MAX_OUTPUT_NAME} bytes"
            problems.append(Problem(str(path)[:80] + "…", 0, 0, message))
            continue
        ancestor = path.parent
        while not ancestor.exists() and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if path.is_dir():
            problems.append(Problem(str(path), 0, 0, "is a directory: give a file path"))
        elif not ancestor.is_dir():
            problems.append(Problem(str(path), 0, 0, f"cannot write here: {ancestor} is a file"))
        elif (given := _one_of(path, read)) is not None:
            same = "" if given == path else f" ({given})"
            message = f"is an input of this command{same}: writing it would replace it"
            problems.append(Problem(str(path), 0, 0, message))
        elif (why := unwritable(path, ancestor)) is not None:
            problems.append(Problem(str(path), 0, 0, f"cannot write here: {why}"))
    if problems:
        raise InputError(problems)


def _one_of(path: Path, inputs: list[Path]) -> Path | None:
    """The input ``path`` is (the same file, by any name), if any."""
    for given in inputs:
        try:
            if path.exists() and os.path.samefile(path, given):
                return given
        except OSError:
            continue
    return None


def unwritable(path: Path, ancestor: Path) -> str | None:
    """Why ``path`` could not be written (its name too long, its directory read-only or
    not ours), found by trying: the run's results must not be lost after it ran."""
    if _is_special_file(path):
        return None
    try:
        fd, probe = tempfile.mkstemp(prefix=".signal-eval-probe-", dir=ancestor)
    except OSError as exc:
        return f"{ancestor}: {exc.strerror or exc}"
    os.close(fd)
    os.unlink(probe)
    return None


def _is_special_file(path: Path) -> bool:
    """/dev/stdout, /dev/null, a pipe: written to as they are, nothing to probe."""
    try:
        return path.exists() and not path.is_file()
    except OSError:
        return False
