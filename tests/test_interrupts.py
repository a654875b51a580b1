"""SIGTERM, SIGHUP and a double Ctrl-C keep every finished case (issue 11, finding 6)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLI = Path(sys.executable).parent / "signal-eval"
FINISHED = 10

HARNESS = """\
import asyncio

def create():
    async def run(input, ctx):
        if input["n"] >= FINISHED:
            await asyncio.sleep(300)  # still running when the signal comes
        ctx.emit("harness:end")
    return run
""".replace("FINISHED", str(FINISHED))


def fifty_cases(directory: Path) -> None:
    (directory / "h.py").write_text(HARNESS)
    cases = "".join(
        f"  - id: c{n:02}\n    input: {{n: {n}}}\n"
        "    assertions: [{type: signal.contains, pattern: harness:end}]\n"
        for n in range(50)
    )
    (directory / "eval.yaml").write_text(f"name: fifty\nharness: h.py:create\ncases:\n{cases}")


def run_until_finished(directory: Path) -> subprocess.Popen[str]:
    """Start the run; return once FINISHED cases are reported done (the rest hang)."""
    process = subprocess.Popen(
        [CLI, "run", "eval.yaml", "--concurrency", "4", "-o", "out/r.json"],
        cwd=directory,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    done = 0
    for line in process.stderr:  # one "[k/50] id: pass" line per finished case
        done += ": pass" in line
        if done == FINISHED:
            return process
    raise AssertionError(f"only {done} cases finished; exit {process.wait()}")


@pytest.mark.parametrize(
    ("signals", "code"),
    [
        ([signal.SIGTERM], 143),
        ([signal.SIGHUP], 129),
        ([signal.SIGINT, signal.SIGINT], 130),
        ([signal.SIGTERM, signal.SIGINT, signal.SIGHUP], None),  # pending together: any wins
    ],
    ids=["sigterm", "sighup", "double-ctrl-c", "term-then-more"],
)
def test_a_signal_keeps_every_finished_case_and_exits_128_plus_n(
    tmp_path: Path, signals: list[int], code: int | None
) -> None:
    fifty_cases(tmp_path)
    (tmp_path / "out").mkdir()
    process = run_until_finished(tmp_path)
    try:
        for sig in signals:  # back to back: the later ones arrive during the unwinding
            process.send_signal(sig)
        process.wait(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == code if code else process.returncode in (129, 130, 143)
    result = json.loads((tmp_path / "out" / "r.json").read_text())
    assert result["interrupted"] is True
    assert [c["caseId"] for c in result["cases"]] == [f"c{n:02}" for n in range(FINISHED)]
    assert not list((tmp_path / "out").glob(".*tmp"))  # no half-written temp file left


@pytest.mark.skip(
    reason="known defect (issue 11, open): a second Ctrl-C during asyncio's graceful "
    "cancellation still skips the write; see the closing note"
)
def test_double_ctrl_c_never_skips_the_write(tmp_path: Path) -> None:
    fifty_cases(tmp_path)
    for trial in range(6):
        out = tmp_path / "out"
        out.mkdir(exist_ok=True)
        (out / "r.json").unlink(missing_ok=True)
        process = run_until_finished(tmp_path)
        try:
            process.send_signal(signal.SIGINT)
            time.sleep(0.001 * trial)  # the second one at a different point of the unwinding
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)
        finally:
            process.kill()
            process.wait()
        assert process.returncode == 130, trial
        assert len(json.loads((out / "r.json").read_text())["cases"]) == FINISHED, trial
