"""The example datasets run offline through the reactive harness, with honest results.

Which cases fail, and by which assertions, is part of the contract: datasets/README.md
documents them, and a cassette or agents edit that changes them must update both.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from signal_eval_cli import RunOptions, load_dataset, run_dataset
from signal_eval_cli.harness.entrypoints import resolve_harness
from signal_eval_cli.harness.reactive import load_agents
from signal_eval_cli.loading import schema_validator
from signal_eval_cli.providers.cassette import Cassette
from signal_eval_cli.results import DatasetResult

ROOT = Path(__file__).resolve().parent.parent
DATASETS = ROOT / "datasets"
CLI = Path(sys.executable).parent / "signal-eval"

# dataset -> (cases, {failing case: failing assertion types})
EXPECTED: dict[str, tuple[int, dict[str, list[str]]]] = {
    "code-review": (11, {"race-condition": ["output.matches"]}),
    "code-gen": (7, {"binary-search": ["snapshot.final"]}),
    "refactoring": (
        3,
        {"rename-function-across-files": ["snapshot.at", "tool.called", "snapshot.final"]},
    ),
    "debugging": (3, {"test-timeout": ["snapshot.at"]}),
}


def run_example(name: str) -> DatasetResult:
    dataset = load_dataset(DATASETS / f"{name}.yaml")
    assert dataset.harness is not None and dataset.path is not None
    harness = resolve_harness(
        dataset.harness.factory, dataset.harness.params, base_dir=dataset.path.parent
    )
    return asyncio.run(run_dataset(harness, dataset, RunOptions(concurrency=4)))


@pytest.fixture(scope="module")
def results() -> dict[str, DatasetResult]:
    return {name: run_example(name) for name in EXPECTED}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_exactly_the_documented_cases_fail_for_the_documented_reasons(
    results: dict[str, DatasetResult], name: str
) -> None:
    result = results[name]
    total, failing = EXPECTED[name]
    assert result.total_cases == total and result.skipped_cases == 0
    assert all(c.error is None for c in result.cases), [c.error for c in result.cases]
    actual = {
        c.case_id: [a.assertion["type"] for a in c.failed_assertions]
        for c in result.cases
        if not c.passed
    }
    assert actual == failing
    readme = (DATASETS / "README.md").read_text()
    for case_id in failing:
        assert f"`{case_id}`" in readme


def test_guards_skip_for_the_recorded_reason(results: dict[str, DatasetResult]) -> None:
    by_id = {c.case_id: c for c in results["code-gen"].cases}
    skipped = [s.payload for s in by_id["impossible-task"].signals if s.name == "agent:skipped"]
    assert skipped == [
        {
            "agent": "coder",
            "reason": "the planner marked the task infeasible",
            "trigger": "plan:complete",
        }
    ]
    tester = [s.payload for s in by_id["file-creation-tools"].signals if s.name == "agent:skipped"]
    assert tester[0]["agent"] == "tester"
    assert "clarification:needed" in [s.name for s in by_id["ambiguous-task"].signals]
    review = {c.case_id: c for c in results["code-review"].cases}
    assert "agent:skipped" in [s.name for s in review["clean-code-no-issues"].signals]
    assert "agent:skipped" not in [s.name for s in review["sql-injection"].signals]


def test_replay_reports_recorded_latency_usage_and_cost(results: dict[str, DatasetResult]) -> None:
    for result in results.values():
        for case in result.cases:
            ends = [s.payload for s in case.signals if s.name == "provider:end"]
            assert ends and case.metrics.cost == pytest.approx(sum(e["cost"] for e in ends))
            assert case.metrics.latency_ms >= sum(e["durationMs"] for e in ends)
            assert case.metrics.total_tokens > 0


def test_every_cassette_entry_is_used_and_replay_is_deterministic(
    results: dict[str, DatasetResult],
) -> None:
    for name, result in results.items():
        cassette = Cassette.load(DATASETS / "cassettes" / f"{name}.yaml")
        recorded = {(e.case, e.agent, e.call) for e in cassette}
        used = set()
        for case in result.cases:
            calls: dict[str, int] = {}
            for s in case.signals:
                if s.name == "provider:start":
                    agent = str(s.agent)
                    used.add((case.case_id, agent, calls.get(agent, 0)))
                    calls[agent] = calls.get(agent, 0) + 1
        assert used == recorded, name
    again = run_example("code-gen")
    for first, second in zip(results["code-gen"].cases, again.cases, strict=True):
        assert [s.name for s in first.signals] == [s.name for s in second.signals]
        assert first.final_state == second.final_state


def test_the_datasets_cassettes_and_agents_validate() -> None:
    files = sorted(str(p) for p in [*DATASETS.glob("*.yaml"), *DATASETS.glob("cassettes/*.yaml")])
    done = subprocess.run([str(CLI), "validate", *files], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("(cassette)") >= len(EXPECTED)
    for name in EXPECTED:
        assert load_agents(DATASETS / "agents" / f"{name}.yaml").agents


def test_cli_runs_code_review_prints_the_table_and_writes_results(tmp_path: Path) -> None:
    output = tmp_path / "results" / "code-review.json"
    done = subprocess.run(
        [str(CLI), "run", "datasets/code-review.yaml", "--output", str(output)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )
    assert done.returncode == 1, done.stdout + done.stderr  # the honest failure
    table = done.stdout
    assert "Code Review Agent Eval" in table
    for case_id in ("sql-injection", "race-condition", "very-long-file"):
        assert case_id in table
    assert "FAIL" in table and "10 passed, 1 failed" in table
    data: dict[str, Any] = json.loads(output.read_text())
    assert (data["kind"], data["totalCases"], data["passedCases"], data["failedCases"]) == (
        "dataset",
        11,
        10,
        1,
    )
    race = next(c for c in data["cases"] if c["caseId"] == "race-condition")
    assert race["passed"] is False and race["signals"]  # signals kept for failed cases
    assert [a["assertion"]["type"] for a in race["assertions"] if not a["passed"]] == [
        "output.matches"
    ]
    assert data["aggregateMetrics"]["totalCost"] > 0
    errors = sorted(schema_validator("result").iter_errors(data), key=lambda e: e.path)
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
