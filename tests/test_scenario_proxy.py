"""Scenario agents' and goals' model calls go through the run's model proxy: a real
subprocess using the ``openai`` SDK (and ``curl`` in a goal), configured by the
environment alone, recorded against the loopback mock, then replayed with the mock
stopped, identically; every call is ``provider:*`` signals under the step that made it."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from mock_servers import Call, MockLLMServer, Reply
from typer.testing import CliRunner

from signal_eval_cli.cli import app
from tests.test_scenario_agents import AGENTS, project, run

CLI = Path(sys.executable).parent / "signal-eval"
SECRET = "sk-upstream-secret"
CURL = (
    'curl -sS -f "$OPENAI_BASE_URL/chat/completions" -H "authorization: Bearer $OPENAI_API_KEY" '
    "-H 'content-type: application/json' "
    '-d \'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "goal check"}]}\''
)
CHECK = "import greet, sys; sys.exit(greet.greet('x') != 'hello x')"
ASSERTIONS = [
    {"type": "signal.count", "pattern": "provider:end", "exact": 3},
    {"type": "metric.tokens.min", "value": 38},
    {"type": "metric.tokens.max", "value": 38},
    {"type": "metric.cost.min", "value": 0.000001},
]


def responder(call: Call) -> Reply:
    if "release note" in call.last_user_text:
        return Reply("Greeting fixed.", input_tokens=7, output_tokens=3)
    if "coding agent" in call.system:
        return Reply("hello", input_tokens=20, output_tokens=1)
    return Reply("goal ok", input_tokens=5, output_tokens=2)


def scenario_file(tmp_path: Path, task: str = "fix the greeting", *, sdk: bool = True) -> Path:
    """The agent calls through the ``openai`` SDK, or (``sdk=False``) the same requests in
    plain HTTP, where the SDK is not what is tested (model_agent.py's ``--http``)."""
    agent = {"command": ["{python}", str(AGENTS / "model_agent.py"), task]}
    agent["command"] += [] if sdk else ["--http"]
    goals = [
        {"goal": "check", "command": "{python}", "args": ["-c", CHECK]},
        {"goal": "ask", "command": "sh", "args": ["-c", CURL]},
    ]
    shutil.rmtree(tmp_path / "fx", ignore_errors=True)  # written again, the same
    return project(tmp_path, agent, id="model-fix", goals=goals, assertions=ASSERTIONS)


def parsed(text: str) -> Any:
    """A goal's output; JSON (curl's answer) by value: replay re-serialises it compactly."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def comparable(scenario: dict[str, Any]) -> dict[str, Any]:
    """What must not change between recording and replay (not times, ids, paths)."""
    calls = [
        (s["name"], {k: v for k, v in s["payload"].items() if k != "durationMs"})
        for s in scenario["signals"]
        if s["name"].startswith("provider:") or s["name"] == "text:delta"
    ]
    return {
        "passed": scenario["passed"],
        "error": scenario["error"],
        "finalDiff": scenario["finalDiff"],
        "goals": [(g["goal"], g["status"], parsed(g["stdout"])) for g in scenario["goals"]],
        "assertions": [(a["passed"], a["message"]) for a in scenario["assertions"]],
        "calls": calls,
    }


DEAD = "http://127.0.0.1:9/v1"
"""Upstream once the mock is gone: replay must not need the network."""


def record(path: Path, root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, list[Call]]:
    """Run the scenario with ``--record`` against the mock, then point upstream at DEAD."""
    with MockLLMServer(responder) as mock:
        monkeypatch.setenv("OPENAI_BASE_URL", f"{mock.url}/v1")  # upstream: the mock
        result, recorded = run(path, root, "--record")
    monkeypatch.setenv("OPENAI_BASE_URL", DEAD)
    assert result.exit_code == 0, result.output
    return result, recorded, mock.calls


def test_a_command_agent_is_recorded_then_replayed_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = scenario_file(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    result, recorded, calls = record(path, tmp_path, monkeypatch)
    assert len(calls) == 3 and {c.key for c in calls} == {SECRET}
    assert all(a["passed"] for a in recorded["assertions"]), recorded["assertions"]
    assert '+    return "hello " + name' in recorded["finalDiff"]
    cassette = tmp_path / "cassettes" / "scenario.proxy.yaml"
    assert cassette.is_file() and SECRET not in cassette.read_text()
    assert f"recorded the scenarios' model calls to {cassette}" in result.output

    # Each call's signals sit under the step that made it: two under the agent, one
    # under the goal `ask`; the streamed one has its text deltas.
    by_id = {s["id"]: s for s in recorded["signals"]}
    starts = [s for s in recorded["signals"] if s["name"] == "provider:start"]
    steps = [by_id[s["source"]["parent"]] for s in starts]
    assert [s["name"] for s in steps] == ["agent:start", "agent:start", "goal:start"]
    assert steps[2]["payload"] == {"goal": "ask"}
    ends = [s["payload"] for s in recorded["signals"] if s["name"] == "provider:end"]
    assert [e["usage"] for e in ends] == [
        {"inputTokens": 20, "outputTokens": 1},
        {"inputTokens": 7, "outputTokens": 3},
        {"inputTokens": 5, "outputTokens": 2},
    ]
    assert ends[1]["output"] == "Greeting fixed." and all(e["cost"] > 0 for e in ends)
    assert any(s["name"] == "text:delta" for s in recorded["signals"])

    for flags in ([], ["--replay"]):  # the cassette exists: replay is the default
        result, replayed = run(path, tmp_path, *flags)
        assert result.exit_code == 0, result.output
        assert comparable(replayed) == comparable(recorded)


def test_a_request_the_cassette_lacks_fails_the_scenario_saying_what_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record(scenario_file(tmp_path, sdk=False), tmp_path, monkeypatch)
    before = (tmp_path / "cassettes" / "scenario.proxy.yaml").read_bytes()
    path = scenario_file(tmp_path, task="fix the farewell", sdk=False)
    result, scenario = run(path, tmp_path, "--replay")
    assert result.exit_code == 1, result.output
    assert scenario["error"].startswith("model proxy: no recorded answer for case 'model-fix'")
    assert "messages[1].content" in scenario["error"] and "fix the farewell" in scenario["error"]
    assert "(agent: exited with code 1)" in scenario["error"]
    assert "1 model call(s) had no recording" in result.output
    assert (tmp_path / "cassettes" / "scenario.proxy.yaml").read_bytes() == before


def test_a_harness_agent_reaches_the_proxy_through_ctx(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = {"harness": f"{AGENTS / 'harness_agent.py'}:create_asking"}
    assertions = [{"type": "metric.tokens.max", "value": 21}]
    path = project(tmp_path, agent, assertions=assertions)
    _, recorded, calls = record(path, tmp_path, monkeypatch)
    assert len(calls) == 1
    result, replayed = run(path, tmp_path)
    assert result.exit_code == 0, result.output
    assert comparable(replayed) == comparable(recorded)
    assert [s["name"] for s in replayed["signals"]].count("provider:end") == 1


def test_replay_from_a_directory_outside_the_repo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The installed CLI, run elsewhere with a scenario file path, replays offline."""
    path = scenario_file(tmp_path, sdk=False)
    _, recorded, _ = record(path, tmp_path, monkeypatch)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    out = elsewhere / "out.json"
    done = subprocess.run(
        [str(CLI), "scenario", str(path), "--root", str(tmp_path), "-o", str(out)],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [replayed] = json.loads(out.read_text())["scenarios"]
    assert comparable(replayed) == comparable(recorded)


def test_a_step_waits_for_its_calls_to_emit_their_end() -> None:
    """A streamed answer's client may exit before the proxy's thread emits
    ``provider:end``: the step waits for the call (its session's calls in flight), so the
    end lands under the step, in order."""
    from signal_eval_cli.proxy.session import CaseSession
    from signal_eval_cli.scenarios.runner import _ScenarioTrace

    recorder = _ScenarioTrace("s")
    session = CaseSession("s", 0, recorder.emit)
    recorder.settle = lambda: session.settled(60)
    recorder.step = recorder.emit("agent:start", {})
    session.next_call()  # the proxy took a call: in flight until call_done()
    start = recorder.emit("provider:start", {"model": "m"})
    release = threading.Event()

    def finish() -> None:
        release.wait(30)
        recorder.emit("provider:end", {"model": "m"}, parent=start)
        session.call_done()

    threading.Thread(target=finish, daemon=True).start()

    async def step() -> list[str]:
        waiting = asyncio.ensure_future(recorder.settled())
        await asyncio.sleep(0.05)
        assert not waiting.done()  # the call is still open
        release.set()
        await waiting
        return [s.name for s in recorder.signals]

    assert asyncio.run(step()) == ["agent:start", "provider:start", "provider:end"]
    assert start.parent == recorder.step.id
    assert {s.agent for s in recorder.signals} == {"signal-eval:scenario"}  # the scenario's


def test_a_broken_cassette_or_two_modes_are_exit_2_before_anything_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    agent = {"command": ["{python}", "-c", f"open({str(marker)!r}, 'w')"]}
    path = project(tmp_path, agent)
    cassette = tmp_path / "cassettes" / "scenario.proxy.yaml"
    cassette.parent.mkdir()
    cassette.write_text("version: 1\ninteractions:\n  - case: 3\n")
    result = CliRunner().invoke(app, ["scenario", str(path), "--root", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert f"{cassette}:3:11: 'case' is missing or mistyped" in result.output
    cassette.unlink()
    result = CliRunner().invoke(
        app, ["scenario", str(path), "--root", str(tmp_path), "--record", "--replay"]
    )
    assert result.exit_code == 2 and "choose one of --record, --replay" in result.output
    assert not marker.exists() and "Traceback" not in result.output


def test_stopping_the_proxies_writes_and_says_what_was_recorded_and_missed(tmp_path: Path) -> None:
    """The library's stop (what ``scenario`` and a matrix over scenarios call): each proxy
    stopped and saved, then where recordings went, the misses, the first five failures."""
    from signal_eval_cli.scenarios.proxying import ScenarioProxies, stop_scenario_proxies

    class Stub:
        def __init__(self, name: str, misses: list[str], failures: list[str]) -> None:
            self.name, self.misses, self.failures, self.stopped = name, misses, failures, False

        def stop(self) -> None:
            self.stopped = True

        def save(self) -> list[Path]:
            return [tmp_path / f"{self.name}.yaml"]

    proxies = ScenarioProxies()
    stubs = [Stub("a", ["m1"], [f"f{i}" for i in range(4)]), Stub("b", ["m2"], ["g1", "g2"])]
    proxies.proxies = {s.name: s for s in stubs}  # type: ignore[misc]
    notes: list[str] = []
    assert stop_scenario_proxies(proxies, notes.append) == [
        tmp_path / "a.yaml",
        tmp_path / "b.yaml",
    ]
    assert all(s.stopped for s in stubs)
    assert notes == [
        f"recorded the scenarios' model calls to {tmp_path / 'a.yaml'}",
        f"recorded the scenarios' model calls to {tmp_path / 'b.yaml'}",
        "2 model call(s) had no recording",
        *(f"not recorded: {f}" for f in ["f0", "f1", "f2", "f3", "g1"]),
    ]
