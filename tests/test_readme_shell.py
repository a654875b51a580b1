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
from flows_helpers import CLI, ROOT, cli, project_copy
from mock_servers import MockLLMServer, code_review_responder

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
        env={"PATH": path, "HOME": str(cwd), "COLUMNS": "200", **env},
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
    assert len(lines) == 3
    env = {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "sk-readme-0123456789"}
    calls = []
    for line in lines:
        step = bash(line, project, **(env if "--provider" in line else {}))
        assert step.returncode in (0, 1) and "Traceback" not in step.stderr, (line, step.stderr)
        calls.append(len(server.calls))
    assert cassette.is_file()
    assert calls[0] > 0 and calls[2] == calls[0]  # replay and --record-missing call nothing new
    assert "sk-readme" not in cassette.read_text()


def test_the_matrix_compare_block_runs_as_written(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    done = bash(sh_block("base-matrix.json cand-matrix.json"), project)
    assert done.returncode == 0, done.stdout + done.stderr  # same runs: nothing regressed
    saved = json.loads((project / "matrix-compare.json").read_text())
    assert saved["kind"] == "matrixComparison" and not saved["summary"]["shouldBlock"]
    assert {v["variantId"] for v in saved["variants"]} >= {"haiku-model"}
    assert (project / "haiku.html").read_text().startswith("<!DOCTYPE html>")
