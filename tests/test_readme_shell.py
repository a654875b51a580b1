"""The README's shell blocks, run as written by bash in a scratch project outside the repo
(``signal-eval`` on PATH, no key, ``$GITHUB_STEP_SUMMARY`` unset or set)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from flows_helpers import CLI, ROOT, cli, project_copy, user_env
from mock_servers import Call, MockLLMServer, Reply, code_review_responder

README = (ROOT / "README.md").read_text(encoding="utf-8")
SH_BLOCKS = re.findall(r"```sh\n(.*?)```", README, re.S)


def sh_block(containing: str) -> str:
    """The one README shell block with this text in it."""
    (block,) = [b for b in SH_BLOCKS if containing in b]
    return block


def bash(script: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    path = f"{CLI.parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    return subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=user_env(**{"PATH": path, "HOME": str(cwd), **env}),
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize("summary", ["unset", "set"])
def test_the_ci_recipe_and_the_html_block_run_as_written(tmp_path: Path, summary: str) -> None:
    project = project_copy(tmp_path)
    env = {"GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary.md")} if summary == "set" else {}
    done = bash(sh_block("# on the base branch"), project, **env)
    assert done.returncode == 0, done.stdout + done.stderr  # same runs: nothing regressed
    assert json.loads((project / "cand.json").read_text())["totalCases"] == 11
    if summary == "set":
        text = (tmp_path / "step-summary.md").read_text()
        assert (
            "## ❌ Code Review Agent Eval" in text
            and "## 🟰 Comparison: Code Review Agent Eval" in text
        )
    else:
        assert done.stderr.count("no Markdown report") == 2, done.stderr
    assert (
        cli(
            "run", "datasets/code-review.yaml", "-q", "-o", "results/code-review.json", cwd=project
        ).returncode
        == 1
    )
    html = sh_block("--html report.html --markdown")
    for (
        line
    ) in html.strip().splitlines():  # each line on its own: the first exits 1 (a failing case)
        step = bash(line, project, **env)
        assert step.returncode in (0, 1) and "Traceback" not in step.stderr, (line, step.stderr)
    for name in ("report.html", "compare.html"):
        assert (project / name).read_text().startswith("<!DOCTYPE html>")


def test_the_running_datasets_example_runs_as_written(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    done = bash(sh_block("--concurrency 8 --tag security"), project)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads((project / "results.json").read_text())
    assert [c["caseId"] for c in result["cases"]] == ["sql-injection"]
    assert (project / "junit.xml").is_file()


def test_the_import_block_runs_as_written(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    shutil.copy(project / "datasets" / "traces" / "agents-sdk.json", project / "trace.json")
    (project / "traces").mkdir()
    for trace in (project / "datasets" / "traces").glob("*.json"):
        shutil.copy(trace, project / "traces" / trace.name)
    for line in sh_block("signal-eval import trace.json").strip().splitlines():
        step = bash(line, project)
        assert step.returncode == 0, (line, step.stdout + step.stderr)
    assert (project / "trace.jsonl").is_file() and list((project / "signals").glob("*.jsonl"))


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer(code_review_responder) as mock:
        yield mock


def test_the_record_replay_block_runs_as_written(tmp_path: Path, server: MockLLMServer) -> None:
    """Everything but installing and the key, which come from the test's environment."""
    project = project_copy(tmp_path)
    cassette = project / "datasets" / "cassettes" / "code-review.yaml"
    cassette.unlink()
    lines = [
        line
        for line in sh_block("--record-missing").strip().splitlines()
        if line.startswith("signal-eval ")
    ]
    assert len(lines) == 4
    env = {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "sk-readme-0123456789"}
    calls, recorded = [], b""
    for line in lines:
        step = bash(line, project, **(env if "--provider" in line else {}))
        assert step.returncode in (0, 1) and "Traceback" not in step.stderr, (line, step.stderr)
        calls.append(len(server.calls))
        recorded = recorded if "--live" in line else cassette.read_bytes()
    assert cassette.is_file()
    assert calls[0] > 0 and calls[2] == calls[0]  # replay and --record-missing call nothing new
    assert calls[3] > calls[2] and cassette.read_bytes() == recorded  # --live: calls, records none
    assert "sk-readme" not in cassette.read_text()


def clone(tmp_path: Path) -> Path:
    """What a fresh clone holds that the README's commands use, outside the repository."""
    where = tmp_path / "clone"
    for name in ("datasets", "scenarios", "fixtures"):
        shutil.copytree(ROOT / name, where / name)
    return where


