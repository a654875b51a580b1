"""A matrix's variants record and replay their own model calls: each variant has its own
model proxy and cassette beside the matrix file, so two variants running the same case
at once with different prompts never share a recording. Through the installed CLI, from
the project's directory (outside the repo), against the loopback mock; replayed with the
mock stopped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mock_servers import Call, MockLLMServer

from signal_eval_cli.proxy.cassette import ProxyCassette

CLI = Path(sys.executable).parent / "signal-eval"
SECRET = "sk-upstream-secret"
DEAD = "http://127.0.0.1:9/v1"
"""Upstream once the mock is gone: replay must not need the network."""

AGENT = """\
import os, subprocess, sys

def create(prompt="Summarise", model="gpt-4o-mini", via="ctx"):
    def run(input, ctx):
        text = f"{prompt}: {input}"
        if via == "ctx":
            client = ctx.openai()
        elif via == "bare":  # OPENAI_BASE_URL alone, in process
            import openai  # here: 2 s of CPU that a run whose harness never calls it skips

            client = openai.OpenAI()
        else:  # a subprocess given the case's environment
            env = {**os.environ, **ctx.proxy.env}
            done = subprocess.run(
                [sys.executable, os.path.join(os.path.dirname(__file__), "ask.py"), model, text],
                env=env, capture_output=True, text=True, check=True,
            )
            return [{"name": "text:complete", "payload": {"content": done.stdout.strip()}}]
        reply = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": text}]
        )
        return [{"name": "text:complete", "payload": {"content": reply.choices[0].message.content}}]
    return run
"""
DATASET = """\
name: notes
harness: agent.py:create
cases:
  - {id: a, input: one, assertions: [{type: output.contains, text: one}]}
  - {id: b, input: two, assertions: [{type: output.contains, text: two}]}
  - {id: c, input: three, assertions: [{type: output.contains, text: terse}]}
"""


ASK = """\
import json, os, sys, urllib.error, urllib.request

body = {"model": sys.argv[1], "messages": [{"role": "user", "content": sys.argv[2]}]}
headers = {"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"}
headers["Content-Type"] = "application/json"
url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
try:
    answer = urllib.request.urlopen(urllib.request.Request(url, json.dumps(body).encode(), headers))
except urllib.error.HTTPError as error:
    sys.exit(error.read().decode())
print(json.load(answer)["choices"][0]["message"]["content"])
"""
"""A subprocess's model call in plain HTTP, from the case's environment alone (the SDK in a
subprocess is test_proxy's: importing it costs 1.5 s of CPU per call)."""


def matrix_file(project: Path, terse: str = "Be terse", *, via: str = "env") -> Path:
    (project / "agent.py").write_text(AGENT)
    (project / "ask.py").write_text(ASK)
    (project / "eval.yaml").write_text(DATASET)
    path = project / "pick.yaml"
    path.write_text(
        "dataset: eval.yaml\nvariants:\n"
        f"  - {{id: terse, name: Terse, harness: {{factory: agent.py:create, params: {{prompt: {terse}}}}}}}\n"
        "  - id: wordy\n    name: Wordy\n"
        "    harness: {factory: agent.py:create, "
        f"params: {{prompt: Be wordy, model: gpt-4o, via: {via}}}}}\n"
    )
    return path


def reply(call: Call) -> str:
    return f"{call.body['model']} says {call.last_user_text}"


def cli(project: Path, upstream: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"OPENAI_BASE_URL": upstream, "OPENAI_API_KEY": SECRET}
    command = [str(CLI), "matrix", "pick.yaml", "-o", "out.json", "--signals", "all", *args]
    return subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=300
    )


def comparable(project: Path) -> dict[str, Any]:
    """Each variant's cases as they must stay between recording and replay (no timings)."""
    data = json.loads((project / "out.json").read_text())
    return {
        v["variantId"]: [
            (
                c["caseId"],
                c["passed"],
                c.get("error"),
                [
                    (s["name"], {k: x for k, x in s["payload"].items() if k != "durationMs"})
                    for s in c["signals"]
                    if s["name"].startswith(("provider:", "text:"))
                ],
            )
            for c in v["result"]["cases"]
        ]
        for v in data["variants"]
    }


