"""The runner against harnesses that misbehave: stuck threads, their own cancellations
and exits, a blocked event loop; plus filters that select nothing, fail-fast with skipped
cases and where a harness error was raised. Process-level behaviour goes through the
real CLI in a subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from signal_eval_cli import EvalCase, EvalDataset, HarnessContext, RunOptions, run_dataset
from signal_eval_cli.results import CaseResult, DatasetResult

CLI = Path(sys.executable).parent / "signal-eval"
ENDS = [{"type": "signal.contains", "pattern": "harness:end"}]

STUCK_HARNESS = """\
import time
from pathlib import Path

def create():
    def run(input, ctx):
        if input.get("stuck"):
            Path(__file__).with_name("started").write_text("yes")
            time.sleep(600)  # far longer than any bound below: waiting for it shows
        ctx.emit("harness:end")
    return run
"""


def write_stuck(directory: Path, ids: list[str], stuck: str) -> Path:
    (directory / "h.py").write_text(STUCK_HARNESS)
    cases = "".join(
        f"  - id: {i}\n    input: {{stuck: {'true' if i == stuck else 'false'}}}\n"
        "    assertions: [{type: signal.contains, pattern: harness:end}]\n"
        for i in ids
    )
    path = directory / "eval.yaml"
    path.write_text(f"name: stuck\nharness: h.py:create\ncases:\n{cases}")
    return path


def test_a_stuck_sync_harness_neither_starves_later_cases_nor_keeps_the_process(
    tmp_path: Path,
) -> None:
    path = write_stuck(tmp_path, ["a", "b", "c"], stuck="b")
    output = tmp_path / "out.json"
    args = ["run", str(path), "--timeout", "1000", "--concurrency", "1", "--quiet"]
    started = time.monotonic()
    done = subprocess.run(
        [str(CLI), *args, "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 1, done.stdout + done.stderr
    cases = {c["caseId"]: c for c in json.loads(output.read_text())["cases"]}
    assert cases["a"]["passed"] and cases["c"]["passed"], cases
    assert not cases["b"]["passed"]
    assert "timed out" in cases["b"]["error"]
    assert elapsed < 120, elapsed  # it did not wait for the stuck thread's 600 s


def test_ctrl_c_exits_while_a_sync_harness_is_stuck(tmp_path: Path) -> None:
    path = write_stuck(tmp_path, ["a", "b"], stuck="b")
    process = subprocess.Popen(
        [str(CLI), "run", str(path), "--concurrency", "1", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120  # a bound on a hang, not on speed
        while not (tmp_path / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (tmp_path / "started").exists(), "the stuck case never started"
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 130, stdout + stderr


def test_a_stuck_thread_does_not_hold_a_slot_in_process() -> None:
    release = threading.Event()

    def harness(input: Any, ctx: HarnessContext) -> None:
        if input["stuck"]:
            release.wait(10)
        ctx.emit("harness:end")

    cases = [
        EvalCase(id=i, input={"stuck": i == "b"}, assertions=list(ENDS), timeout=200) for i in "abc"
    ]
    try:
        result = run(harness, EvalDataset(name="d", cases=cases), concurrency=1)
    finally:
        release.set()
    outcome = {c.case_id: (c.passed, c.error) for c in result.cases}
    assert outcome["a"] == (True, None) and outcome["c"] == (True, None), outcome
    assert "timed out" in str(outcome["b"][1])


def run(harness: Any, data: EvalDataset, **options: Any) -> DatasetResult:
    return asyncio.run(run_dataset(harness, data, RunOptions(**options)))


def two_cases(**kw: Any) -> EvalDataset:
    cases = [
        EvalCase(id=i, input={"bad": i == "bad"}, assertions=list(ENDS)) for i in ("bad", "ok")
    ]
    return EvalDataset(name="d", cases=cases, **kw)


class _Abort(BaseException):
    """A library's own BaseException (as gevent's GreenletExit, trio's Cancelled)."""


