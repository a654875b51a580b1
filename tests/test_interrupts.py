"""SIGINT, a double Ctrl-C, SIGTERM and SIGHUP keep every finished case (issue 11, finding 6).

Each command (``run``, ``matrix``, ``scenario``) runs 50 units of which the first 10
finish and the rest hang; the signals come once those 10 are done. The results file
must hold exactly the 10, marked interrupted, and the exit code is 128 + the first
signal's number.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from processes import alive, wait_for_line

from signal_eval_cli.process_scope import kill_orphans_of_dead_runs
from signal_eval_cli.scenarios.workspace import remove_dead_runs_workspaces

CLI = Path(sys.executable).parent / "signal-eval"
UNITS, FINISHED = 50, 10
IDS = [f"c{n:02}" for n in range(FINISHED)]
HANG_MS = 600_000
"""The units that hang must not time out (and finish) before the signal comes, however
slowly a busy machine runs the first ten: the default timeouts are 30 s and 60 s."""

HARNESS = """\
import asyncio

def create(**params):
    async def run(input, ctx):
        if input["n"] >= FINISHED:
            await asyncio.sleep(300)  # still running when the signal comes
        ctx.emit("harness:end")
    return run
""".replace("FINISHED", str(FINISHED))


def fifty_cases(directory: Path) -> list[str]:
    (directory / "h.py").write_text(HARNESS)
    cases = "".join(
        f"  - id: c{n:02}\n    input: {{n: {n}}}\n"
        "    assertions: [{type: signal.contains, pattern: harness:end}]\n"
        for n in range(UNITS)
    )
    (directory / "eval.yaml").write_text(
        f"name: fifty\nharness: h.py:create\ndefaultTimeout: {HANG_MS}\ncases:\n{cases}"
    )
    return ["run", "eval.yaml", "--concurrency", "4"]


def fifty_cases_matrix(directory: Path) -> list[str]:
    fifty_cases(directory)
    (directory / "matrix.yaml").write_text(
        "name: m\ndataset: eval.yaml\nvariants:\n  - id: a\n    name: A\n    params: {v: 1}\n"
    )
    return ["matrix", "matrix.yaml", "--concurrency", "4"]


def fifty_scenarios(directory: Path) -> list[str]:
    """Fifty scenarios; from the 11th on the goal sleeps (its command line names
    ``directory``, to be told from anyone else's)."""
    (directory / "fx").mkdir()
    (directory / "fx" / "README").write_text("tiny fixture\n")
    (directory / "scenarios").mkdir()
    for n in range(UNITS):
        script = "pass" if n < FINISHED else f"import time; time.sleep(300)  # {directory}"
        scenario = {
            "id": f"c{n:02}",
            "adapterId": "python-pytest",
            "goals": [
                {
                    "goal": "g",
                    "command": sys.executable,
                    "args": ["-c", script],
                    "timeoutMs": HANG_MS,
                }
            ],
            "fixture": {"path": "fx"},
        }
        (directory / "scenarios" / f"c{n:02}.json").write_text(json.dumps(scenario))
    return ["scenario", "--all", "--dir", "scenarios", "--root", ".", "--concurrency", "4"]


def finished_units(command: str, data: dict[str, Any]) -> list[str]:
    if command == "matrix":
        (variant,) = data["variants"]
        return [c["caseId"] for c in variant["result"]["cases"]]
    if command == "scenario":
        return [s["id"] for s in data["scenarios"]]
    return [c["caseId"] for c in data["cases"]]


COMMANDS: dict[str, Callable[[Path], list[str]]] = {
    "run": fifty_cases,
    "matrix": fifty_cases_matrix,
    "scenario": fifty_scenarios,
}


# The command as a terminal starts it, every signal it is sent handled by default: under
# ``nohup make test`` (SIGHUP ignored) or a background job (SIGINT ignored) the suite's
# own process would hand that "ignored" down, and the command rightly keeps it ignored
# (test_a_signal_ignored_when_the_command_starts_stays_ignored): sent one, it ran on.
AS_FROM_A_TERMINAL = [
    sys.executable,
    "-c",
    "import os, signal, sys\n"
    "for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):\n"
    "    signal.signal(sig, signal.SIG_DFL)\n"
    "os.execv(sys.argv[1], sys.argv[1:])",
]


def start(directory: Path, argv: list[str]) -> subprocess.Popen[str]:
    (directory / "out").mkdir(exist_ok=True)
    (directory / "tmp").mkdir(exist_ok=True)
    return subprocess.Popen(
        [*AS_FROM_A_TERMINAL, CLI, *argv, "-o", "out/r.json"],
        cwd=directory,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(directory / "tmp")},  # where workspaces are made
    )