def test_each_variant_records_its_own_calls_and_replays_offline(tmp_path: Path) -> None:
    matrix_file(tmp_path)
    with MockLLMServer(reply) as mock:
        recorded = cli(tmp_path, mock.openai_base_url, "--record", "--concurrency", "4")
        assert recorded.returncode == 0, recorded.stderr
        assert len(mock.calls) == 6 and {c.key for c in mock.calls} == {SECRET}
    terse = tmp_path / "cassettes" / "pick.terse.proxy.yaml"
    wordy = tmp_path / "cassettes" / "pick.wordy.proxy.yaml"
    for variant, cassette, prompt in (("terse", terse, "Be terse"), ("wordy", wordy, "Be wordy")):
        where = cassette.relative_to(tmp_path)
        assert f"recorded the harness's model calls to {where}" in recorded.stderr
        calls = ProxyCassette(cassette).load()
        assert [i.case for i in calls] == ["a", "b", "c"], variant
        assert all(i.body["messages"][0]["content"].startswith(prompt) for i in calls)
        assert SECRET not in cassette.read_text()
    first = comparable(tmp_path)
    assert [c[1] for c in first["terse"]] == [True, True, True]
    assert [c[1] for c in first["wordy"]] == [True, True, False]  # "terse" is not in its answer
    ends = [s for s in first["wordy"][0][3] if s[0] == "provider:end"]
    assert ends[0][1]["output"] == "gpt-4o says Be wordy: one" and ends[0][1]["cost"] > 0

    saved = terse.read_bytes(), wordy.read_bytes()
    # the cassettes exist: replay is the default (the scenario matrix's test gives --replay)
    replayed = cli(tmp_path, DEAD)
    assert replayed.returncode == 0, replayed.stderr
    assert comparable(tmp_path) == first
    assert (terse.read_bytes(), wordy.read_bytes()) == saved

    # a variant's prompt changed: its calls miss, saying which case and what changed;
    # the other variant still replays; no cassette is touched
    matrix_file(tmp_path, terse="Be very terse")
    changed = cli(tmp_path, DEAD)
    assert changed.returncode == 0, changed.stderr  # a matrix exits 0 when it ran
    now = comparable(tmp_path)
    assert now["wordy"] == first["wordy"]
    for case_id, passed, raised, _ in now["terse"]:
        error = raised.replace("\\'", "'")  # the SDK's exception shows the body's repr
        assert not passed and f"no recorded answer for case '{case_id}'" in error
        assert "messages[0].content" in error and "Be very terse" in error
    assert "3 model call(s) had no recording in" in changed.stderr
    assert "cassettes/pick.terse.proxy.yaml" in changed.stderr
    assert (terse.read_bytes(), wordy.read_bytes()) == saved


def test_the_built_in_harness_calls_its_provider_itself_without_a_proxy(tmp_path: Path) -> None:
    """Variants of the built-in reactive harness call their provider themselves, as in
    ``run``: no proxy is started for them, so nothing points their provider at one
    (with two variants it would refuse every call) and no proxy cassette is written."""
    (tmp_path / "agents.yaml").write_text(
        "agents:\n  - id: helper\n    activate_on: [harness:start]\n    prompt: '{input}'\n"
    )
    (tmp_path / "eval.yaml").write_text(
        "name: plain\ndefaultAssertions: [{type: signal.contains, pattern: 'provider:end'}]\n"
        "cases:\n  - {id: a, input: one}\n  - {id: b, input: two}\n"
    )
    variants = "".join(
        f"  - {{id: {name}, name: {name}, harness: {{factory: reactive, params: "
        f"{{agents: agents.yaml, provider: 'openai:{model}'}}}}}}\n"
        for name, model in (("mini", "gpt-4o-mini"), ("big", "gpt-4o"))
    )
    (tmp_path / "pick.yaml").write_text(f"dataset: eval.yaml\nvariants:\n{variants}")
    with MockLLMServer(reply) as mock:
        ran = cli(tmp_path, mock.openai_base_url, "--concurrency", "4")
        models = sorted(c.body["model"] for c in mock.calls)
    assert ran.returncode == 0, ran.stderr
    assert models == ["gpt-4o", "gpt-4o", "gpt-4o-mini", "gpt-4o-mini"]
    cases = comparable(tmp_path)
    assert [c[2] for v in ("mini", "big") for c in cases[v]] == [None] * 4
    assert not list(tmp_path.glob("cassettes/*.proxy.yaml"))


