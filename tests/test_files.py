"""Atomic writes: whole files only, with the permissions a plain open() would give."""

from __future__ import annotations

import errno
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from signal_eval_cli import files
from signal_eval_cli.errors import InputError
from signal_eval_cli.files import atomic_write_text, read_input


def test_new_file_gets_umask_permissions_not_0600(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        target = tmp_path / "sub" / "results.json"
        atomic_write_text(target, "{}\n")
    finally:
        os.umask(old)
    assert target.read_text() == "{}\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_overwrite_keeps_the_existing_mode_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "cassette.yaml"
    target.write_text("old")
    target.chmod(0o640)
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["cassette.yaml"]


def test_a_device_is_written_to_not_replaced() -> None:
    """``--output /dev/null`` once turned /dev/null into a regular file (as root)."""
    atomic_write_text("/dev/null", "discarded\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert Path("/dev/null").read_text() == ""


def test_a_named_pipe_gets_the_bytes_and_stays_a_pipe(tmp_path: Path) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    atomic_write_text(fifo, "through the pipe\n")
    reader.join(timeout=10)
    assert received == ["through the pipe\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_symlink_is_followed_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "store" / "results.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "results.json"
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert sorted(p.name for p in real.parent.iterdir()) == ["results.json"]


def test_dev_stdout_redirected_to_a_file_is_appended_to_not_replaced(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    log.write_text("before\n")
    code = (
        "import sys; from signal_eval_cli.files import atomic_write_text; "
        "print('printed', flush=True); atomic_write_text('/dev/stdout', 'written\\n'); "
        "print('after', flush=True)"
    )
    with open(log, "a") as out:
        subprocess.run([sys.executable, "-c", code], stdout=out, check=True)
    assert log.read_text() == "before\nprinted\nwritten\nafter\n"
    with open(log, "w") as out:  # ">": the stream's own offset, not a reopened file's
        subprocess.run([sys.executable, "-c", code], stdout=out, check=True)
    assert log.read_text() == "printed\nwritten\nafter\n"
    piped = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == "printed\nwritten\nafter\n"


def test_a_regular_file_under_dev_shm_is_replaced_not_appended_to() -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir():
        return  # not Linux-like: nothing under /dev to confuse
    target = shm / f"signal-eval-test-{os.getpid()}.json"
    try:
        atomic_write_text(target, '{"v": 1}\n')
        atomic_write_text(target, '{"v": 2}\n')
        assert target.read_text() == '{"v": 2}\n'
    finally:
        target.unlink(missing_ok=True)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "in.yaml", "-o", "in.yaml"],
        ["run", "in.yaml", "--html", "./in.yaml"],
        ["matrix", "in.yaml", "--markdown", "in.yaml"],
        ["scenario", "in.yaml", "--junit", "in.yaml"],
        ["compare", "other.yaml", "in.yaml", "-o", "in.yaml"],
        ["merge", "other.yaml", "in.yaml", "-o", "link.yaml"],
        ["report", "in.yaml", "--html", "in.yaml"],
    ],
    ids=["run", "run-html", "matrix", "scenario", "compare", "merge-by-link", "report"],
)
def test_a_report_path_that_is_an_input_is_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    """``run d.yaml -o d.yaml`` replaced the dataset with its results (so did a report
    written over a harness file, a result being read, a shard being merged)."""
    from typer.testing import CliRunner

    from signal_eval_cli.cli import app

    monkeypatch.chdir(tmp_path)
    for name in ("in.yaml", "other.yaml"):
        (tmp_path / name).write_text(f"name: {name}\n")
    (tmp_path / "link.yaml").symlink_to("in.yaml")
    done = CliRunner().invoke(app, argv)
    assert done.exit_code == 2, done.output
    assert "is an input of this command" in done.output
    assert (tmp_path / "in.yaml").read_text() == "name: in.yaml\n"


class _Said(list[str]):
    """A stderr that keeps every write: the reader thread writes while the test polls,
    and capsys's snapshot (read, then truncate) drops a write landing between the two."""

    def write(self, text: str) -> int:
        self.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_a_named_pipe_with_no_writer_is_waited_for_aloud_then_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'signal-eval import p' on a named pipe nothing wrote to sat in open() for ever, in
    silence; now it says what it waits for, and reads what the writer sends."""
    monkeypatch.setattr(files, "PIPE_NOTICE_AFTER_S", 0.0)
    said = _Said()
    monkeypatch.setattr(sys, "stderr", said)
    fifo = tmp_path / "trace.jsonl"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(read_input(fifo)), daemon=True)
    reader.start()
    deadline = time.monotonic() + 30
    while not said and reader.is_alive() and time.monotonic() < deadline:
        time.sleep(0.001)
    assert "".join(said).startswith(f"{fifo}: waiting for a writer"), (said, got)
    with open(fifo, "wb") as writer:  # the reader holds the pipe open: no wait here
        writer.write(b'{"name": "a"}\n')
    reader.join(30)
    assert got == [b'{"name": "a"}\n']


def _when_said(said: _Said, then: Callable[[], object]) -> threading.Thread:
    """A thread that runs ``then`` once something is said on stderr."""

    def wait_then() -> None:
        deadline = time.monotonic() + 30
        while not said and time.monotonic() < deadline:
            time.sleep(0.001)
        then()

    thread = threading.Thread(target=wait_then, daemon=True)
    thread.start()
    return thread


def test_an_output_named_pipe_with_no_reader_is_waited_for_aloud_then_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'run -o p' (a named pipe nothing read) sat in open() for ever once the run was
    done, in silence; now it says what it waits for, and writes to the reader that comes."""
    said = _Said()
    monkeypatch.setattr(sys, "stderr", said)
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = _when_said(said, lambda: got.append(fifo.read_bytes()))
    atomic_write_text(fifo, "through the pipe\n")
    reader.join(30)
    assert "".join(said).startswith(f"{fifo}: waiting for a reader"), said
    assert got == [b"through the pipe\n"]


def test_a_signal_ends_the_wait_for_a_reader_though_its_handler_only_records_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signal after a run only lets its writes finish: 'timeout 20 signal-eval run -o p'
    and Ctrl-C could not end a write waiting on a pipe nothing reads (only kill -9 did)."""
    said = _Said()
    monkeypatch.setattr(sys, "stderr", said)
    heard: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: heard.append(signum))
    fifo = tmp_path / "report.md"
    os.mkfifo(fifo)
    try:
        _when_said(said, lambda: os.kill(os.getpid(), signal.SIGUSR1))
        with pytest.raises(InterruptedError, match="stopped while waiting for a reader"):
            files.append_bytes(fifo, b"never read\n")
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert heard == [signal.SIGUSR1]


def test_a_pipe_that_has_its_data_is_read_without_a_word(
    capsys: pytest.CaptureFixture[str],
) -> None:
    read, write = os.pipe()
    os.write(write, b"x: 1\r\n")
    os.close(write)
    try:
        assert files.read_input_text(f"/dev/fd/{read}") == "x: 1\n"
    finally:
        os.close(read)
    assert capsys.readouterr().err == ""


WIDE = ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"]
BOMS = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff", "utf-32-le": b"\xff\xfe\0\0"}
BOMS["utf-32-be"] = b"\0\0\xfe\xff"
REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("codec", WIDE)
def test_utf16_or_utf32_with_a_byte_order_mark_reads_as_its_text(
    tmp_path: Path, codec: str
) -> None:
    """YAML allows UTF-16 and UTF-32 with a mark (PowerShell's ``Out-File`` writes
    UTF-16): such a dataset was refused as "binary file: expected YAML or JSON text"."""
    path = tmp_path / "d.yaml"
    path.write_bytes(BOMS[codec] + "name: é ☃ 😀\ncases: []\n".encode(codec))
    assert read_input(path) == "name: é ☃ 😀\ncases: []\n".encode()


@pytest.mark.parametrize("codec", WIDE)
def test_utf16_or_utf32_without_a_mark_is_named_not_called_binary(
    tmp_path: Path, codec: str
) -> None:
    path = tmp_path / "d.yaml"
    path.write_bytes("name: x\n".encode(codec))
    with pytest.raises(InputError) as raised:
        read_input(path)
    name = codec.upper()
    assert [str(p) for p in raised.value.problems] == [
        f"{path}:1:1: {name} text without a byte order mark: save it as UTF-8 "
        f"(or as {name} with a byte order mark)"
    ]


def test_utf16_that_its_mark_does_not_describe_is_located(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_bytes(BOMS["utf-16-le"] + "name: x\nid: ab".encode("utf-16-le") + b"\x00\xd8")
    with pytest.raises(InputError) as raised:
        read_input(path)
    assert [str(p) for p in raised.value.problems] == [
        f"{path}:2:7: not UTF-16-LE text (its byte order mark says UTF-16-LE): unexpected end of data"
    ]


def _readers(tmp_path: Path) -> list[tuple[str, Callable[[Path], object], Path]]:
    from signal_eval_cli.loading import load_document
    from signal_eval_cli.persistence import load_result
    from signal_eval_cli.providers.cassette import Cassette
    from signal_eval_cli.signals import read_jsonl, write_jsonl
    from signal_eval_cli.traces import import_trace

    trace = REPO / "datasets/traces/agents-sdk.json"
    signals = tmp_path / "signals.jsonl"
    write_jsonl(import_trace(trace).signals, signals)

    def signal_values(path: Path) -> list[tuple[str, object]]:
        return [(s.name, s.payload) for s in read_jsonl(path)]

    def trace_values(path: Path) -> list[tuple[str, object]]:
        return [(s.name, s.payload) for s in import_trace(path).signals]

    return [
        ("dataset", lambda p: load_document(p).data, REPO / "datasets/code-review.yaml"),
        ("result", lambda p: load_result(p).to_dict(), REPO / "tests/golden/code-review.json"),
        ("cassette", lambda p: Cassette.load(p).entries, REPO / "datasets/cassettes/code-gen.yaml"),
        ("signals", signal_values, signals),
        ("trace", trace_values, trace),
        ("langgraph", trace_values, REPO / "datasets/traces/langgraph.jsonl"),
    ]


def test_every_reader_of_input_files_reads_utf16_with_a_mark(tmp_path: Path) -> None:
    """Datasets, matrices, scenarios, results (compare, merge, report), cassettes,
    signals and traces all read through :func:`read_input`."""
    for kind, read, original in _readers(tmp_path):
        copy = tmp_path / f"copy-{kind}{original.suffix}"
        copy.write_bytes(BOMS["utf-16-le"] + original.read_text().encode("utf-16-le"))
        assert read(copy) == read(original), kind


def test_a_file_that_cannot_be_written_is_named_not_its_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``init`` in a read-only directory said ``ro/.agent.py.15737.mur2qx0m.tmp:
    Read-only file system``: the temp file the atomic write makes, not the user's. (The
    file system's refusal is raised as it would be: the tests run as root.)"""

    def read_only(prefix: str, suffix: str, dir: Path) -> tuple[int, str]:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), f"{dir}/{prefix}x{suffix}")

    monkeypatch.setattr(files.tempfile, "mkstemp", read_only)
    target = tmp_path / "agent.py"
    with pytest.raises(OSError) as raised:
        atomic_write_text(target, "x")
    assert (raised.value.filename, raised.value.strerror) == (str(target), "Read-only file system")
