"""Per-test grading: JUnit reports from pytest and node --test, tests.* assertions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from signal_eval_cli.cli import app
from signal_eval_cli.scenarios.junit import JunitError, parse_junit

REPO = Path(__file__).resolve().parents[1]
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")

PY_FIX = (
    "PATCH|--- a/calc.py\n+++ b/calc.py\n@@ -8,2 +8,2 @@\n def sub(a: int, b: int) -> int:\n"
    "-    return a + b\n+    return a - b\n"
)
PY_WRONG = (  # "fixes" nothing and breaks add
    "PATCH|--- a/calc.py\n+++ b/calc.py\n@@ -4,2 +4,2 @@\n def add(a: int, b: int) -> int:\n"
    "-    return a + b\n+    return a * b\n"
)
NODE_FIX = (
    "PATCH|--- a/calc.js\n+++ b/calc.js\n@@ -6,3 +6,3 @@\n function sub(a, b) {\n"
    "-  return a + b;\n+  return a - b;\n }\n"
)
NODE_WRONG = (
    "PATCH|--- a/calc.js\n+++ b/calc.js\n@@ -2,3 +2,3 @@\n function add(a, b) {\n"
    "-  return a + b;\n+  return a * b;\n }\n"
)


def scenario(tmp_path: Path, kind: str, instruction: str, fail_to_pass: str) -> Path:
    if kind == "python":
        goal = {
            "goal": "test",
            "command": "{python}",
            "args": ["-m", "pytest", "-q", "--junitxml=report.xml"],
            "report": "junit report.xml",
        }
    else:
        goal = {
            "goal": "test",
            "command": "node",
            "args": [
                "--test",
                "--test-reporter=junit",
                "--test-reporter-destination=out/r.xml",
                "calc.test.js",
            ],
            "report": "junit out/r.xml",
        }
    data: dict[str, Any] = {
        "id": f"grading-{kind}",
        "adapterId": "python-pytest",
        "goals": [goal],
        "fixture": {"path": f"fixtures/grading-{kind}"},  # beside the scenario, as a project has it
        "agentTask": {"instruction": instruction},
        "assertions": [
            {"type": "tests.pass", "ids": [fail_to_pass]},
            {"type": "tests.stillPass", "all": True},
            {"type": "tests.count", "status": "passed", "exact": 3},
        ],
    }
    shutil.copytree(
        REPO / "fixtures" / f"grading-{kind}", tmp_path / "fixtures" / f"grading-{kind}"
    )
    path = tmp_path / f"{kind}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def run(path: Path) -> tuple[int, dict[str, Any]]:
    out = path.with_suffix(".json")
    result = CliRunner().invoke(app, ["scenario", str(path), "-o", str(out)])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, json.loads(out.read_text())["scenarios"][0]


CASES = [
    pytest.param("python", PY_FIX, PY_WRONG, "test_calc::test_sub", "test_calc::test_add"),
    pytest.param("node", NODE_FIX, NODE_WRONG, "s?b", "add", marks=needs_node),
]


@pytest.mark.parametrize(("kind", "fix", "wrong", "f2p", "p2p"), CASES)
def test_a_correct_patch_passes_fail_to_pass_and_pass_to_pass(
    tmp_path: Path, kind: str, fix: str, wrong: str, f2p: str, p2p: str
) -> None:
    code, result = run(scenario(tmp_path, kind, fix, f2p))
    assert code == 0, result
    messages = [a["message"] for a in result["assertions"]]
    assert all(a["passed"] for a in result["assertions"]), messages
    assert "1 test(s) pass" in messages[0]
    assert messages[1] == "all 2 test(s) that passed on the baseline still pass"
    tests = {t["id"]: t["status"] for t in result["goals"][0]["tests"]}
    assert len(tests) == 3 and set(tests.values()) == {"passed"}
    baseline = [s["payload"] for s in result["signals"] if s["name"] == "tests:result"]
    assert [p["baseline"] for p in baseline] == [True, False]


@pytest.mark.parametrize(("kind", "fix", "wrong", "f2p", "p2p"), CASES)
def test_a_wrong_patch_fails_both_naming_the_tests(
    tmp_path: Path, kind: str, fix: str, wrong: str, f2p: str, p2p: str
) -> None:
    code, result = run(scenario(tmp_path, kind, wrong, f2p))
    assert code == 1
    f2p_check, p2p_check, count = result["assertions"]
    assert not f2p_check["passed"] and not p2p_check["passed"] and not count["passed"]
    sub_id = "test_calc::test_sub" if kind == "python" else "sub"
    assert f"not passing: {sub_id} (failed" in f2p_check["message"]
    assert "1 of 2 test(s) that passed on the baseline no longer pass" in p2p_check["message"]
    assert f"{p2p} (failed" in p2p_check["message"]


def test_ids_are_globs_and_a_glob_matching_nothing_lists_the_tests(tmp_path: Path) -> None:
    path = scenario(tmp_path, "python", PY_FIX, "test_calc::*")
    data = yaml.safe_load(path.read_text())
    data["assertions"] = [
        {"type": "tests.pass", "ids": ["test_calc*"]},
        {"type": "tests.stillPass", "ids": ["*TestMul::test_mul"]},
        {"type": "tests.pass", "ids": ["test_nothing"]},
    ]
    path.write_text(yaml.safe_dump(data))
    code, result = run(path)
    assert code == 1
    first, second, third = result["assertions"]
    assert first["passed"] and "3 test(s) pass" in first["message"]
    assert second["passed"]
    assert "no test matches test_nothing (tests: test_calc.TestMul::test_mul" in third["message"]
    assert not any(s["name"] == "baseline:start" for s in result["signals"])


def test_a_missing_report_fails_the_assertion_saying_so(tmp_path: Path) -> None:
    path = scenario(tmp_path, "python", PY_FIX, "test_calc::test_sub")
    data = yaml.safe_load(path.read_text())
    data["goals"][0]["report"] = "junit elsewhere.xml"
    data["assertions"] = data["assertions"][:1]
    path.write_text(yaml.safe_dump(data))
    code, result = run(path)
    assert code == 1
    message = result["assertions"][0]["message"]
    assert message == (
        "no test results: goal 'test': no report at elsewhere.xml (the goal ended with exit 0)"
    )


def test_a_report_path_leaving_the_workspace_is_exit_2(tmp_path: Path) -> None:
    path = scenario(tmp_path, "python", PY_FIX, "x")
    data = yaml.safe_load(path.read_text())
    data["goals"][0]["report"] = "junit ../r.xml"
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2 and "report: path '../r.xml' contains '..'" in result.output


def test_parse_junit_refuses_non_reports() -> None:
    with pytest.raises(JunitError, match="DOCTYPE"):
        parse_junit(b'<!DOCTYPE x [<!ENTITY a "b">]><testsuites/>')
    with pytest.raises(JunitError, match="not XML"):
        parse_junit(b"<testsuites>")
    with pytest.raises(JunitError, match="root element is <html>"):
        parse_junit(b"<html/>")
    assert [t.id for t in parse_junit(b'<testsuite name="s"><testcase name="a"/></testsuite>')] == [
        "s::a"
    ]


GO_RECIPE = "go test -v ./... 2>&1 | go-junit-report -set-exit-code -out report.xml"
FAKE_GO = "#!/bin/sh\nprintf -- '=== RUN   TestAdd\\n--- PASS: TestAdd (0.00s)\\nPASS\\n'\n"
FAKE_CONVERTER = (  # what go-junit-report writes for that output (its -out flag)
    '#!/bin/sh\ncat > /dev/null\nwhile [ "$1" != -out ]; do shift; done\n'
    'printf \'<testsuites><testsuite name="calc"><testcase classname="calc" '
    'name="TestAdd"/></testsuite></testsuites>\' > "$2"\n'
)


@pytest.mark.parametrize("converter", ["present", "absent"])
def test_go_tests_are_graded_through_go_junit_report_as_the_readme_says(
    tmp_path: Path, converter: str
) -> None:
    """go test has no JUnit output: the README's goal pipes it through go-junit-report;
    without it the goal writes no report and the assertion says so (fakes stand in for go
    and the converter: this machine has neither)."""
    assert GO_RECIPE in (REPO / "README.md").read_text()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tools = {
        "go": FAKE_GO,
        **({"go-junit-report": FAKE_CONVERTER} if converter == "present" else {}),
    }
    for name, text in tools.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    path = scenario(tmp_path, "python", PY_FIX, "calc::TestAdd")
    data = yaml.safe_load(path.read_text())
    data["goals"] = [
        {
            "goal": "test",
            "command": "sh",
            "args": ["-c", GO_RECIPE],
            "env": {"PATH": f"{bin_dir}:/usr/bin:/bin"},
            "report": "junit report.xml",
        }
    ]
    data["assertions"] = data["assertions"][:1]
    path.write_text(yaml.safe_dump(data))
    code, result = run(path)
    message = result["assertions"][0]["message"]
    if converter == "present":
        assert code == 0 and "1 test(s) pass" in message, message
    else:
        assert code == 1
        assert message.startswith("no test results: goal 'test': no report at report.xml"), message