def test_a_client_that_names_no_variant_is_refused_never_live(tmp_path: Path) -> None:
    """``openai.OpenAI()`` made in process reads OPENAI_BASE_URL, which says neither the
    variant nor the case: every call of it fails saying what to do; none leaves."""
    matrix_file(tmp_path, via="bare")
    with MockLLMServer(reply) as mock:
        live = cli(tmp_path, mock.openai_base_url, "--live", "--concurrency", "1")
        assert [c.body["model"] for c in mock.calls] == [
            "gpt-4o-mini"
        ] * 3  # the ctx variant's only
    assert live.returncode == 0, live.stderr
    cases = comparable(tmp_path)["wordy"]
    for _, passed, error, _ in cases:
        assert not passed and "names no case" in error and "ctx.openai()" in error


def test_two_modes_or_a_broken_cassette_are_exit_2_before_anything_runs(tmp_path: Path) -> None:
    matrix_file(tmp_path)
    both = cli(tmp_path, DEAD, "--record", "--replay")
    assert both.returncode == 2 and "choose one of --record, --replay" in both.stderr
    broken = tmp_path / "cassettes" / "pick.wordy.proxy.yaml"
    broken.parent.mkdir()
    broken.write_text("version: 1\ninteractions: [}\n")
    bad = cli(tmp_path, DEAD)
    assert bad.returncode == 2 and "pick.wordy.proxy.yaml:2" in bad.stderr, bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "out.json").exists()


def scenario_matrix(project: Path, farewell: str = "fix the farewell") -> Path:
    """One scenario (its goal calls the model with curl), two command agents that call
    the model through the environment alone, with different tasks."""
    from tests.test_scenario_agents import AGENTS
    from tests.test_scenario_proxy import scenario_file

    scenario_file(project)
    agent = [sys.executable, str(AGENTS / "model_agent.py")]
    variants = [  # the SDK in a command agent is test_scenario_proxy's
        {"id": v, "name": v.title(), "agent": {"command": [*agent, task, "--http"]}}
        for v, task in (("greeting", "fix the greeting"), ("farewell", farewell))
    ]
    path = project / "pick.yaml"
    path.write_text(json.dumps({"scenarios": ["scenario.yaml"], "variants": variants}))
    return path


def test_a_scenario_matrix_records_each_agents_calls_apart_and_replays_offline(
    tmp_path: Path,
) -> None:
    from tests.test_scenario_proxy import responder

    scenario_matrix(tmp_path)
    with MockLLMServer(responder) as mock:
        recorded = cli(tmp_path, mock.openai_base_url, "--record", "--concurrency", "2")
        assert recorded.returncode == 0, recorded.stderr
        assert len(mock.calls) == 6 and {c.key for c in mock.calls} == {SECRET}
    cassettes = {
        v: tmp_path / "cassettes" / f"pick.{v}.proxy.yaml" for v in ("greeting", "farewell")
    }
    for variant, cassette in cassettes.items():
        calls = ProxyCassette(cassette).load()
        assert [i.case for i in calls] == ["model-fix"] * 3
        asked = [json.dumps(i.body) for i in calls]
        assert sum(f"fix the {variant}" in a for a in asked) == 2  # the agent's two calls
        assert SECRET not in cassette.read_text()
    first = comparable(tmp_path)
    assert [c[1] for c in first["greeting"]] == [True] == [c[1] for c in first["farewell"]]
    ends = [s for s in first["farewell"][0][3] if s[0] == "provider:end"]
    assert len(ends) == 3 and all(e[1]["cost"] > 0 for e in ends)

    saved = {v: c.read_bytes() for v, c in cassettes.items()}
    replayed = cli(tmp_path, DEAD)  # the mock is gone: replayed from each variant's cassette
    assert replayed.returncode == 0, replayed.stderr
    assert comparable(tmp_path) == first

    scenario_matrix(tmp_path, farewell="fix the goodbye")
    changed = cli(tmp_path, DEAD, "--replay")
    assert changed.returncode == 0, changed.stderr
    now = comparable(tmp_path)
    assert now["greeting"] == first["greeting"]
    [(_, passed, error, _)] = now["farewell"]
    assert not passed and "no recorded answer for case 'model-fix'" in error
    assert "fix the goodbye" in error
    assert {v: c.read_bytes() for v, c in cassettes.items()} == saved


