"""Goals: real processes in their own group, timeouts that kill grandchildren, capped output."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest
from processes import RENDEZVOUS, alive, group_members

from signal_eval_cli.scenarios import parse_scenario
from signal_eval_cli.scenarios.goals import OUTPUT_LIMIT, cap_output, run_goal, run_process
from signal_eval_cli.scenarios.model import ResolvedGoal

PY = sys.executable


def run(coro: object) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


def script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc (Linux)")

STUBBORN = """
    import os, signal, subprocess, sys, time
    pids = sys.argv[1]
    if len(sys.argv) > 2:  # the grandchild: ignore SIGTERM, report, sleep
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with open(pids, "a") as f:
            f.write(f"{os.getpid()}\\n")
        time.sleep(60)
        sys.exit(0)
    subprocess.Popen([sys.executable, __file__, pids, "grandchild"])
    while not os.path.exists(pids) or not open(pids).read().strip():
        time.sleep(0.01)
    with open(pids, "a") as f:
        f.write(f"{os.getpid()}\\n")
    print("child ready", flush=True)
    if os.environ.get("EXIT_NOW") != "1":
        time.sleep(60)
"""


def test_timeout_kills_the_whole_group_including_a_sigterm_ignoring_grandchild(
    tmp_path: Path,
) -> None:
    pids_file = tmp_path / "pids"
    program = script(tmp_path, "stubborn.py", STUBBORN)
    started = time.monotonic()
    result = run(
        run_process(
            [PY, str(program), str(pids_file)], cwd=tmp_path, env=os.environ, timeout_ms=5000
        )  # time for two interpreters to start and report, on a busy machine too
    )
    elapsed = time.monotonic() - started
    pids = [int(p) for p in pids_file.read_text().split()]
    assert len(pids) == 2, "grandchild and child both reported"
    grandchild, child = pids
    assert result.timed_out  # type: ignore[attr-defined]
    assert result.error == "timed out after 5000 ms"  # type: ignore[attr-defined]
    assert "child ready" in result.stdout  # type: ignore[attr-defined]
    assert not alive(grandchild), "the SIGTERM-ignoring grandchild survived"
    assert not alive(child)
    assert group_members(child) == []  # the child led the group (start_new_session)
    assert elapsed < 30, f"took {elapsed:.1f}s"  # not the grandchild's 60 s


def test_a_goal_that_times_out_fails_with_the_timeout_in_its_error(tmp_path: Path) -> None:
    goal = ResolvedGoal("slow", PY, ("-c", "import time; time.sleep(30)"), timeout_ms=300)
    result = asyncio.run(run_goal(goal, tmp_path))
    assert result.status == "failed"
    assert result.error == "timed out after 300 ms"
    assert result.exit_code is not None and result.exit_code < 0  # killed by a signal
    assert 250 < result.duration_ms < 20_000  # not the 30 s sleep


def test_leftovers_are_killed_after_a_normal_exit_without_waiting_for_them(
    tmp_path: Path,
) -> None:
    pids_file = tmp_path / "pids"
    program = script(tmp_path, "stubborn.py", STUBBORN)
    started = time.monotonic()
    result = run(
        run_process(
            [PY, str(program), str(pids_file)],
            cwd=tmp_path,
            env={**os.environ, "EXIT_NOW": "1"},
            timeout_ms=20_000,
        )
    )
    grandchild = int(pids_file.read_text().split()[0])
    assert result.exit_code == 0 and not result.timed_out  # type: ignore[attr-defined]
    assert not alive(grandchild)
    assert time.monotonic() - started < 30  # the grandchild sleeps 60 s: not waited for


def test_stdout_and_stderr_are_captured_with_exit_code_and_duration(tmp_path: Path) -> None:
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    result = asyncio.run(run_goal(ResolvedGoal("g", PY, ("-c", code)), tmp_path))
    assert result.stdout == "out\n" and result.stderr == "err\n"
    assert result.exit_code == 3 and result.status == "failed"
    assert result.error == "exited with code 3"
    assert result.duration_ms > 0
    assert result.command == [PY, "-c", code]


def test_output_is_truncated_at_10000_bytes_with_a_marker(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.write('x' * 25000); sys.stderr.write('é' * 6000)"
    result = asyncio.run(run_goal(ResolvedGoal("g", PY, ("-c", code)), tmp_path))
    assert result.status == "passed"
    kept, marker = result.stdout.split("\n[... ", 1)
    assert kept == "x" * OUTPUT_LIMIT
    assert marker == "output truncated at 10000 bytes: 15000 more bytes omitted]"
    assert result.stderr.startswith("é" * 5000 + "\n[...")
    assert "2000 more bytes omitted" in result.stderr


def test_truncation_never_splits_a_utf8_character() -> None:
    data = ("a" + "é" * 6000).encode()  # byte 10,000 falls inside an 'é'
    text = cap_output(data, 0)
    assert "\ufffd" not in text
    assert text.startswith("a" + "é" * 4999 + "\n[... output truncated")
    assert "2001 more bytes omitted" in text
    assert cap_output(b"short", 0) == "short"


def test_placeholders_fill_args_env_and_cwd(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    code = "import os, sys; print(sys.argv[1]); print(os.environ['WHERE']); print(os.getcwd())"
    goal = ResolvedGoal(
        "g", PY, ("-c", code, "{fixture}/x"), env={"WHERE": "at {fixture}"}, cwd="sub"
    )
    result = asyncio.run(run_goal(goal, tmp_path))
    assert result.stdout.split("\n")[:3] == [
        f"{tmp_path}/x",
        f"at {tmp_path}",
        str((tmp_path / "sub").resolve()),
    ]
    absolute = ResolvedGoal("g", PY, ("-c", "import os; print(os.getcwd())"), cwd="{fixture}/sub")
    assert asyncio.run(run_goal(absolute, tmp_path)).stdout.strip() == str(tmp_path / "sub")


def test_a_missing_cwd_is_a_failed_goal(tmp_path: Path) -> None:
    result = asyncio.run(run_goal(ResolvedGoal("g", PY, ("-V",), cwd="nope"), tmp_path))
    assert result.status == "failed" and "is not a directory" in (result.error or "")


def _go_scenario(tmp_path: Path) -> list[ResolvedGoal]:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    scenario = parse_scenario(
        {
            "id": "go",
            "adapterId": "go-module",
            "goals": ["build", "test", "vet"],
            "fixture": {"path": "."},
            # an empty PATH: no go here even on a machine that has it
            "overrides": {"build": {"env": {"PATH": str(empty)}}},
        }
    )
    return scenario.goals


def test_a_missing_toolchain_is_a_failed_goal_with_a_clear_message(tmp_path: Path) -> None:
    build = _go_scenario(tmp_path)[0]
    assert (build.command, build.args) == ("go", ("build", "./..."))
    result = asyncio.run(run_goal(build, tmp_path))
    assert result.status == "failed" and result.exit_code is None
    assert result.error is not None
    assert result.error.startswith("command not found: go")
    assert "goal 'build' needs Go" in result.error


def test_an_unexecutable_command_is_a_failed_goal(tmp_path: Path) -> None:
    not_exec = tmp_path / "tool.sh"
    not_exec.write_text("echo hi\n")
    result = asyncio.run(run_goal(ResolvedGoal("g", str(not_exec)), tmp_path))
    assert result.status == "failed" and "cannot start" in (result.error or "")


def test_build_without_requirements_passes_without_running(tmp_path: Path) -> None:
    scenario = parse_scenario(
        {"id": "py", "adapterId": "python-pytest", "goals": ["build"], "fixture": {"path": "."}}
    )
    [build] = scenario.goals
    assert build.command == "{python}" and build.only_if_exists == "requirements.txt"
    result = asyncio.run(run_goal(build, tmp_path))
    assert result.status == "passed" and result.skipped
    assert result.stdout == "skipped: no requirements.txt, nothing to do"
    assert result.command[0] == PY


def test_goals_run_concurrently(tmp_path: Path) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    first = ResolvedGoal("a", PY, ("-c", RENDEZVOUS, a, b))
    second = ResolvedGoal("b", PY, ("-c", RENDEZVOUS, b, a))

    async def both() -> list[object]:
        return list(await asyncio.gather(run_goal(first, tmp_path), run_goal(second, tmp_path)))

    results = asyncio.run(both())
    assert all(r.status == "passed" for r in results)  # type: ignore[attr-defined]


def test_the_excerpt_picks_the_lines_that_say_why() -> None:
    from signal_eval_cli.scenarios.goals import GoalResult

    pytest_like = GoalResult(
        "test",
        "failed",
        1,
        stdout="collected 2 items\n..F\nE   AssertionError: 1 != 2\nFAILED t.py::x - boom\n1 failed\n",
        stderr="npm warn Unknown user config\n",
    )
    assert pytest_like.excerpt() == [
        "E   AssertionError: 1 != 2",
        "FAILED t.py::x - boom",
        "1 failed",
    ]
    quiet = GoalResult("build", "failed", 2, stdout="".join(f"line {i}\n" for i in range(20)))
    assert quiet.excerpt(limit=3) == ["line 17", "line 18", "line 19"]
