"""``agent:`` in scenarios: a command or a harness edits the workspace; diff, trace, escapes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from processes import alive, ctrl_c, ps_lines, unique_sleep
from typer.testing import CliRunner

from signal_eval_cli.cli import app
from signal_eval_cli.scenarios.changes import entries, find_escapes
from signal_eval_cli.scenarios.overlay import can_overlay
from signal_eval_cli.scenarios.workspace import apply_agent_task, parse_agent_task
from tests.test_patching import GIT_ENV
from tests.test_workspace import tree

AGENTS = Path(__file__).parent / "agents"
BEFORE = 'def greet(name):\n    return "hi " + name\n'
CHECK = "import greet, sys; sys.exit(greet.greet('x') != 'hello x')"


@pytest.fixture(autouse=True)
def _forget_loaded_agents() -> Iterator[None]:
    """Harness files loaded by path stay in sys.modules; other tests look theirs up there."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith("signal_eval_user_"):
            del sys.modules[name]


def project(tmp_path: Path, agent: dict[str, Any], **extra: Any) -> Path:
    """A fixture and a scenario file whose agent is ``agent``; returns the scenario path."""
    fixture = tmp_path / "fx"
    fixture.mkdir()
    (fixture / "greet.py").write_text(BEFORE)
    (fixture / "old.txt").write_text("obsolete\n")
    data: dict[str, Any] = {
        "id": "agent-fix",
        "adapterId": "python-pytest",
        "goals": [{"goal": "check", "command": "{python}", "args": ["-c", CHECK]}],
        "fixture": {"path": "fx"},
        "agent": agent,
        **extra,
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def run(path: Path, root: Path, *args: str) -> tuple[Any, dict[str, Any]]:
    out = root / "out.json"
    result = CliRunner().invoke(
        app, ["scenario", str(path), "--root", str(root), "-o", str(out), *args]
    )
    assert "Traceback" not in result.output, result.output
    return result, json.loads(out.read_text())["scenarios"][0]


def command(mode: str, *more: str) -> list[str]:
    return ["{python}", str(AGENTS / "coding_agent.py"), mode, *more]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, capture_output=True, check=True)
    return done.stdout.decode()


def test_a_command_agent_edits_the_workspace_and_its_output_joins_the_trace(
    tmp_path: Path,
) -> None:
    assertions = [
        {"type": "signal.count", "pattern": "tool:call", "exact": 3},
        {"type": "signal.count", "pattern": "agent:stderr", "exact": 1},
        {"type": "signal.count", "pattern": "goal:end", "payload": {"status": "passed"}},
    ]
    path = project(tmp_path, {"command": command("fix")}, assertions=assertions)
    before = tree(tmp_path / "fx")
    result, scenario = run(path, tmp_path)
    assert result.exit_code == 0, result.output
    assert all(a["passed"] for a in scenario["assertions"]), scenario["assertions"]
    assert scenario["agent"]["exitCode"] == 0 and scenario["agent"]["status"] == "passed"
    assert scenario["changedFiles"] == ["NOTES.md", "greet.py", "old.txt"]
    assert "exit 0" in result.output and "3 files changed" in result.output
    ready = next(s for s in scenario["signals"] if s["name"] == "workspace:ready")
    assert ready["payload"]["strategy"] == ("overlay" if can_overlay(tmp_path) else "copy")
    names = [s["name"] for s in scenario["signals"]]
    assert names.index("agent:start") < names.index("tool:call") < names.index("agent:end")
    assert names.index("agent:end") < names.index("workspace:diff") < names.index("goal:start")
    assert tree(tmp_path / "fx") == before  # the fixture is never modified

    # The final diff is git's, and applies back onto the fixture as a PATCH.
    repo = tmp_path / "repo"
    shutil.copytree(tmp_path / "fx", repo)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    subprocess.run(
        [sys.executable, str(AGENTS / "coding_agent.py"), "fix"],
        cwd=repo,
        check=True,
        capture_output=True,
    )
    git(repo, "add", "-A")
    assert scenario["finalDiff"] == git(repo, "diff", "--cached", "--no-renames")
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "fx", copy)
    apply_agent_task(parse_agent_task("PATCH|" + scenario["finalDiff"]), copy)
    assert tree(copy) == {k: v for k, v in tree(repo).items() if not k.startswith(".git")}


def test_a_harness_agent_gets_the_workspace_in_its_context(tmp_path: Path) -> None:
    agent = {"harness": f"{AGENTS / 'harness_agent.py'}:create", "params": {"greeting": "hello"}}
    assertions = [
        {"type": "signal.trajectory", "patterns": ["agent:activated", "tool:call", "goal:end"]},
        {"type": "tool.called", "name": "write_file"},
    ]
    path = project(tmp_path, agent, assertions=assertions)
    result, scenario = run(path, tmp_path)
    assert result.exit_code == 0, result.output
    assert scenario["changedFiles"] == ["greet.py"]
    assert '+    return f"hello {name}"' in scenario["finalDiff"]
    assert any(s["name"] == "text:complete" for s in scenario["signals"])