CRASHY = """\
import asyncio, os, pathlib


def create(tag="x"):
    async def run(input, ctx):
        pathlib.Path(f"port-{tag}").write_text(ctx.proxy.url.rsplit(":", 1)[1])
        reply = await ctx.openai(async_=True).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"{tag} {input}"}]
        )
        if os.environ.get("AGENT_MODE") == "bad":
            if input == "crash":
                raise RuntimeError("harness bug")
            if input == "hang":
                pathlib.Path(f"hanging-{tag}").touch()
                await asyncio.sleep(300)
        return [{"name": "text:complete", "payload": {"content": reply.choices[0].message.content}}]
    return run
"""


def test_a_crash_or_ctrl_c_keeps_each_variants_good_recording_and_no_proxy_outlives_it(
    tmp_path: Path,
) -> None:
    import signal
    import socket

    from processes import wait_for_line

    (tmp_path / "agent.py").write_text(CRASHY)
    (tmp_path / "eval.yaml").write_text(
        "name: crashy\nharness: agent.py:create\n"
        "defaultAssertions: [{type: signal.contains, pattern: text:complete}]\ncases:\n"
        + "".join(f"  - {{id: {c}, input: {c}}}\n" for c in ("ok", "crash", "hang"))
    )
    (tmp_path / "pick.yaml").write_text(
        "dataset: eval.yaml\nvariants:\n"
        + "".join(
            f"  - {{id: {t}, name: {t}, harness: {{factory: agent.py:create, params: {{tag: {t}}}}}}}\n"
            for t in ("x", "y")
        )
    )
    version = ["v1"]

    def start(mock: MockLLMServer, mode: str) -> subprocess.Popen[str]:
        env = {**os.environ, "AGENT_MODE": mode, "OPENAI_API_KEY": SECRET}
        env["OPENAI_BASE_URL"] = mock.openai_base_url
        command = [str(CLI), "matrix", "pick.yaml", "--record", "--concurrency", "6"]
        return subprocess.Popen(
            command,
            cwd=tmp_path,
            env=env,
            stderr=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def answers(variant: str) -> dict[str, str]:
        cassette = ProxyCassette(tmp_path / "cassettes" / f"pick.{variant}.proxy.yaml")
        return {i.case: i.response["choices"][0]["message"]["content"] for i in cassette.load()}

    with MockLLMServer(lambda call: f"{version[0]} {call.last_user_text}") as mock:
        good = start(mock, "good")
        _, err = good.communicate(timeout=300)
        assert good.returncode == 0, err
        version[0] = "v2"
        bad = start(mock, "bad")
        assert bad.stderr is not None
        done = []  # progress lines: ok and crash of both variants end, the hangs hang

        def four_done(line: str) -> bool:
            done.extend([line] if "›" in line else [])
            return len(done) == 4

        seen = wait_for_line(bad.stderr, four_done, 300)
        assert len(done) == 4, seen
        for tag in ("x", "y"):
            while not (tmp_path / f"hanging-{tag}").exists():  # bounded by the hang's 300 s
                assert bad.poll() is None, seen
                time.sleep(0.05)
        ports = [int((tmp_path / f"port-{t}").read_text()) for t in ("x", "y")]
        bad.send_signal(signal.SIGINT)
        assert bad.wait(timeout=120) == 130
    for port in ports:
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0  # the proxy is gone
    for tag in ("x", "y"):
        assert answers(tag) == {
            "ok": f"v2 {tag} ok",
            "crash": f"v1 {tag} crash",
            "hang": f"v1 {tag} hang",
        }
