"""`signal-eval scenario` (and `validate` on scenario files): exit codes, output, --update-expected."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from processes import alive, ctrl_c, group_members
from typer.testing import CliRunner

from signal_eval_cli.cli import app
from signal_eval_cli.diffing import normalize_diff, unified_diff
from signal_eval_cli.loading import schema_validator
from signal_eval_cli.persistence import load_result
from signal_eval_cli.scenarios import ScenarioRunResult, find_scenarios, run_scenarios, update_run

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable
needs_npm = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None, reason="needs node and npm"
)

BEFORE = 'def greet(name):\n    return "hi " + name\n'
# Quotes, backslashes, a tab, non-ASCII and a control character: escaping must be exact.
AFTER = 'def greet(name):\n    return f"h\\u00e9llo\t\\"{name}\\" ✓ \x01"\n'


def invoke(*args: str) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A --root with a fixture and a scenarios/ dir holding one passing scenario."""
    (tmp_path / "fx").mkdir()
    (tmp_path / "fx" / "greet.py").write_text(BEFORE)
    (tmp_path / "scenarios").mkdir()
    write_json(tmp_path / "scenarios" / "greet.json", greet_scenario())
    return tmp_path


def greet_scenario(expected: str | None = None, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "greet",
        "title": "Greet nicely",
        "adapterId": "python-pytest",
        "goals": [{"goal": "import", "command": PY, "args": ["-c", "import greet"]}],
        "fixture": {"path": "fx"},
        "agentTask": {"instruction": f"WRITE|greet.py|{AFTER}"},
        "patternAssertions": [
            {"type": "file-exists", "path": "greet.py", "note": "kept"},
            {
                "type": "diff-match",
                "path": "greet.py",
                "expectedDiff": expected
                if expected is not None
                else "@@ ... @@\n" + AFTER.split("\n")[1].join(["+", "\n"]),
            },
        ],
    }
    data.update(extra)
    return data


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def test_scenario_passes_and_prints_goals_and_assertions(project: Path) -> None:
    result = invoke("scenario", "greet", "--dir", project / "scenarios", "--root", project)
    assert result.exit_code == 0, result.output
    for text in ("greet — Greet nicely", "goal import", "diff-match greet.py", "PASS"):
        assert text in result.output
    assert "1 passed, 0 failed" in result.output


def test_a_path_argument_and_root_option(project: Path) -> None:
    result = invoke("scenario", project / "scenarios" / "greet.json", "--root", project)
    assert result.exit_code == 0, result.output


def test_failures_exit_1_and_show_why(project: Path) -> None:
    data = greet_scenario(expected="@@ ... @@\n+something else\n")
    write_json(project / "scenarios" / "greet.json", data)
    result = invoke("scenario", "greet", "--dir", project / "scenarios", "--root", project)
    assert result.exit_code == 1
    assert "FAIL" in result.output and "expected hunk 1 of 1 not found" in result.output
    assert "0 passed, 1 failed" in result.output


def test_input_errors_exit_2(project: Path) -> None:
    scenarios = project / "scenarios"
    nothing = invoke("scenario", "--dir", scenarios)
    assert nothing.exit_code == 2 and "give scenario ids or files, or --all" in nothing.output
    unknown = invoke("scenario", "gret", "--dir", scenarios, "--root", project)
    assert unknown.exit_code == 2 and "did you mean 'greet'?" in unknown.output
    missing_fixture = invoke("scenario", "greet", "--dir", scenarios, "--root", project / "x")
    assert missing_fixture.exit_code == 2
    assert "fixture directory not found" in missing_fixture.output
    assert "Traceback" not in missing_fixture.output


def test_unknown_assertion_type_fails_validation_with_exit_2(project: Path) -> None:
    data = greet_scenario()
    data["patternAssertions"][1]["type"] = "diff-matches"
    bad = project / "scenarios" / "bad.json"
    write_json(bad, data)
    for command in (["scenario", bad, "--root", project], ["validate", bad]):
        result = invoke(*command)
        assert result.exit_code == 2
        line = next(ln for ln in result.output.splitlines() if "diff-matches" in ln)
        row = next(i for i, ln in enumerate(bad.read_text().splitlines(), 1) if "-matches" in ln)
        assert line.startswith(f"{bad}:{row}:15: ")
        assert "scenario 'greet'" in line and "did you mean 'diff-match'?" in line