@pytest.mark.parametrize(
    "raised",
    [asyncio.CancelledError, SystemExit, KeyboardInterrupt, GeneratorExit, _Abort],
    ids=lambda e: e.__name__,
)
@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_harness_raising_a_base_exception_fails_only_its_case(
    raised: type[BaseException], kind: str
) -> None:
    if raised is KeyboardInterrupt and sys.version_info < (3, 11):
        pytest.skip("Python 3.10 cannot tell a harness's KeyboardInterrupt from Ctrl-C")

    def sync_harness(input: Any, ctx: HarnessContext) -> None:
        if input["bad"]:
            raise raised("nope")
        ctx.emit("harness:end")

    async def async_harness(input: Any, ctx: HarnessContext) -> None:
        await asyncio.sleep(0)
        sync_harness(input, ctx)

    result = run(async_harness if kind == "async" else sync_harness, two_cases())
    bad, ok = result.cases
    assert ok.passed and ok.error is None
    assert not bad.passed
    assert bad.error is not None and bad.error.startswith(f"{raised.__name__}: nope"), bad.error


def test_our_own_cancellation_still_propagates() -> None:
    async def forever(input: Any, ctx: HarnessContext) -> None:
        await asyncio.sleep(100)

    async def main() -> None:
        task = asyncio.create_task(run_dataset(forever, two_cases(), RunOptions()))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    started = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - started < 60  # not the harness's 100 s


@pytest.mark.parametrize("repeat", [5000, None])
def test_a_run_that_never_suspends_is_still_cancelled_between_runs(repeat: int | None) -> None:
    """A replayed harness never suspends: Ctrl-C during --repeat 100000000 (or a long
    dataset) reached the loop only when every run had ended, and memory filled first."""
    runs: list[str] = []
    stop: list[Callable[[], object]] = []

    async def instant(input: Any, ctx: HarnessContext) -> None:
        if not runs:  # as the signal handler does: the loop is to cancel the run
            asyncio.get_running_loop().call_soon(stop[0])
        runs.append(ctx.case_id)
        ctx.emit("harness:end", {})

    many = EvalDataset("many", [EvalCase(f"c{i}", {}) for i in range(1 if repeat else 5000)])

    async def main() -> None:
        task = asyncio.create_task(run_dataset(instant, many, RunOptions(repeat=repeat)))
        stop.append(task.cancel)
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert len(runs) < 10


def test_our_timeout_still_times_out_an_async_harness() -> None:
    async def forever(input: Any, ctx: HarnessContext) -> None:
        await asyncio.sleep(100)

    result = run(forever, two_cases(default_timeout=50))
    assert [c.error for c in result.cases] == ["timed out after 50 ms"] * 2


def test_an_async_harness_blocking_the_loop_past_its_timeout_fails() -> None:
    async def blocking(input: Any, ctx: HarnessContext) -> None:
        if input["bad"]:
            time.sleep(0.3)
        ctx.emit("harness:end")

    bad, ok = run(blocking, two_cases(default_timeout=100), concurrency=1).cases
    assert ok.passed
    assert not bad.passed
    assert bad.error is not None
    assert bad.error.startswith("timed out after 100 ms (the harness blocked the event loop for ")
    assert bad.error.endswith(" ms)")


def test_fail_fast_reports_a_never_started_skip_case_as_skipped_and_every_case_completes() -> None:
    def harness(input: Any, ctx: HarnessContext) -> None:
        if not input["ok"]:
            raise RuntimeError("boom")
        ctx.emit("harness:end")

    cases = [
        EvalCase(id="fails", input={"ok": False}, assertions=list(ENDS)),
        EvalCase(id="skipped", input={"ok": True}, assertions=list(ENDS), skip=True),
        EvalCase(id="later", input={"ok": True}, assertions=list(ENDS)),
    ]
    completed: list[CaseResult] = []
    result = run(
        harness,
        EvalDataset(name="d", cases=cases),
        concurrency=1,
        fail_fast=True,
        on_case_complete=completed.append,
    )
    by_id = {c.case_id: c for c in result.cases}
    assert by_id["skipped"].skipped and by_id["skipped"].error is None
    assert by_id["later"].skipped and by_id["later"].error == "not run (fail-fast)"
    assert sorted(c.case_id for c in completed) == ["fails", "later", "skipped"]