def test_a_harness_path_relative_to_the_scenario_file(tmp_path: Path) -> None:
    shutil.copy(AGENTS / "harness_agent.py", tmp_path / "my_agent.py")
    path = project(tmp_path, {"harness": "my_agent.py:create"})
    result, _ = run(path, tmp_path)
    assert result.exit_code == 0, result.output


def test_a_bad_harness_reference_is_exit_2(tmp_path: Path) -> None:
    path = project(tmp_path, {"harness": "no_such_module_xyz:create"})
    result = CliRunner().invoke(app, ["scenario", str(path), "--root", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "cannot import module 'no_such_module_xyz'" in result.output


HANG_MS = 5000
"""A hanging agent's timeout: time for it to start, start its child and say so, on a busy
machine too, before it is killed."""


def test_a_hung_agent_is_killed_with_its_children(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    agent = {"command": command("hang", str(outside)), "timeoutMs": HANG_MS}
    path = project(tmp_path, agent)
    started = time.monotonic()
    result, scenario = run(path, tmp_path)
    assert result.exit_code == 1
    assert time.monotonic() - started < 60
    assert scenario["agent"]["error"] == f"timed out after {HANG_MS} ms"
    assert scenario["error"] == f"agent: timed out after {HANG_MS} ms"
    child = int((outside / "child.pid").read_text())
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)
    assert scenario["goals"][0]["error"].startswith("not run")
    lines = [s["payload"]["line"] for s in scenario["signals"] if s["name"] == "agent:stdout"]
    assert lines == ["thinking..."]


def setsid_agent(tmp_path: Path, timeout_ms: int) -> tuple[Path, Path, str]:
    """A scenario whose agent runs ``setsid sleep <t> &`` (leaving its process group),
    then hangs; returns the scenario, the directory the child's pid goes to, and t."""
    outside = tmp_path / "outside"
    outside.mkdir()
    t = unique_sleep()
    agent = {"command": command("hang-setsid", str(outside), t), "timeoutMs": timeout_ms}
    return project(tmp_path, agent), outside, t


def leftover_sleeps(t: str, outside: Path, wait_s: float = 0.0) -> list[str]:
    """The ``sleep t`` still running after ``wait_s`` (then killed, so no test leaks it)."""
    deadline = time.monotonic() + wait_s  # an orphan the CLI killed may await init's reaping
    while ps_lines(f"sleep {t}") and time.monotonic() < deadline:
        time.sleep(0.05)
    leftover = ps_lines(f"sleep {t}")
    if leftover:
        os.kill(int((outside / "child.pid").read_text()), signal.SIGKILL)
    return leftover


@pytest.mark.skipif(shutil.which("setsid") is None, reason="needs setsid")
def test_a_hung_agent_is_killed_with_a_child_that_left_its_group(tmp_path: Path) -> None:
    """``setsid sleep &`` leaves the agent's process group: the ProcessScope finds it."""
    path, outside, t = setsid_agent(tmp_path, HANG_MS)
    result, scenario = run(path, tmp_path)
    assert result.exit_code == 1
    assert scenario["agent"]["error"] == f"timed out after {HANG_MS} ms"
    assert (outside / "child.pid").exists()  # it did start the setsid child
    assert leftover_sleeps(t, outside) == []


@pytest.mark.skipif(shutil.which("setsid") is None, reason="needs setsid")
def test_ctrl_c_kills_a_running_agent_and_a_child_that_left_its_group(tmp_path: Path) -> None:
    path, outside, t = setsid_agent(tmp_path, 600_000)
    elsewhere = tmp_path / "elsewhere"  # a directory outside the repo, a scenario file path
    elsewhere.mkdir()
    cli = Path(sys.executable).parent / "signal-eval"
    process = subprocess.Popen(
        [str(cli), "scenario", str(path), "--root", str(tmp_path), "-o", str(tmp_path / "o.json")],
        cwd=elsewhere,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    stdout, stderr = ctrl_c(process, lambda: bool(ps_lines(f"sleep {t}")))
    assert leftover_sleeps(t, outside, wait_s=10) == [], "the setsid child outlived the CLI"
    assert process.returncode == 130, stdout + stderr
    assert "Traceback" not in stderr, stderr


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("escape-symlink", "symlink sneaky leads outside the workspace"),
        ("escape-file", "escaped.txt was created outside the workspace"),
    ],
)
def test_a_path_escape_by_a_command_agent_fails_the_scenario(
    tmp_path: Path, mode: str, message: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    path = project(tmp_path, {"command": command(mode, str(outside))})
    result, scenario = run(path, tmp_path)
    assert result.exit_code == 1
    assert scenario["error"].startswith("agent wrote outside its workspace: ")
    assert message in scenario["error"]
    assert any(s["name"] == "agent:escaped" for s in scenario["signals"])


@pytest.mark.parametrize("where", ["home", "cwd"])
def test_an_agent_writing_into_home_or_the_current_directory_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    home, here = tmp_path / "home", tmp_path / "here"
    home.mkdir()
    here.mkdir()
    (home / ".history").write_text("old\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(here)
    target = home if where == "home" else here
    path = project(tmp_path, {"command": command("escape-into", str(target))})
    result, scenario = run(path, tmp_path)
    assert result.exit_code == 1
    assert f"{target / 'escaped.txt'} was created outside the workspace" in scenario["error"]
    assert any(s["name"] == "agent:escaped" for s in scenario["signals"])


def test_an_agent_writing_into_the_fixture_is_caught(tmp_path: Path) -> None:
    agent = {"command": ["{python}", "-c", f"open({str(tmp_path / 'fx' / 'x.txt')!r}, 'w')"]}
    path = project(tmp_path, agent)
    result, scenario = run(path, tmp_path)
    assert result.exit_code == 1
    assert f"{tmp_path / 'fx' / 'x.txt'} was created outside the workspace" in scenario["error"]
    os.unlink(tmp_path / "fx" / "x.txt")


def test_repeat_runs_each_scenario_n_times_with_concurrency(tmp_path: Path) -> None:
    counter = tmp_path / "runs.txt"
    script = (
        f"import pathlib; p = pathlib.Path({str(counter)!r}); "
        "n = len(p.read_text()) if p.exists() else 0; p.write_text('x' * (n + 1)); "
        "pathlib.Path('greet.py').write_text("
        "'def greet(name):\\n    return \"hello \" + name\\n' if n != 1 else 'def greet(name):\\n    return 0\\n')"
    )
    path = project(tmp_path, {"command": ["{python}", "-c", script]})
    result, _ = run(path, tmp_path, "--repeat", "3", "--concurrency", "1")
    assert result.exit_code == 1
    data = json.loads((tmp_path / "out.json").read_text())
    assert [s["run"] for s in data["scenarios"]] == [0, 1, 2]
    assert [s["passed"] for s in data["scenarios"]] == [True, False, True]
    [case] = data["cases"]
    assert case["outcomes"] == [True, False, True] and case["flaky"] is True
    assert counter.read_text() == "xxx"


def test_a_hard_link_to_a_file_outside_is_an_escape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIGNAL_EVAL_WORKSPACE", "copy")  # an overlay refuses cross-device links
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("outside\n")
    agent = {"command": ["{python}", "-c", f"import os; os.link({str(secret)!r}, 'linked.txt')"]}
    path = project(tmp_path, agent)
    result, scenario = run(path, tmp_path)
    assert result.exit_code == 1
    assert "linked.txt is a hard link shared with a file outside the workspace" in scenario["error"]


def test_home_and_cwd_are_watched_for_new_files_not_for_new_directories(tmp_path: Path) -> None:
    """Tools make their directories on first use (~/.cache, .hypothesis): not an escape."""
    here = tmp_path / "here"
    here.mkdir()
    (here / "kept.txt").write_text("x")
    before = {here: entries(here)}
    (here / ".cache").mkdir()
    (here / "kept.txt").write_text("changed")  # an existing file changing: out of scope
    assert find_escapes(tmp_path / "ws", [], {}, (), before) == []
    (here / "new.txt").write_text("x")
    os.symlink(tmp_path, here / "link")
    assert find_escapes(tmp_path / "ws", [], {}, (), before) == [
        f"{here / 'link'} was created outside the workspace",
        f"{here / 'new.txt'} was created outside the workspace",
    ]


FAILING_AGENTS = """
import asyncio


async def _hangs(input, ctx):
    await asyncio.sleep(60)


def _own_timeout(input, ctx):
    raise TimeoutError("the agent's own deadline")


def _exits(input, ctx):
    raise SystemExit(3)


def hangs():
    return _hangs


def own_timeout():
    return _own_timeout


def exits():
    return _exits
"""


@pytest.mark.parametrize(
    ("factory", "error"),
    [
        ("hangs", "timed out after 300 ms"),
        ("own_timeout", "TimeoutError: the agent's own deadline"),
        ("exits", "SystemExit: 3"),
    ],
)
def test_a_harness_agent_fails_its_scenario_as_a_harness_fails_its_case(
    tmp_path: Path, factory: str, error: str
) -> None:
    """The runner's deadline and its line between the run's cancellation and the agent's
    own failure: a TimeoutError the agent raises is not a timeout, and a SystemExit it
    raises fails its scenario instead of ending the run."""
    (tmp_path / "failing_agents.py").write_text(FAILING_AGENTS)
    agent = {"harness": f"failing_agents.py:{factory}", "timeoutMs": 300}
    result, scenario = run(project(tmp_path, agent), tmp_path)
    assert result.exit_code == 1, result.output
    assert scenario["agent"]["error"] == error
    assert scenario["error"] == f"agent: {error}"
