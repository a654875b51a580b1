"""The run journal, --resume and --retry through the real CLI: kill -9 at random
moments then resume, refusals when what the results mean changed, retries that run
only the errored (failed) cases."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from signal_eval_cli.errors import InputError
from signal_eval_cli.journal import (
    BUSY,
    SYNC_EVERY_S,
    Journal,
    JournalHeader,
    journal_path,
    read_journal,
)
from signal_eval_cli.resume import open_journal

CLI = Path(sys.executable).parent / "signal-eval"
HERE = Path(__file__).parent

HARNESS = """\
import asyncio
from pathlib import Path

def create():
    async def run(input, ctx):
        with open(Path(__file__).with_name("calls.log"), "a") as log:
            log.write(ctx.case_id + "\\n")
        await asyncio.sleep(input["sleep"])
        if input.get("boom") and not Path(__file__).with_name("fixed").exists():
            raise RuntimeError("boom")
        ctx.emit("harness:end", {"output": input["text"]})
    return run
"""


def write_eval(directory: Path, n: int = 16, *, text: str = "t") -> Path:
    (directory / "h.py").write_text(HARNESS)
    cases = []
    for i in range(n):
        boom = "true" if i % 7 == 3 else "false"
        pattern = "nope" if i % 7 == 5 else "harness:end"  # fails, without an error
        cases.append(
            f"  - id: c{i}\n"
            f"    input: {{sleep: {0.002 * (i % 5)}, boom: {boom}, text: {text}{i}}}\n"
            f"    assertions: [{{type: signal.contains, pattern: '{pattern}'}}]\n"
        )
    path = directory / "eval.yaml"
    path.write_text("name: journal\nharness: h.py:create\ncases:\n" + "".join(cases))
    return path


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def case_ids(output: Path) -> list[str]:
    return [c["caseId"] for c in json.loads(output.read_text())["cases"]]


def calls(directory: Path) -> list[str]:
    log = directory / "calls.log"
    return log.read_text().split() if log.exists() else []


class Forker:
    """tests/forking_cli.py: forked CLI runs, started in milliseconds."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "forking_cli.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        reply: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return reply

    def start(self, argv: list[str], cwd: Path) -> int:
        return int(self._ask({"run": argv, "cwd": str(cwd)})["pid"])

    def wait(self, pid: int) -> int:
        return int(self._ask({"wait": pid})["rc"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture
def forker() -> Iterator[Forker]:
    f = Forker()
    try:
        yield f
    finally:
        f.close()


def entry_lines(path: Path) -> int:
    try:
        return max(0, path.read_bytes().count(b"\n") - 1)
    except OSError:
        return 0


def test_kill_9_at_random_moments_then_resume_keeps_every_case_exactly_once(
    tmp_path: Path, forker: Forker
) -> None:
    n = 10
    rng = random.Random(16)
    expected: dict[str, bool] | None = None
    midway = 0
    for trial in range(20):
        directory = tmp_path / f"t{trial}"
        directory.mkdir()
        path = write_eval(directory, n)
        output = directory / "out.json"
        journal = journal_path(output)
        argv = ["run", path.name, "-o", output.name, "-q", "--concurrency", "3"]
        pid = forker.start(argv, directory)
        target = rng.randint(0, n)  # kill once this many cases are in the journal…
        deadline = time.monotonic() + 60
        while entry_lines(journal) < target and time.monotonic() < deadline:
            time.sleep(0.002)
        time.sleep(rng.random() * 0.01)  # …plus a little: anywhere in a case or a write
        os.kill(pid, signal.SIGKILL)
        killed = forker.wait(pid)
        assert killed in (-signal.SIGKILL, 0, 1), killed
        kept = read_journal(journal).entries if journal.exists() else {}
        midway += killed == -signal.SIGKILL and 0 < len(kept) < n
        rc = forker.wait(forker.start([*argv, "--resume"], directory))
        assert rc == 1, f"trial {trial}: resume exited {rc}"  # two cases fail on purpose
        ids = case_ids(output)
        assert ids == [f"c{i}" for i in range(n)], f"trial {trial}: {ids}"
        # a case finished before the kill was not run again
        ran_again = calls(directory)[len(calls(directory)) - (n - len(kept)) :]
        assert not {case for (_, case) in kept} & set(ran_again)
        outcome = {c["caseId"]: c["passed"] for c in json.loads(output.read_text())["cases"]}
        expected = expected or outcome
        assert outcome == expected
        lines = [json.loads(x) for x in journal.read_text().splitlines()[1:]]
        assert sorted(e["case"] for e in lines) == sorted(f"c{i}" for i in range(n))
    assert expected is not None and sum(expected.values()) == n - 2
    assert midway >= 5, f"only {midway} of 20 kills landed mid-run"


def test_a_changed_dataset_refuses_to_resume_and_force_overrides(tmp_path: Path) -> None:
    path = write_eval(tmp_path, 6)
    first = cli("run", "eval.yaml", "-o", "out.json", "-q", cwd=tmp_path)
    assert first.returncode == 1, first.stderr
    journal = journal_path(tmp_path / "out.json")
    before = journal.read_bytes(), (tmp_path / "out.json").read_bytes()
    path.write_text(path.read_text().replace("text: t1}", "text: changed1}"))
    refused = cli("run", "eval.yaml", "-o", "out.json", "-q", "--resume", cwd=tmp_path)
    assert refused.returncode == 2
    assert "cannot resume: the dataset changed" in refused.stderr
    assert "--force" in refused.stderr and "Traceback" not in refused.stderr
    assert (journal.read_bytes(), (tmp_path / "out.json").read_bytes()) == before
    again = cli("run", "eval.yaml", "-o", "out.json", "-q", "--retry", "errored", cwd=tmp_path)
    assert again.returncode == 2 and "the dataset changed" in again.stderr
    forced = cli("run", "eval.yaml", "-o", "out.json", "-q", "--resume", "--force", cwd=tmp_path)
    assert forced.returncode == 1, forced.stderr
    assert len(calls(tmp_path)) == 6  # everything was kept: nothing ran again


def test_a_comment_does_not_change_the_meaning_but_a_param_does(tmp_path: Path) -> None:
    path = write_eval(tmp_path, 4)
    assert cli("run", "eval.yaml", "-o", "out.json", "-q", cwd=tmp_path).returncode == 1
    path.write_text("# a comment\n" + path.read_text())
    kept = cli("run", "eval.yaml", "-o", "out.json", "-q", "--resume", cwd=tmp_path)
    assert kept.returncode == 1, kept.stderr
    assert len(calls(tmp_path)) == 4
    changed = cli(
        "run", "eval.yaml", "-o", "out.json", "-q", "--resume", "--timeout", "900", cwd=tmp_path
    )
    assert changed.returncode == 2
    assert "the params or run options changed" in changed.stderr and "900" in changed.stderr
    (tmp_path / "h.py").write_text(HARNESS + "\n# edited\n")
    edited = cli("run", "eval.yaml", "-o", "out.json", "-q", "--resume", cwd=tmp_path)
    assert edited.returncode == 2 and "the harness changed" in edited.stderr


def test_retry_errored_reruns_only_the_errored_cases(tmp_path: Path) -> None:
    write_eval(tmp_path, 16)
    assert cli("run", "eval.yaml", "-o", "out.json", "-q", cwd=tmp_path).returncode == 1
    errored = {
        c["caseId"]
        for c in json.loads((tmp_path / "out.json").read_text())["cases"]
        if c.get("error")
    }
    assert errored == {"c3", "c10"}
    (tmp_path / "fixed").write_text("")
    (tmp_path / "calls.log").unlink()
    retried = cli("run", "eval.yaml", "-o", "out.json", "-q", "--retry", "errored", cwd=tmp_path)
    assert retried.returncode == 1, retried.stderr  # c5 and c12 still fail their assertion
    assert sorted(calls(tmp_path)) == ["c10", "c3"]
    cases = json.loads((tmp_path / "out.json").read_text())["cases"]
    assert [c["caseId"] for c in cases] == [f"c{i}" for i in range(16)]
    assert {c["caseId"] for c in cases if not c["passed"]} == {"c5", "c12"}
    (tmp_path / "calls.log").unlink()
    failed = cli("run", "eval.yaml", "-o", "out.json", "-q", "--retry", "failed", cwd=tmp_path)
    assert failed.returncode == 1
    assert sorted(calls(tmp_path)) == ["c12", "c5"]


def test_a_torn_last_line_is_dropped_and_a_damaged_one_refused(tmp_path: Path) -> None:
    write_eval(tmp_path, 5)
    assert cli("run", "eval.yaml", "-o", "out.json", "-q", cwd=tmp_path).returncode == 1
    journal = journal_path(tmp_path / "out.json")
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:-1]) + lines[-1][:40])  # a crash mid-write
    (tmp_path / "calls.log").unlink()
    resumed = cli("run", "eval.yaml", "-o", "out.json", "-q", "--resume", cwd=tmp_path)
    assert resumed.returncode == 1, resumed.stderr
    assert len(calls(tmp_path)) == 1  # only the torn case ran again
    assert case_ids(tmp_path / "out.json") == [f"c{i}" for i in range(5)]
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(lines[0] + b"{not json\n" + b"".join(lines[1:]))
    damaged = cli("run", "eval.yaml", "-o", "out.json", "-q", "--resume", cwd=tmp_path)
    assert damaged.returncode == 2
    assert f"{journal.name}:2:2: damaged journal entry: invalid JSON" in damaged.stderr