def test_validate_recognises_scenarios(project: Path) -> None:
    result = invoke("validate", project / "scenarios" / "greet.json")
    assert result.exit_code == 0 and "(scenario)" in result.output


def test_output_json_has_the_reference_fields_and_loads_back(project: Path) -> None:
    out = project / "results" / "scenarios.json"
    result = invoke(
        "scenario", "--all", "--dir", project / "scenarios", "--root", project, "--output", out
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert (data["schemaVersion"], data["kind"]) == (1, "scenarios")
    [scenario] = data["scenarios"]
    assert scenario["id"] == "greet" and scenario["passed"] is True
    [goal] = scenario["goals"]
    assert {k: goal[k] for k in ("goal", "status", "exitCode", "error")} == {
        "goal": "import",
        "status": "passed",
        "exitCode": 0,
        "error": None,
    }
    assert goal["stdout"] == "" and goal["stderr"] == "" and goal["durationMs"] > 0
    assert [(p["assertion"]["type"], p["status"]) for p in scenario["patternAssertions"]] == [
        ("file-exists", "passed"),
        ("diff-match", "passed"),
    ]
    assert all(isinstance(p["details"], str) for p in scenario["patternAssertions"])
    assert "goal:end" in [s["name"] for s in scenario["signals"]]
    case_schema = schema_validator("result").evolve(
        schema={"$ref": "result.schema.json#/$defs/caseResult"}
    )
    for case in data["cases"]:
        case_schema.validate(case)
    assert isinstance(load_result(out), ScenarioRunResult)


def test_keep_workdir_reports_the_directory(project: Path) -> None:
    result = invoke(
        "scenario", "greet", "--dir", project / "scenarios", "--root", project, "--keep-workdir"
    )
    assert result.exit_code == 0
    line = next(ln for ln in result.output.splitlines() if ln.startswith("workdir: "))
    workdir = Path(line.removeprefix("workdir: "))
    assert (workdir / "greet.py").read_text() == AFTER
    shutil.rmtree(workdir.parent)


def test_concurrency_runs_every_scenario(project: Path) -> None:
    for i in range(3):
        write_json(project / "scenarios" / f"g{i}.json", greet_scenario(id=f"g{i}"))
    result = invoke(
        "scenario", "--all", "--dir", project / "scenarios", "--root", project,
        "--concurrency", "3",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "4 passed, 0 failed" in result.output


# -- --update-expected -------------------------------------------------------------------------


def actual_diff() -> str:
    return normalize_diff(unified_diff(BEFORE, AFTER, "greet.py"))


def test_update_expected_rewrites_only_the_expected_diff_in_json(project: Path) -> None:
    path = project / "scenarios" / "greet.json"
    stale = '@@ ... @@\n-old line\n+new "line"\n'
    write_json(path, greet_scenario(expected=stale))
    before = path.read_text()
    result = invoke("scenario", path, "--root", project, "--update-expected")
    assert result.exit_code == 0, result.output
    assert "updated expectedDiff of 1 diff-match assertion(s)" in result.output
    after = path.read_text()
    old_literal = json.dumps(stale, ensure_ascii=False)
    new_literal = json.dumps(actual_diff(), ensure_ascii=False)
    assert before.count(old_literal) == 1
    assert after == before.replace(old_literal, new_literal)  # every other byte unchanged
    assert json.loads(after)["patternAssertions"][1]["expectedDiff"] == actual_diff()
    assert "\\u0001" in after and "✓" in after and '\\\\\\"' in after  # exact escaping
    again = invoke("scenario", path, "--root", project)
    assert again.exit_code == 0, again.output


def test_update_run_rewrites_the_files_and_refreshes_the_run_in_process(project: Path) -> None:
    """What ``--update-expected`` calls (the library's): the files it changed, and the
    run's results recomputed, the rewritten diff-match now passing."""
    path = project / "scenarios" / "greet.json"
    write_json(path, greet_scenario(expected="@@ ... @@\n-old line\n+new line\n"))
    scenarios = find_scenarios([str(path)], directory=project / "scenarios")
    run = asyncio.run(run_scenarios(scenarios, root=project))
    assert not run.passed and not run.scenarios[0].passed
    assert update_run(scenarios, run) == [(path, 1)]
    assert run.passed and run.scenarios[0].passed and run.cases[0].passed
    assert json.loads(path.read_text())["patternAssertions"][1]["expectedDiff"] == actual_diff()
    assert update_run(scenarios, run) == []  # nothing left failing


def test_update_expected_keeps_passing_and_other_failures_alone(project: Path) -> None:
    path = project / "scenarios" / "greet.json"
    data = greet_scenario()
    data["patternAssertions"].append(
        {"type": "diff-match", "path": "absent.py", "expectedDiff": "+x\n"}
    )
    write_json(path, data)
    before = path.read_bytes()
    result = invoke("scenario", path, "--root", project, "--update-expected")
    assert result.exit_code == 1  # "file missing" has no actual diff to record
    assert path.read_bytes() == before


def test_update_expected_in_yaml_keeps_comments_and_block_style(project: Path) -> None:
    path = project / "scenarios" / "greet.yaml"
    (project / "scenarios" / "greet.json").unlink()
    text = (
        "# a comment that must survive\r\n"
        "id: greet\r\nadapterId: python-pytest\r\n"
        f"goals: [{{goal: import, command: {json.dumps(PY)}, args: [-c, import greet]}}]\r\n"
        "fixture: {path: fx}\r\n"
        "agentTask:\r\n  instruction: " + json.dumps(f"WRITE|greet.py|{AFTER}") + "\r\n"
        "patternAssertions:\r\n"
        "  - type: diff-match\r\n"
        "    path: greet.py\r\n"
        "    expectedDiff: |\r\n"
        "      @@ ... @@\r\n"
        "      -stale\r\n"
        "\r\n"
        "    note: after the block   # trailing comment\r\n"
    )
    path.write_bytes(text.encode())
    result = invoke("scenario", path, "--root", project, "--update-expected")
    assert result.exit_code == 0, result.output
    after = path.read_bytes().decode()
    data = yaml.safe_load(after)
    assert data["patternAssertions"][0]["expectedDiff"] == actual_diff()
    assert data["patternAssertions"][0]["note"] == "after the block"
    prefix = text[: text.index("expectedDiff: ") + len("expectedDiff: ")]
    suffix = text[text.index("    note:") :]
    assert after.startswith(prefix) and after.endswith(suffix)


def test_update_expected_uses_a_block_literal_when_it_can(tmp_path: Path) -> None:
    from signal_eval_cli.scenarios.update import rewrite_strings

    path = tmp_path / "s.yaml"
    path.write_text("a:\n  - x: 1\n    d: |\n      old\n    e: 2\n")
    rewrite_strings(path, {("a", 0, "d"): "@@ ... @@\n-a\n+\tb\n\n+c\n"})
    assert (
        path.read_text()
        == "a:\n  - x: 1\n    d: |\n      @@ ... @@\n      -a\n      +\tb\n\n      +c\n    e: 2\n"
    )
    rewrite_strings(path, {("a", 0, "d"): "no newline"})
    assert yaml.safe_load(path.read_text())["a"][0]["d"] == "no newline"
    rewrite_strings(path, {("a", 0, "d"): "carriage\r\nreturn\u2028"})
    assert yaml.safe_load(path.read_text())["a"][0] == {
        "x": 1,
        "d": "carriage\r\nreturn\u2028",
        "e": 2,
    }


def test_update_expected_keeps_a_utf16_file_in_its_encoding(tmp_path: Path) -> None:
    from signal_eval_cli.scenarios.update import rewrite_strings

    path = tmp_path / "s.yaml"
    path.write_bytes("\ufeffa:\n  - d: old # é\n    e: 2\n".encode("utf-16-be"))
    rewrite_strings(path, {("a", 0, "d"): "new"})
    assert path.read_bytes().decode("utf-16-be") == '\ufeffa:\n  - d: "new" # é\n    e: 2\n'


def test_a_report_over_an_agent_the_scenario_runs_is_refused(tmp_path: Path) -> None:
    """``scenario s.yaml -o agent.py``, whose command agent is
    ``{scenarioDir}/agent.py``, wrote the results over the user's agent script."""
    (tmp_path / "fx").mkdir()
    (tmp_path / "agent.py").write_text("print('editing')\n")
    (tmp_path / "fixer.py").write_text("def create():\n    return lambda input, ctx: None\n")
    (tmp_path / "s.yaml").write_text(
        "id: s\nadapterId: python-pytest\ngoals: []\nfixture: {path: fx}\nagentTask: {instruction: 'WRITE|a.txt|a'}\n"
        'agent: {command: ["{python}", "{scenarioDir}/agent.py", "{workspace}"]}\n'
        "patternAssertions: [{type: file-exists, path: a.txt}]\n"
    )
    (tmp_path / "h.yaml").write_text(
        (tmp_path / "s.yaml")
        .read_text()
        .replace("id: s", "id: h")
        .replace(
            'command: ["{python}", "{scenarioDir}/agent.py", "{workspace}"]',
            "harness: fixer.py:create",
        )
    )
    for scenario, agent in (("s.yaml", "agent.py"), ("h.yaml", "fixer.py")):
        result = invoke("scenario", tmp_path / scenario, "-o", tmp_path / agent)
        assert result.exit_code == 2, result.output
        assert f"{tmp_path / agent}: is an input of this command" in result.output
    (tmp_path / "m.yaml").write_text(  # a matrix of agents over the scenario: alike
        "name: m\nscenarios: [h.yaml]\nvariants:\n  - id: v\n    name: V\n"
        '    agent: {command: ["{python}", "{scenarioDir}/agent.py"]}\n'
    )
    result = invoke("matrix", tmp_path / "m.yaml", "-o", tmp_path / "agent.py")
    assert result.exit_code == 2, result.output
    assert f"{tmp_path / 'agent.py'}: is an input of this command" in result.output
    assert (tmp_path / "agent.py").read_text() == "print('editing')\n"
    assert not list(tmp_path.glob("*.journal.jsonl"))  # refused before anything ran


# -- the shipped seed scenario through the CLI ---------------------------------------------------


@needs_npm
def test_backend_api_opt_through_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the defaults: --dir scenarios --root .
    result = invoke("scenario", "backend-api-opt")
    assert result.exit_code == 0, result.output
    assert "diff-match src/routes/users.js" in result.output


def test_reports_and_compare_treat_scenarios_as_cases(project: Path) -> None:
    from signal_eval_cli.compare import compare

    scenarios = project / "scenarios"
    good_json, bad_json = project / "good.json", project / "bad.json"
    markdown, junit = project / "report.md", project / "junit.xml"
    good = invoke("scenario", "greet", "--dir", scenarios, "--root", project, "-o", good_json)
    assert good.exit_code == 0, good.output
    write_json(scenarios / "greet.json", greet_scenario(expected="@@ ... @@\n+nope\n"))
    result = invoke(
        "scenario", "greet", "--dir", scenarios, "--root", project, "-o", bad_json,
        "--markdown", markdown, "--junit", junit,
    )  # fmt: skip
    assert result.exit_code == 1
    assert "`greet`" in markdown.read_text()
    xml = junit.read_text()
    assert 'name="greet"' in xml and "<failure" in xml and "expected hunk 1 of 1" in xml
    comparison = compare(load_result(good_json), load_result(bad_json))
    flips = [r for r in comparison.regressions if r.type == "pass_to_fail"]
    assert [r.case_id for r in flips] == ["greet"]  # latency may regress too: timing noise


# -- Ctrl-C ----------------------------------------------------------------------------------------

CLI = Path(sys.executable).parent / "signal-eval"


def _command_of(pid: int) -> bytes:
    """``/proc/<pid>/cmdline`` (empty once the process is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _gone(pid: int, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while alive(pid) or group_members(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.skipif(
    not Path("/proc").is_dir() or shutil.which("sh") is None or shutil.which("sleep") is None,
    reason="needs /proc, sh and sleep",
)
def test_ctrl_c_writes_the_finished_scenarios_and_kills_running_goals(tmp_path: Path) -> None:
    (tmp_path / "fx").mkdir()
    (tmp_path / "fx" / "README").write_text("tiny fixture\n")
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    marker = tmp_path / "sleep.pid"
    write_json(
        scenarios / "quick.json",
        {
            "id": "quick",
            "adapterId": "python-pytest",
            "goals": [{"goal": "ok", "command": PY, "args": ["-c", "pass"]}],
            "fixture": {"path": "fx"},
        },
    )
    # The goal's shell writes its pid (its process group) and becomes `sleep 600`: far longer
    # than the test, so however loaded the machine, Ctrl-C lands while the goal runs.
    write_json(
        scenarios / "stuck.json",
        {
            "id": "stuck",
            "adapterId": "python-pytest",
            "goals": [
                {
                    "goal": "hang",
                    "command": "sh",
                    "args": ["-c", f"echo $$ > '{marker}.tmp' && mv '{marker}.tmp' '{marker}' "
                             "&& exec sleep 600"],
                }
            ],
            "fixture": {"path": "fx"},
        },
    )  # fmt: skip
    output = tmp_path / "out" / "partial.json"
    process = subprocess.Popen(
        [str(CLI), "scenario", "quick", "stuck", "--dir", str(scenarios), "--root", str(tmp_path),
         "--output", str(output)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "COLUMNS": "120"},
    )  # fmt: skip
    # Scenarios run one at a time, in order: the stuck goal started, so quick finished.
    try:
        stdout, stderr = ctrl_c(
            process,
            lambda: marker.exists() and _command_of(int(marker.read_text())).startswith(b"sleep"),
        )
    finally:
        sleeper = int(marker.read_text()) if marker.exists() else None
        leftover = sleeper is not None and not _gone(sleeper, timeout_s=120)
        if leftover:
            os.killpg(sleeper, signal.SIGKILL)  # type: ignore[arg-type]
    assert process.returncode == 130, stdout + stderr
    assert not leftover, "the running goal's `sleep 600` outlived the CLI"
    assert "Traceback" not in stderr, stderr
    data = json.loads(output.read_text())
    assert data["interrupted"] is True
    assert [s["id"] for s in data["scenarios"]] == ["quick"]
    assert data["scenarios"][0]["passed"] is True
    assert [c["caseId"] for c in data["cases"]] == ["quick"]
    reloaded = load_result(output)
    assert isinstance(reloaded, ScenarioRunResult) and reloaded.interrupted
    assert "interrupted" in stdout


# -- console output of a failed goal -----------------------------------------------------------------


def test_a_failed_goal_shows_only_the_tail_of_its_output(project: Path) -> None:
    one_line = "import sys; sys.stdout.write('x' * 25000); sys.exit(1)"
    many_lines = "import sys\nfor i in range(400): print(f'line {i:03d}')\nsys.exit(1)"
    for name, code in (("long", one_line), ("many", many_lines)):
        data = greet_scenario(id=name)
        data["goals"] = [{"goal": "noisy", "command": PY, "args": ["-c", code]}]
        write_json(project / "scenarios" / f"{name}.json", data)
    out = project / "results.json"
    result = invoke(
        "scenario", "long", "many", "--dir", project / "scenarios", "--root", project, "-o", out
    )
    assert result.exit_code == 1, result.output
    tables = result.output.split("\nmany — ")
    assert len(tables) == 2, result.output
    for table in tables:
        assert len(table.splitlines()) < 30, table
        assert re.search(r"… [\d,]+ earlier lines", table), table
    assert "line 399" in tables[1] and "line 387" not in tables[1]
    assert "outputtruncatedat10000bytes" in re.sub(r"[│\s]", "", tables[0])  # at any width
    # The JSON keeps every captured byte.
    long, many = json.loads(out.read_text())["scenarios"]
    assert long["goals"][0]["stdout"].startswith("x" * 10_000)
    assert many["goals"][0]["stdout"].count("\n") == 400


def test_all_skips_a_results_file_saved_among_the_scenarios(project: Path) -> None:
    """``scenario --all -o scenarios/out.json``, then ``--all`` again: the results file
    was read as a broken scenario ("missing required field 'adapterId'"), exit 2."""
    out = project / "scenarios" / "out.json"
    first = invoke(
        "scenario", "--all", "--dir", project / "scenarios", "--root", project, "-q", "-o", out
    )
    assert first.exit_code == 0, first.output
    again = invoke("scenario", "--all", "--dir", project / "scenarios", "--root", project, "-q")
    assert again.exit_code == 0, again.output
    assert [
        s.id for s in find_scenarios([], directory=project / "scenarios", include_all=True)
    ] == ["greet"]