def each_line(block: str, cwd: Path, codes: dict[str, int], **env: str) -> None:
    """Run every line of ``block`` on its own, as a user pastes them one by one; a line
    whose text holds a key of ``codes`` must exit with that code, any other with 0."""
    for line in block.strip().splitlines():
        step = bash(line, cwd, **env)
        expected = next((code for text, code in codes.items() if text in line), 0)
        assert step.returncode == expected, (line, step.stdout[-2000:] + step.stderr[-2000:])
        assert "Traceback" not in step.stderr, (line, step.stderr)


def test_the_quick_start_runs_as_written_in_a_fresh_clone(tmp_path: Path) -> None:
    where = clone(tmp_path)
    block = sh_block("signal-eval validate datasets/*.yaml scenarios/*.json")
    each_line(block, where, {"-o base.json": 1, "-o cand.json": 1})
    assert json.loads((where / "cand.json").read_text())["totalCases"] == 11


def test_the_start_a_project_block_runs_as_written_in_an_empty_folder(tmp_path: Path) -> None:
    """``init`` then ``run`` in a new user's empty folder: all its cases pass, offline."""
    done = bash(sh_block("signal-eval init my-evals"), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "wrote my-evals/agent.py" in done.stdout
    assert "3 passed, 0 failed" in done.stdout


def test_the_case_into_block_runs_as_written_in_a_user_project(tmp_path: Path) -> None:
    project = tmp_path / "support-bot"
    (project / "traces").mkdir(parents=True)
    shutil.copy(
        ROOT / "datasets" / "traces" / "agents-sdk.json", project / "traces" / "refund-42.json"
    )
    each_line(sh_block("--case-into evals/support.yaml"), project, {})
    assert "id: refund-42" in (project / "evals" / "support.yaml").read_text()


def test_the_resume_shard_merge_block_runs_as_written(tmp_path: Path) -> None:
    """Every line, Ray included: each run exits 1 (the example fails one case on purpose;
    the loop exits as its last shard does, which has none of the failing cases)."""
    where = clone(tmp_path)
    each_line(
        sh_block("--resume"), where, {"for i in": 0, "signal-eval run": 1, "signal-eval merge": 1}
    )
    merged = json.loads((where / "results" / "cr.json").read_text())
    assert merged["totalCases"] == 11
    shards = [json.loads((where / "results" / f"cr-{i}.json").read_text()) for i in range(1, 5)]
    assert sum(s["totalCases"] for s in shards) == 11


FIX_SCENARIO = """\
id: fix-greeting
adapterId: python-pytest
goals:
  - {goal: check, command: "{python}", args: ["-c", "import greet, sys; sys.exit(greet.greet('x') != 'hello x')"]}
fixture: {path: fixtures/greet}
agent: {command: ["{python}", "{scenarioDir}/../agents/model_agent.py", "fix the greeting", "--http"]}
"""


def test_the_scenario_block_runs_as_written(tmp_path: Path) -> None:
    """The shipped scenarios, then the user's own ``scenarios/fix.yaml`` whose coding agent
    calls a model (the test's mock): recorded with ``--record``, replayed offline after."""
    where = clone(tmp_path)
    (where / "fixtures" / "greet").mkdir()
    (where / "fixtures" / "greet" / "greet.py").write_text(
        'def greet(name):\n    return "hi " + name\n'
    )
    (where / "agents").mkdir()
    shutil.copy(ROOT / "tests" / "agents" / "model_agent.py", where / "agents")
    (where / "scenarios" / "fix.yaml").write_text(FIX_SCENARIO)

    def greeting(call: Call) -> Reply:
        return Reply("hello", input_tokens=5, output_tokens=1)

    with MockLLMServer(greeting) as mock:
        env = {"OPENAI_BASE_URL": f"{mock.url}/v1", "OPENAI_API_KEY": "sk-readme-0123456789"}
        each_line(sh_block("--update-expected"), where, {}, **env)
        assert mock.calls  # the agent's calls went upstream while recording
    cassette = where / "scenarios" / "cassettes" / "fix.proxy.yaml"
    assert cassette.is_file() and "sk-readme" not in cassette.read_text()
    replayed = bash(
        "signal-eval scenario scenarios/fix.yaml", where, OPENAI_BASE_URL="http://127.0.0.1:9/v1"
    )
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr  # offline, from the cassette
    assert (where / "scenarios.json").is_file()


def test_the_matrix_compare_block_runs_as_written(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    done = bash(sh_block("base-matrix.json cand-matrix.json"), project)
    assert done.returncode == 0, done.stdout + done.stderr  # same runs: nothing regressed
    saved = json.loads((project / "matrix-compare.json").read_text())
    assert saved["kind"] == "matrixComparison" and not saved["summary"]["shouldBlock"]
    assert {v["variantId"] for v in saved["variants"]} >= {"haiku-model"}
    assert (project / "haiku.html").read_text().startswith("<!DOCTYPE html>")