def wait_until_finished(directory: Path, process: subprocess.Popen[str]) -> None:
    """Return once FINISHED units are in the run's journal (the rest hang)."""
    journal = directory / "out" / "r.json.journal.jsonl"
    assert process.stderr is not None
    wait_for_line(process.stderr, lambda line: False, 0)  # returns at once; drains the pipe
    deadline = time.monotonic() + 300  # a bound on a hang, not on speed
    while time.monotonic() < deadline and process.poll() is None:
        if journal.exists() and journal.read_text().count("\n") > FINISHED:  # + the header
            return
        time.sleep(0.02)
    raise AssertionError(f"{FINISHED} units never finished; exit {process.poll()}")


def interrupted_run(
    directory: Path, argv: list[str], signals: list[int], gap_s: float = 0.0
) -> subprocess.Popen[str]:
    process = start(directory, argv)
    try:
        wait_until_finished(directory, process)
        for n, sig in enumerate(signals):
            if n and gap_s:
                time.sleep(gap_s)  # the next one at a later point of the unwinding
            process.send_signal(sig)
        process.wait(timeout=120)
    finally:
        if process.poll() is None:  # the test fails; as the next scenario run would,
            process.kill()  # end the goals this kill -9 leaves and unmount its workspaces
            process.wait()
            kill_orphans_of_dead_runs()
            remove_dead_runs_workspaces(directory / "tmp")
    return process


def check_kept(directory: Path, command: str) -> None:
    result = json.loads((directory / "out" / "r.json").read_text())
    assert result["interrupted"] is True
    assert finished_units(command, result) == IDS
    assert not list((directory / "out").glob(".*tmp"))  # no half-written temp file left


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("signals", "code"),
    [
        ([signal.SIGINT], 130),
        ([signal.SIGINT, signal.SIGINT], 130),
        ([signal.SIGTERM], 143),
        ([signal.SIGHUP], 129),
        ([signal.SIGTERM, signal.SIGINT, signal.SIGHUP], None),  # pending together: any wins
    ],
    ids=["sigint", "double-ctrl-c", "sigterm", "sighup", "term-then-more"],
)
def test_a_signal_keeps_every_finished_unit_and_exits_128_plus_n(
    tmp_path: Path, command: str, signals: list[int], code: int | None
) -> None:
    process = interrupted_run(tmp_path, COMMANDS[command](tmp_path), signals)
    assert process.returncode == code if code else process.returncode in (129, 130, 143)
    check_kept(tmp_path, command)
    assert not list((tmp_path / "tmp").iterdir())  # no workspace left behind
    left = [pid for pid in _children_named(str(tmp_path).encode()) if alive(pid)]
    assert not left, f"goals outlived the run: {left}"  # a scenario's sleep names tmp_path


def _children_named(text: bytes) -> set[int]:
    """Live processes whose command line holds ``text``."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text in (entry / "cmdline").read_bytes():
                found.add(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("command", COMMANDS)
def test_double_ctrl_c_never_skips_the_write(tmp_path: Path, command: str) -> None:
    """The second Ctrl-C lands at different points of the unwinding and of the write."""
    argv = COMMANDS[command](tmp_path)
    for gap_ms in (1, 2, 5, 10, 20):  # 0: the double-ctrl-c case above
        (tmp_path / "out" / "r.json").unlink(missing_ok=True)
        (tmp_path / "out" / "r.json.journal.jsonl").unlink(missing_ok=True)
        process = interrupted_run(tmp_path, argv, [signal.SIGINT] * 2, gap_s=gap_ms / 1000)
        assert process.returncode == 130, gap_ms
        check_kept(tmp_path, command)


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGINT], ids=["nohup", "background"])
def test_a_signal_ignored_when_the_command_starts_stays_ignored(sig: int) -> None:
    """``nohup signal-eval run …`` survives the terminal closing; a job a script started
    in the background (SIGINT ignored) is not stopped by a Ctrl-C meant for the shell."""
    from signal_eval_cli.interrupts import interrupts

    before = signal.signal(sig, signal.SIG_IGN)
    try:
        with interrupts() as caught:
            assert signal.getsignal(sig) is signal.SIG_IGN
            os.kill(os.getpid(), sig)  # ignored by the kernel: nothing is delivered
            other = signal.SIGTERM
            assert signal.getsignal(other) == caught.handle  # the others are still ours
        assert caught.received is None
        assert signal.getsignal(sig) is signal.SIG_IGN
    finally:
        signal.signal(sig, before)
