"""run_scenario end to end: real fixtures, real processes, the trace, and the results."""

from __future__ import annotations

import asyncio
import json
import shutil
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from processes import RENDEZVOUS

from signal_eval_cli.diffing import unified_diff
from signal_eval_cli.persistence import load_result, save_result
from signal_eval_cli.results import DatasetResult
from signal_eval_cli.scenarios import (
    ScenarioResult,
    ScenarioRunResult,
    load_scenario,
    parse_scenario,
    run_scenario,
    run_scenarios,
)
from signal_eval_cli.scenarios.model import Scenario

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
needs_npm = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None, reason="needs node and npm"
)

APP_BEFORE = "def total(items):\n    result = 0\n    for item in items:\n        result += item\n    return result\n"
APP_AFTER = "def total(items):\n    return sum(items)\n"


def snapshot_tree(root: Path) -> dict[str, tuple[int, bytes]]:
    """Path → (mode, bytes) of every file and link: what "byte for byte unchanged" means."""
    out = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
        out[path.relative_to(root).as_posix()] = (stat.S_IMODE(info.st_mode), data)
    return out


def run(scenario: Scenario, root: Path, **options: Any) -> ScenarioResult:
    return asyncio.run(run_scenario(scenario, root=root, **options))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A --root with a small Python fixture ``fx`` and a repo-level file."""
    fixture = tmp_path / "fx"
    fixture.mkdir()
    (fixture / "app.py").write_text(APP_BEFORE)
    (fixture / "README.md").write_text("# fx\n")
    (tmp_path / "VERSION").write_text("1.0.0\n")
    return tmp_path


def scenario(**extra: Any) -> Scenario:
    data: dict[str, Any] = {
        "id": "py-total",
        "title": "Simplify total()",
        "adapterId": "python-pytest",
        "goals": [{"goal": "check", "command": PY, "args": ["-c", "import app"]}],
        "fixture": {"path": "fx"},
        "agentTask": {"instruction": f"WRITE|app.py|{APP_AFTER}"},
        "patternAssertions": [
            {
                "type": "diff-match",
                "path": "app.py",
                "expectedDiff": "@@ ... @@\n-    result = 0\n-    for item in items:\n"
                "-        result += item\n-    return result\n+    return sum(items)\n",
            }
        ],
    }
    data.update(extra)
    return parse_scenario(data)


# -- the seed scenario --------------------------------------------------------------------------


@needs_npm
def test_backend_api_opt_passes_and_leaves_the_fixture_byte_for_byte_unchanged() -> None:
    fixture = REPO / "fixtures" / "node-api-nplus1"
    before = snapshot_tree(fixture)
    result = run(load_scenario(REPO / "scenarios" / "backend-api-opt.json"), REPO)
    assert result.passed, result.to_dict()
    assert [g.status for g in result.goals] == ["passed"]
    diff = result.pattern_assertions[-1]
    assert diff.assertion["type"] == "diff-match" and diff.passed
    assert "-    const posts = await db.getPostsForUser(user.id);" in str(diff.actual)
    assert snapshot_tree(fixture) == before
    workdir = next(s.payload["path"] for s in result.signals if s.name == "workspace:ready")
    assert not Path(workdir).exists() and result.workdir is None  # temp copy removed


@needs_npm
def test_backend_api_opt_without_its_agent_task_fails_usefully() -> None:
    seed = load_scenario(REPO / "scenarios" / "backend-api-opt.json")
    seed.agent_task = None
    result = run(seed, REPO)
    assert not result.passed
    [test_goal] = result.goals
    assert test_goal.status == "failed" and test_goal.exit_code == 1
    assert "an N+1 query" in test_goal.stdout + test_goal.stderr
    by_type = {a.assertion["type"]: a for a in result.pattern_assertions}
    assert not by_type["diff-match"].passed
    assert by_type["diff-match"].message.startswith(
        "src/routes/users.js: no changes: the actual diff is empty"
    )
    assert not by_type["file-contains"].passed
    assert "db.getAllPosts()" in by_type["file-contains"].message
    signal_not = next(a for a in result.assertions if a.assertion["type"] == "signal.not")
    assert not signal_not.passed  # goal:end with {status: failed} is in the trace


# -- order, signals, results ---------------------------------------------------------------------


def test_signals_follow_seed_order_and_point_at_their_cause(root: Path) -> None:
    result = run(scenario(), root)
    assert result.passed, result.to_dict()
    names = [s.name for s in result.signals]
    assert names == [
        "scenario:start",
        "workspace:ready",
        "agentTask:applied",
        "workspace:diff",
        "goal:start",
        "goal:end",
        "assertion:result",
        "scenario:end",
        "harness:end",
    ]
    start = result.signals[0]
    assert start.payload["id"] == "py-total" and start.payload["goals"] == ["check"]
    assert all(s.parent == start.id for s in result.signals[1:] if s.name != "goal:end")
    assert result.signals[3].payload == {"files": ["app.py"]}
    goal_start, goal_end = result.signals[4], result.signals[5]
    assert goal_end.parent == goal_start.id
    assert goal_end.payload["goal"] == "check" and goal_end.payload["exitCode"] == 0
    assert goal_end.payload["status"] == "passed" and goal_end.payload["durationMs"] > 0
    assert result.signals[2].payload == {"files": ["app.py"]}
    assert result.signals[-2].payload["passed"] is True
    assert result.signals[-1].payload["durationMs"] == result.signals[-2].payload["durationMs"]


def test_baseline_is_taken_before_the_agent_task_and_goals(root: Path) -> None:
    """A goal rewriting the file after the agentTask shows up in the diff, against the baseline."""
    rewrite = "open('app.py', 'a').write('# touched by the goal\\n')"
    result = run(
        scenario(
            goals=[{"goal": "touch", "command": PY, "args": ["-c", rewrite]}],
            patternAssertions=[
                {
                    "type": "diff-match",
                    "path": "app.py",
                    "match": "exact",
                    "expectedDiff": unified_diff(
                        APP_BEFORE, APP_AFTER + "# touched by the goal\n", "app.py"
                    ),
                }
            ],
        ),
        root,
    )
    assert result.passed, result.pattern_assertions[0].message


def test_trace_assertions_judge_the_scenario_run(root: Path) -> None:
    failing_goal = {"goal": "fail", "command": PY, "args": ["-c", "raise SystemExit(2)"]}
    result = run(
        scenario(
            goals=["build", failing_goal],
            assertions=[
                {"type": "signal.not", "pattern": "goal:end", "payload": {"status": "failed"}},
                {"type": "signal.count", "pattern": "goal:*", "exact": 4},
                {"type": "signal.contains", "pattern": "agentTask:applied"},
                {"type": "metric.latency.max", "value": 60_000},
            ],
        ),
        root,
    )
    assert not result.passed
    assert [g.status for g in result.goals] == ["passed", "failed"]  # build: no requirements
    assert result.goals[0].skipped
    assert [a.passed for a in result.assertions] == [False, True, True, True]


def test_every_declared_pattern_assertion_has_exactly_one_result(root: Path) -> None:
    declared = [
        {"type": "file-exists", "path": "app.py"},
        {"type": "file-exists", "path": "missing.py"},
        {"type": "file-contains", "path": "app.py", "includes": ["sum(", "nope", "items"]},
        {"type": "diff-match", "path": "missing.py", "expectedDiff": "+x\n"},
        {"type": "diff-match", "path": "README.md", "expectedDiff": "+x\n"},
        {
            "type": "diff-match",
            "path": "app.py",
            "expectedDiff": "@@ ... @@\n+    return sum(items)\n",
        },
    ]
    s = scenario(patternAssertions=declared)
    s.pattern_assertions.append({"type": "file-contains", "path": "app.py"})  # raises KeyError
    result = run(s, root)
    assert len(result.pattern_assertions) == len(declared) + 1
    assert [r.assertion for r in result.pattern_assertions] == s.pattern_assertions
    assert [r.passed for r in result.pattern_assertions] == [
        True, False, False, False, False, True, False
    ]  # fmt: skip
    messages = [r.message for r in result.pattern_assertions]
    assert messages[1] == "file missing: missing.py"
    assert messages[2] == ('app.py: 1 of 3 expected text(s) not found (2 found): "nope"')
    assert messages[3] == "file missing: missing.py exists neither before nor after the run"
    assert messages[4].startswith("README.md: no changes")
    assert "'includes'" in messages[6]  # the check could not run: a failure, not a gap
    assert sum(s.name == "assertion:result" for s in result.signals) == len(declared) + 1


def test_a_mismatch_names_the_hunk_and_previews_the_actual_diff_up_to_2500_chars(
    root: Path,
) -> None:
    big = "".join(f"line {i}\n" for i in range(600))
    result = run(
        scenario(
            agentTask={"instruction": f"WRITE|app.py|{big}"},
            patternAssertions=[
                {
                    "type": "diff-match",
                    "path": "app.py",
                    "expectedDiff": "@@ ... @@\n+    return sum(items)\n",
                }
            ],
        ),
        root,
    )
    [checked] = result.pattern_assertions
    assert not checked.passed
    assert "expected hunk 1 of 1 not found in the actual diff" in checked.message
    assert "+    return sum(items)" in checked.message
    preview = checked.message.split("\nactual diff:\n", 1)[1]
    assert preview.startswith("--- a/app.py\n+++ b/app.py\n@@ -1,5 +1,600 @@\n")
    assert preview.endswith("more characters)")
    assert len(preview) < 2500 + 40


def test_contains_accepts_the_seed_form_and_a_verbatim_git_hunk(root: Path) -> None:
    verbatim = unified_diff(APP_BEFORE, APP_AFTER, "app.py").split("\n", 2)[2]  # no headers
    assert verbatim.startswith("@@ -1,5 +1,2 @@")
    seed_form = scenario().pattern_assertions[0]
    result = run(
        scenario(
            patternAssertions=[
                seed_form,
                {"type": "diff-match", "path": "app.py", "expectedDiff": verbatim},
                {
                    "type": "diff-match",
                    "path": "app.py",
                    "match": "exact",
                    "expectedDiff": verbatim.replace("@@ -1,5 +1,2 @@", "@@ ... @@"),
                },
                {
                    "type": "diff-match",
                    "path": "app.py",
                    "match": "exact",
                    "expectedDiff": seed_form["expectedDiff"],  # context is missing: not exact
                },
            ]
        ),
        root,
    )
    assert [r.passed for r in result.pattern_assertions] == [True, True, True, False]


def test_new_files_diff_against_nothing(root: Path) -> None:
    result = run(
        scenario(
            agentTask={"instruction": "WRITE|pkg/new.py|x = 1\n"},
            patternAssertions=[
                {"type": "diff-match", "path": "pkg/new.py", "expectedDiff": "@@ ... @@\n+x = 1\n"},
                {"type": "file-exists", "path": "pkg/new.py"},
            ],
        ),
        root,
    )
    assert all(r.passed for r in result.pattern_assertions), result.pattern_assertions


def test_scope_repo_reads_the_root_directory(root: Path) -> None:
    bump = f"open({str(root / 'VERSION')!r}, 'w').write('1.1.0\\n')"
    result = run(
        scenario(
            goals=[{"goal": "bump", "command": PY, "args": ["-c", bump]}],
            patternAssertions=[
                {"type": "file-exists", "path": "VERSION", "scope": "repo"},
                {"type": "file-exists", "path": "VERSION"},
                {"type": "file-contains", "path": "VERSION", "scope": "repo", "includes": "1.1"},
                {
                    "type": "diff-match",
                    "path": "VERSION",
                    "scope": "repo",
                    "expectedDiff": "-1.0.0\n+1.1.0\n",
                },
            ],
        ),
        root,
    )
    assert [r.passed for r in result.pattern_assertions] == [True, False, True, True]
    assert result.pattern_assertions[1].message == "file missing: VERSION"


def test_a_symlink_escape_at_run_time_writes_nothing_and_runs_no_goal(
    root: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (root / "fx" / "link").symlink_to(outside)
    before = snapshot_tree(root / "fx")
    result = run(
        scenario(agentTask={"instruction": ["WRITE|ok.txt|fine", "WRITE|link/evil.txt|x"]}),
        root,
        keep_workdir=True,
    )
    assert not result.passed
    assert result.error is not None and "through the symlink 'link'" in result.error
    assert list(outside.iterdir()) == []
    assert result.workdir is not None
    assert not (Path(result.workdir) / "ok.txt").exists()  # checked before writing
    assert [g.error for g in result.goals] == [f"not run: {result.error}"]
    assert len(result.pattern_assertions) == 1 and not result.pattern_assertions[0].passed
    assert "agentTask:failed" in [s.name for s in result.signals]
    assert snapshot_tree(root / "fx") == before
    shutil.rmtree(Path(result.workdir).parent)


def test_keep_workdir_and_copy_to_temp_false(root: Path) -> None:
    kept = run(scenario(), root, keep_workdir=True)
    assert kept.workdir is not None
    workdir = Path(kept.workdir)
    assert (workdir / "app.py").read_text() == APP_AFTER
    assert (root / "fx" / "app.py").read_text() == APP_BEFORE
    shutil.rmtree(workdir.parent)

    in_place = run(scenario(fixture={"path": "fx", "copyToTemp": False}), root)
    assert in_place.passed and in_place.workdir == str((root / "fx").resolve())
    assert (root / "fx" / "app.py").read_text() == APP_AFTER  # the user asked for it


def test_a_missing_fixture_is_an_input_error(root: Path) -> None:
    from signal_eval_cli.errors import InputError

    with pytest.raises(InputError, match="fixture directory not found"):
        run(scenario(fixture={"path": "nope"}), root)


# -- results as cases -----------------------------------------------------------------------------


def test_a_scenario_result_is_a_case_result(root: Path) -> None:
    result = run(scenario(goals=["build"]), root)
    case = result.to_case_result()
    assert case.kind == "scenario" and case.case_id == "py-total" and case.passed
    assert case.name == "Simplify total()"
    assert [a.assertion["type"] for a in case.assertions] == ["goal", "diff-match"]
    assert case.extra["goals"][0]["goal"] == "build"
    assert case.extra["patternAssertions"][0]["status"] == "passed"
    assert case.to_dict()["kind"] == "scenario"


def test_run_result_is_a_dataset_result_and_round_trips(root: Path, tmp_path: Path) -> None:
    bad = scenario(id="bad")
    bad.agent_task = None
    run_result = asyncio.run(run_scenarios([scenario(), bad], root=root, concurrency=2))
    assert isinstance(run_result, DatasetResult)
    assert [c.case_id for c in run_result.cases] == ["py-total", "bad"]
    assert (run_result.passed_cases, run_result.failed_cases) == (1, 1)
    plain = run_result.to_dataset_result()
    assert type(plain) is DatasetResult and plain.cases == run_result.cases

    path = tmp_path / "out" / "results.json"
    save_result(run_result, path, signals="all")
    data = json.loads(path.read_text())
    assert list(data)[:3] == ["schemaVersion", "kind", "scenarios"]
    assert (data["schemaVersion"], data["kind"]) == (1, "scenarios")
    first = data["scenarios"][0]
    assert first["id"] == "py-total" and first["passed"] is True
    assert set(first["goals"][0]) >= {
        "goal", "status", "exitCode", "stdout", "stderr", "durationMs", "error"
    }  # fmt: skip
    assert first["goals"][0]["status"] == "passed"
    pattern = first["patternAssertions"][0]
    assert (pattern["status"], pattern["assertion"]["type"]) == ("passed", "diff-match")
    assert "details" in pattern
    assert first["signals"][0]["name"] == "scenario:start"
    assert data["cases"][1]["kind"] == "scenario"

    loaded = load_result(path)
    assert isinstance(loaded, ScenarioRunResult)
    assert loaded.to_dict("all") == run_result.to_dict("all")


def test_scenarios_run_concurrently_and_keep_their_order(root: Path) -> None:
    marks = [str(root / f"started-{i}") for i in range(3)]
    scenarios = [
        scenario(
            id=f"s{i}",
            goals=[
                {
                    "goal": "meet",
                    "command": PY,
                    "args": ["-c", RENDEZVOUS, marks[i], *(m for m in marks if m != marks[i])],
                }
            ],
        )
        for i in range(3)
    ]
    result = asyncio.run(run_scenarios(scenarios, root=root, concurrency=3))
    assert all(s.passed for s in result.scenarios), [s.id for s in result.scenarios]
    assert [s.id for s in result.scenarios] == ["s0", "s1", "s2"]
    assert all(s.passed for s in result.scenarios)


# -- the smoke scenarios -----------------------------------------------------------------------------


def test_python_smoke_runs_pytest_with_this_interpreter() -> None:
    result = run(load_scenario(REPO / "scenarios" / "python-smoke.yaml"), REPO)
    assert result.passed, result.to_dict()
    build, test = result.goals
    assert build.skipped and test.command[:3] == [PY, "-m", "pytest"]
    assert "2 passed" in test.stdout


@needs_npm
def test_typescript_smoke_runs_npm_build_test_and_lint() -> None:
    result = run(load_scenario(REPO / "scenarios" / "typescript-smoke.json"), REPO)
    assert result.passed, result.to_dict()
    assert [g.command[:3] for g in result.goals] == [
        ["npm", "run", "build"],
        ["npm", "run", "test"],
        ["npm", "run", "lint"],
    ]