def raise_boom(input: Any, ctx: HarnessContext) -> None:
    raise RuntimeError("boom")


def parse_bad_json(input: Any, ctx: HarnessContext) -> None:
    json.loads("{not json")


def line_of(function: Any, text: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    start = function.__code__.co_firstlineno
    return next(n for n in range(start, len(lines) + 1) if text in lines[n - 1])


def test_a_harness_error_says_where_it_was_raised() -> None:
    (case,) = run(
        raise_boom, EvalDataset(name="d", cases=[EvalCase(id="x", input={}, assertions=[])])
    ).cases
    line = line_of(raise_boom, 'raise RuntimeError("boom")')
    assert case.error == f"RuntimeError: boom (at {Path(__file__).name}:{line} in raise_boom)"


def test_the_location_is_in_the_harness_not_in_the_library_it_called() -> None:
    (case,) = run(
        parse_bad_json, EvalDataset(name="d", cases=[EvalCase(id="x", input={}, assertions=[])])
    ).cases
    line = line_of(parse_bad_json, "json.loads(")
    assert case.error is not None and case.error.startswith("JSONDecodeError: ")
    assert case.error.endswith(f"(at {Path(__file__).name}:{line} in parse_bad_json)")


FILTER_DATASET = """\
name: filters
harness: h.py:create
cases:
  - {id: alpha, input: {}, tags: [smoke], assertions: [{type: signal.contains, pattern: x}]}
  - {id: beta, input: {}, tags: [slow], assertions: [{type: signal.contains, pattern: x}]}
"""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--case", "zzz"], ["'zzz'"]),
        (["--case", "alpah"], ["'alpah'", "did you mean 'alpha'?"]),
        (["--case", "alpha", "--case", "gamma", "--case", "bta"], ["'gamma'", "'bta'", "'beta'"]),
        (["--tag", "nosuch"], ["no case matches --tag nosuch", "smoke"]),
        (["--tag", "slow", "--case", "alpha"], ["no case matches --tag slow --case alpha"]),
    ],
)
def test_filters_that_select_nothing_are_input_errors(
    tmp_path: Path, args: list[str], expected: list[str]
) -> None:
    (tmp_path / "h.py").write_text(
        "def create():\n    return lambda input, ctx: [{'name': 'harness:end'}]\n"
    )
    (tmp_path / "eval.yaml").write_text(FILTER_DATASET)
    done = subprocess.run(
        [str(CLI), "run", str(tmp_path / "eval.yaml"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    message = " ".join(done.stderr.split())
    for part in expected:
        assert part in message, (part, done.stderr)


def test_a_slow_regex_does_not_hold_the_event_loop_from_the_other_cases(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A regex search may take its whole budget (1 s); on the event loop that time was
    charged to every other running case's harness, which then failed "timed out
    (the harness blocked the event loop)". The search holds here until another case's
    harness has run while it searches: on the loop it never could (a bounded wait)."""
    from signal_eval_cli import regex_budget

    searching, other_ran = threading.Event(), threading.Event()
    real = regex_budget._HELPER.search
    ran_while_searching: list[bool] = []

    def held(pattern: Any, text: str, budget_ms: int) -> str | None:
        searching.set()
        ran_while_searching.append(other_ran.wait(10))  # a bound on the bug, not on speed
        return real(pattern, text, budget_ms)

    monkeypatch.setattr(regex_budget._HELPER, "search", held)

    async def harness(input: Any, ctx: HarnessContext) -> None:
        if input == "other":
            while not searching.is_set():
                await asyncio.sleep(0.005)
            other_ran.set()
        ctx.emit("text:complete", {"content": "abc"})

    cases = [
        EvalCase(id="regex", input="regex", assertions=[{"type": "output.matches", "regex": "b"}]),
        EvalCase(id="other", input="other", assertions=list(ENDS)),
    ]
    result = run(harness, EvalDataset(name="d", cases=cases), concurrency=2)
    assert ran_while_searching == [True]
    assert [(c.case_id, c.passed, c.error) for c in result.cases] == [
        ("regex", True, None),
        ("other", True, None),
    ]