@pytest.mark.parametrize("resume", [False, True])
@pytest.mark.parametrize("kind", ["a named pipe", "a device"])
def test_a_journal_path_that_is_no_file_is_refused(tmp_path: Path, kind: str, resume: bool) -> None:
    """A named pipe where the journal goes hung the run (its first write waited for a
    reader for ever); a symlink to /dev/zero was written to, and its fsync thread died
    with a traceback (with --resume: read for ever)."""
    journal = journal_path(tmp_path / "out.json")
    if kind == "a named pipe":
        os.mkfifo(journal)
    else:
        journal.symlink_to("/dev/zero")
    header = JournalHeader("dataset", "d", ["a"], {})
    with pytest.raises(InputError) as raised:
        open_journal(tmp_path / "out.json", header, resume=resume)
    (problem,) = raised.value.problems
    assert (problem.file, problem.message) == (
        str(journal),
        f"is {kind}, not a journal: remove it, or write the results elsewhere",
    )


def test_resume_needs_an_output_and_starts_afresh_without_a_journal(tmp_path: Path) -> None:
    write_eval(tmp_path, 3)
    no_output = cli("run", "eval.yaml", "-q", "--resume", cwd=tmp_path)
    assert no_output.returncode == 2 and "--resume needs --output" in no_output.stderr
    bad = cli("run", "eval.yaml", "-o", "o.json", "-q", "--retry", "flaky", cwd=tmp_path)
    assert bad.returncode == 2 and "--retry must be errored or failed" in bad.stderr
    fresh = cli("run", "eval.yaml", "-o", "o.json", "-q", "--resume", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stderr
    assert "starting from the beginning" in fresh.stderr
    assert case_ids(tmp_path / "o.json") == ["c0", "c1", "c2"]


def test_the_results_file_is_built_from_the_journal(tmp_path: Path) -> None:
    write_eval(tmp_path, 4)
    done = cli("run", "eval.yaml", "-o", "out.json", "-q", "--signals", "all", cwd=tmp_path)
    assert done.returncode == 1
    journal = read_journal(journal_path(tmp_path / "out.json"))
    saved = json.loads((tmp_path / "out.json").read_text())["cases"]
    for case in saved:
        assert journal.entries[("", case["caseId"])] == case


def test_an_unwritable_journal_is_an_input_error_before_anything_runs(tmp_path: Path) -> None:
    write_eval(tmp_path, 2)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "out.json.journal.jsonl").mkdir()  # the journal's path is taken by a folder
    done = cli("run", "eval.yaml", "-o", "locked/out.json", "-q", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "is a directory, not a journal" in done.stderr and "Traceback" not in done.stderr
    assert calls(tmp_path) == []


def test_the_library_decides_what_a_retry_keeps_and_refuses_an_unwritable_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From Python, as the commands use it: ``open_journal`` keeps the finished units a
    ``--retry failed`` does not run again, counts the kept ones of this shard; its entries
    are the kept ones and those recorded since (from memory: the journal is not read
    again once open), as the file holds them; a journal whose path is taken is an
    InputError located at it."""
    header = JournalHeader("dataset", "d", ["c1", "c2", "c3"], {"v": "1"})
    output = tmp_path / "out.json"
    first = open_journal(output, header)
    first.record(("", "c1"), {"passed": True})
    first.record(("", "c2"), {"passed": False})
    first.close()
    again = open_journal(output, header, retry="failed")
    assert (list(again.kept), again.retried) == ([("", "c1")], [("", "c2")])
    assert (again.kept_of(["c1", "c2"]), again.kept_of(["c3"])) == (1, 0)
    monkeypatch.setattr("signal_eval_cli.resume.read_journal", None)  # not called again
    again.record(("", "c3"), {"passed": True})
    again.record(("", "c2"), {"passed": True, "n": 2})
    entries = again.entries()
    assert entries == read_journal(journal_path(output)).entries
    assert entries == {
        ("", "c1"): {"passed": True},
        ("", "c3"): {"passed": True},
        ("", "c2"): {"passed": True, "n": 2},
    }
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "out.json.journal.jsonl").mkdir()
    with pytest.raises(InputError, match="is a directory, not a journal") as refused:
        open_journal(tmp_path / "taken" / "out.json", header)
    assert refused.value.problems[0].file == str(tmp_path / "taken" / "out.json.journal.jsonl")


def test_a_line_is_readable_before_its_fsync_and_close_waits_for_the_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fsync runs behind the writes (an fsync per case on the event loop serialized
    the run behind the disk); the line is in the file at once, and close() syncs it."""
    path = tmp_path / "out.json.journal.jsonl"
    journal = Journal.start(path, JournalHeader("dataset", "d", ["c1"], {}))
    disk = threading.Event()
    synced: list[int] = []
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        disk.wait(60)
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    writer = threading.Thread(target=journal.record, args=(("", "c1"), {"passed": True}))
    writer.start()
    writer.join(30)
    assert not writer.is_alive(), "record() waited for the disk"
    assert read_journal(path).entries == {("", "c1"): {"passed": True}}
    closer = threading.Thread(target=journal.close)
    closer.start()
    closer.join(0.2)
    assert closer.is_alive(), "close() returned before the fsync"
    disk.set()
    closer.join(30)
    assert not closer.is_alive() and synced


def test_a_journal_the_disk_cannot_hold_is_named_in_the_error() -> None:
    """A full disk mid-run said only 'No space left on device' (exit 2): which file?
    /dev/full fails every write with ENOSPC, as a full disk does."""
    journal = Journal(Path("/dev/full"))
    with pytest.raises(OSError) as record:
        journal.record(("", "c1"), {"passed": True})
    with pytest.raises(OSError) as close:  # the line still buffered: the close fails too
        journal.close()
    for raised in (record.value, close.value):
        assert raised.filename == "/dev/full"
        assert raised.strerror == "cannot write: No space left on device"
    journal.close()  # closed once and for all: nothing left to fail


def test_a_second_run_on_the_same_output_is_refused_while_the_first_writes(
    tmp_path: Path,
) -> None:
    """Two runs with one -o both wrote the journal: the second replaced the first's, whose
    lines went on into a file no longer there, and --resume read the other run's."""
    output = tmp_path / "out.json"
    header = JournalHeader("dataset", "d", ["c1"], {})
    first = open_journal(output, header).journal
    assert first is not None
    first.record(("", "c1"), {"passed": True})
    for again in (False, True):
        with pytest.raises(InputError) as refused:
            open_journal(output, header, resume=again)
        assert str(refused.value) == f"{journal_path(output)}: {BUSY}"
    first.close()
    plan = open_journal(output, header, resume=True)  # the first's line is there to keep
    assert plan.journal is not None and list(plan.kept) == [("", "c1")]
    plan.journal.close()


@pytest.mark.parametrize(
    "held",
    [b"", b'{"signalEvalJournal": 1, "kind": "da', b"\0" * 5000],
    ids=["empty", "torn-header", "zeros"],
)
def test_resume_of_a_journal_killed_before_its_header_starts_afresh(
    tmp_path: Path, held: bytes
) -> None:
    """The lock's file made, the run killed before (or while) writing its header: nothing
    finished. A torn header, or the zeros a power cut may leave, was refused ('not a
    signal-eval journal: it is empty'), and --resume could not go on without rm."""
    output = tmp_path / "out.json"
    journal_path(output).write_bytes(held)
    plan = open_journal(output, JournalHeader("dataset", "d", ["c1"], {}), resume=True)
    assert plan.journal is not None and plan.fresh
    plan.journal.close()


def test_record_returns_the_unit_as_the_journal_holds_it(tmp_path: Path) -> None:
    """The run builds its results from what record returns, never reading the journal
    back: the unit itself when its line holds it as it is; the line decoded when a value
    had to be written as its str, or when the unit is not settled (a timed-out harness
    may still change it)."""
    path = tmp_path / "out.json.journal.jsonl"
    journal = Journal.start(path, JournalHeader("dataset", "d", ["a", "b", "c"], {}))
    plain = {"passed": True, "signals": [{"name": "x", "payload": {"n": 1.5}}]}
    odd = {"passed": True, "finalState": {"when": Path("/x")}}
    moving = {"passed": False, "finalState": {"n": 1}}
    assert journal.record(("", "a"), plain) is plain
    assert journal.record(("", "b"), odd) == {"passed": True, "finalState": {"when": "/x"}}
    held = journal.record(("", "c"), moving, settled=False)
    moving["finalState"]["n"] = 2  # the harness goes on after the case was recorded
    assert held == {"passed": False, "finalState": {"n": 1}}
    journal.close()
    read = read_journal(path).entries
    assert read == {
        ("", "a"): plain,
        ("", "b"): dict(held, passed=True, finalState={"when": "/x"}),
        ("", "c"): held,
    }


def test_a_payload_json_cannot_write_is_recorded_writable_not_a_crash(tmp_path: Path) -> None:
    """A harness's payload that holds itself, or is nested deeper than JSON's encoder
    goes, raised out of record and ended the run with a traceback and no results file:
    it is written with the cycle or the depth cut, and record returns what was written."""
    path = tmp_path / "out.json.journal.jsonl"
    journal = Journal.start(path, JournalHeader("dataset", "d", ["a", "b"], {}))
    looped: dict[str, Any] = {"n": 1}
    looped["self"] = looped
    looped["twice"] = [looped, {"n": 2}]
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    first = journal.record(
        ("", "a"), {"passed": True, "signals": [{"name": "s", "payload": looped}]}
    )
    second = journal.record(
        ("", "b"), {"passed": True, "signals": [{"name": "s", "payload": deep}]}
    )
    journal.close()
    cut = {"n": 1, "self": "<cycle>", "twice": ["<cycle>", {"n": 2}]}
    assert first == {"passed": True, "signals": [{"name": "s", "payload": cut}]}
    kept = second["signals"][0]["payload"]
    for _ in range(200 - 3):  # the result, its signals and the signal are levels too
        (kept,) = kept
    assert kept == "<nested too deep>"
    assert read_journal(path).entries == {("", "a"): first, ("", "b"): second}


def test_a_run_whose_harness_emits_a_payload_holding_itself_writes_its_results(
    tmp_path: Path,
) -> None:
    (tmp_path / "loop.py").write_text(
        "def run(input, ctx):\n"
        "    p = {'a': 1}\n"
        "    p['self'] = p\n"
        "    ctx.emit('x', p)\n"
        "\n"
        "def make():\n"
        "    return run\n"
    )
    (tmp_path / "d.yaml").write_text(
        "name: loop\nharness: {factory: 'loop.py:make'}\ncases:\n"
        "  - {id: c1, input: hi, assertions: [{type: signal.contains, pattern: x}]}\n"
    )
    done = cli("run", "d.yaml", "-o", "out.json", "-q", "--signals", "all", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (case,) = json.loads((tmp_path / "out.json").read_text())["cases"]
    (signal,) = [s for s in case["signals"] if s["name"] == "x"]
    assert signal["payload"] == {"a": 1, "self": "<cycle>"}


def test_lines_recorded_apart_share_their_fsyncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One fsync per case costs kernel time for nothing: the syncing thread gathers what
    was flushed for up to SYNC_EVERY_S after each fsync, so 60 lines recorded 5 ms apart
    take a few fsyncs (one each, before); close() still syncs the tail."""
    path = tmp_path / "out.json.journal.jsonl"
    journal = Journal.start(path, JournalHeader("dataset", "d", [], {}))
    synced: list[int] = []
    real_fsync = os.fsync

    def counting(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting)
    began = time.monotonic()
    for i in range(60):
        journal.record(("", f"c{i}"), {"passed": True})
        time.sleep(0.005)
    took = time.monotonic() - began
    journal.close()
    assert len(read_journal(path).entries) == 60
    # one per window of SYNC_EVERY_S, one as the syncer stops, one in close()
    assert 1 <= len(synced) <= 3 + took / SYNC_EVERY_S < 60, (len(synced), took)


def test_a_value_json_cannot_write_is_recorded_as_text_not_a_crash(tmp_path: Path) -> None:
    """An integer past Python's 4,300-digit limit for text, and an object whose ``str``
    raises, ended the run in a traceback with no results file, as a cycle did."""

    class Unprintable:
        def __str__(self) -> str:
            raise ValueError("no text")

    path = tmp_path / "out.json.journal.jsonl"
    journal = Journal.start(path, JournalHeader("dataset", "d", ["a"], {}))
    payload = {"big": 10**5000, "odd": Unprintable(), "fine": 10**10, (1, 2): "tuple key"}
    kept = journal.record(
        ("", "a"), {"passed": True, "signals": [{"name": "s", "payload": payload}]}
    )
    journal.close()
    written = kept["signals"][0]["payload"]
    assert written == {
        "big": "<integer of 5001 digits>",
        "odd": "<Unprintable>",
        "fine": 10**10,
        "(1, 2)": "tuple key",
    }
    assert read_journal(path).entries == {("", "a"): kept}


@pytest.mark.parametrize(
    ("kind", "result", "message"),
    [
        ("dataset", {"caseId": "a", "passed": "false"}, ":2:66: 'passed': expected true or false"),
        ("dataset", {"caseId": "a", "passed": False, "metrics": {"cost": "1"}}, "'cost': expected"),
        (
            "dataset",
            {"caseId": "b", "passed": True},
            ":2:40: damaged journal entry: its result is caseId 'b', not 'a'",
        ),
        ("matrix", {"caseId": "a"}, "damaged journal entry: its result has no 'passed'"),
        ("scenarios", {"id": "a", "passed": 1}, ":2:62: 'passed': expected true or false"),
        (
            "scenarios",
            {"id": "a", "passed": True, "goals": [{"status": "passed"}]},
            ":2:78: missing required field 'goal'",
        ),
        (
            "scenario-matrix",
            {"passed": True, "patternAssertions": [{"assertion": "x"}]},
            ":2:93: 'assertion': expected a mapping, got a string",
        ),
    ],
    ids=[
        "string-passed",
        "string-cost",
        "another-case",
        "no-passed",
        "scenario-passed",
        "goal-without-name",
        "pattern-not-a-mapping",
    ],
)
def test_a_journal_entry_edited_by_hand_is_a_located_error(
    tmp_path: Path, kind: str, result: dict[str, Any], message: str
) -> None:
    """``"passed": "false"`` in a journal was resumed as a pass (exit 0), and a result
    with no ``passed`` (a scenario goal without its name, a pattern assertion that is
    not a mapping) ended the resumed run in a traceback."""
    path = tmp_path / "out.json.journal.jsonl"
    Journal.start(path, JournalHeader(kind, "d", ["a"], {})).close()
    with path.open("a", encoding="utf-8") as journal:
        journal.write(json.dumps({"variant": "", "case": "a", "result": result}) + "\n")
    with pytest.raises(InputError, match=message):
        read_journal(path)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (b'"passed": true}', ":3:55: damaged journal entry: invalid JSON: Expecting ',' delimiter"),
        (b'"note": "caf\xe9"}', ":3:67: damaged journal entry: not UTF-8 text"),
    ],
)
def test_a_journal_entry_broken_mid_line_is_located_at_the_break(
    tmp_path: Path, damage: bytes, message: str
) -> None:
    """The column where the entry's text breaks (the comma that is missing before
    ``"passed"``, the byte that is not UTF-8): it was reported at column 1, with JSON's own
    "line 1 column 55" (of the entry alone) in the message."""
    path = tmp_path / "out.json.journal.jsonl"
    Journal.start(path, JournalHeader("dataset", "d", ["a", "b"], {})).close()
    good = json.dumps({"variant": "", "case": "a", "result": {"passed": True}})
    broken = json.dumps({"variant": "", "case": "b", "result": {"caseId": "b"}}).encode()
    with path.open("ab") as journal:
        journal.write(good.encode() + b"\n" + broken[:-2] + b" " + damage + b"}\n")
    with pytest.raises(InputError) as raised:
        read_journal(path)
    assert str(raised.value).startswith(f"{path}{message}"), str(raised.value)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (2, ":2:1: damaged journal entry: no field 'case'"),
        (1, ":1:1: damaged journal header: no field 'order'"),
    ],
)
def test_a_journal_line_missing_a_field_names_it(tmp_path: Path, line: int, message: str) -> None:
    """A header or entry without a field read "KeyError: 'case'", as if the code failed."""
    path = tmp_path / "out.json.journal.jsonl"
    Journal.start(path, JournalHeader("dataset", "d", ["a"], {})).close()
    with path.open("a", encoding="utf-8") as journal:
        journal.write(json.dumps({"variant": "", "case": "a", "result": {"passed": True}}) + "\n")
    lines = [json.loads(text) for text in path.read_text().splitlines()]
    del lines[line - 1][{1: "order", 2: "case"}[line]]
    path.write_text("".join(json.dumps(item) + "\n" for item in lines))
    with pytest.raises(InputError, match=message):
        read_journal(path)


@pytest.mark.parametrize(
    ("version", "shown"), [('"1"', '"1"'), ("true", "true"), ("1.0", "1.0"), ("2", "2")]
)
def test_a_journal_of_another_version_is_refused_showing_the_version_as_written(
    tmp_path: Path, version: str, shown: str
) -> None:
    """The string "1" read "journal version '1' is not supported (this signal-eval reads
    1)", as if the versions were the same; true and 1.0 passed for 1."""
    path = tmp_path / "out.json.journal.jsonl"
    Journal.start(path, JournalHeader("dataset", "d", ["a"], {})).close()
    header = path.read_text(encoding="utf-8").replace(
        '"signalEvalJournal": 1', f'"signalEvalJournal": {version}', 1
    )
    assert header != path.read_text(encoding="utf-8")
    path.write_text(header, encoding="utf-8")
    with pytest.raises(InputError) as refused:
        read_journal(path)
    assert str(refused.value).endswith(
        f"journal version {shown} is not supported (this signal-eval reads the number 1)"
    )


def test_a_journal_given_as_results_says_what_it_is_and_validates(tmp_path: Path) -> None:
    """``compare base.json out.json.journal.jsonl`` (a run still going, or cut off) said
    "not a result file: invalid JSON: Extra data", and ``validate`` read it as a trace:
    one "not a signal" per case."""
    from signal_eval_cli.persistence import load_result
    from signal_eval_cli.validate import validate_path

    path = tmp_path / "out.json.journal.jsonl"
    journal = Journal.start(path, JournalHeader("dataset", "d", ["c1", "c2"], {}))
    journal.record(("", "c1"), {"caseId": "c1", "passed": True})
    journal.close()
    with pytest.raises(InputError) as raised:
        load_result(path)
    assert [str(p) for p in raised.value.problems] == [
        f"{path}:1:1: a run's journal (the cases it has finished), not a results file: the "
        f"run writes {tmp_path / 'out.json'} when it ends; one that was cut off is finished "
        "by running it again with the same --output and --resume"
    ]
    assert validate_path(path) == ("journal", [])
    path.write_text('{"signalEvalJournal": 1}\n')
    assert [p.message for p in validate_path(path)[1]] == [
        "damaged journal header: no field 'kind'"
    ]
