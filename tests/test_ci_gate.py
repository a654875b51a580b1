"""The CI recipe, end to end through the installed ``signal-eval`` command.

Run the code-review dataset on "main" (base.json), swap one cassette as a change
would, run again (cand.json), and gate with ``compare --fail-on-regression``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from results_helpers import case, dataset, repeated

from signal_eval_cli.loading import schema_validator
from signal_eval_cli.persistence import save_result
from signal_eval_cli.results import CaseResult, DatasetResult

ROOT = Path(__file__).resolve().parent.parent
SIGNAL_EVAL = Path(sys.executable).with_name("signal-eval")


def cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SIGNAL_EVAL), *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=60
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """base.json from the recorded cassette, cand.json after swapping in a worse one."""
    work = tmp_path_factory.mktemp("ci")
    shutil.copytree(ROOT / "datasets", work / "datasets")
    base = cli(
        "run", "datasets/code-review.yaml", "-q", "--output", "base.json",
        "--junit", "base.xml", "--markdown", "run.md", cwd=work,
    )  # fmt: skip
    assert base.returncode == 1, base.stderr  # race-condition fails on purpose
    cassettes = work / "datasets" / "cassettes"
    shutil.copy(cassettes / "code-review-haiku.yaml", cassettes / "code-review.yaml")
    cand = cli("run", "datasets/code-review.yaml", "-q", "--output", "cand.json", cwd=work)
    assert cand.returncode == 1, cand.stderr
    return work


def test_results_files_validate_against_the_result_schema(runs: Path) -> None:
    for name in ("base.json", "cand.json"):
        data = json.loads((runs / name).read_text())
        assert list(schema_validator("result").iter_errors(data)) == []


def test_run_writes_junit_and_markdown_from_real_results(runs: Path) -> None:
    suite = ET.parse(runs / "base.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "11" and suite.get("failures") == "1"
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == ["race-condition"]
    summary = (runs / "run.md").read_text()
    assert summary.startswith("## ❌ Code Review Agent Eval")
    assert "### ❌ `race-condition`" in summary


def test_gate_blocks_and_names_the_regressed_cases(runs: Path) -> None:
    proc = cli(
        "compare", "base.json", "cand.json", "--fail-on-regression", "--markdown", "summary.md",
        "--output", "comparison.json", cwd=runs,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "BLOCK: 2 critical regressions: xss-vulnerability, null-dereference" in proc.stdout
    summary = (runs / "summary.md").read_text()
    assert "🚫 blocks merge" in summary and "`xss-vulnerability`" in summary
    saved = json.loads((runs / "comparison.json").read_text())
    assert saved["kind"] == "comparison" and saved["summary"]["shouldBlock"] is True
    assert list(schema_validator("result").iter_errors(saved)) == []


def test_without_the_flag_compare_reports_but_passes(runs: Path) -> None:
    proc = cli("compare", "base.json", "cand.json", cwd=runs)
    assert proc.returncode == 0 and "CRITICAL" in proc.stdout


def test_base_against_itself_passes_the_gate(runs: Path) -> None:
    proc = cli("compare", "base.json", "base.json", "--fail-on-regression", cwd=runs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "verdict: equivalent" in proc.stdout


def test_repeats_flaky_flip_passes_consistent_failure_blocks(tmp_path: Path) -> None:
    save_result(dataset(repeated("a", 3, 3), repeated("b", 3, 3)), tmp_path / "base.json")
    save_result(dataset(repeated("a", 2, 3), repeated("b", 3, 3)), tmp_path / "flip.json")
    save_result(dataset(repeated("a", 3, 3), repeated("b", 0, 3)), tmp_path / "broken.json")
    flip = cli("compare", "base.json", "flip.json", "--fail-on-regression", cwd=tmp_path)
    assert flip.returncode == 0, flip.stdout
    broken = cli("compare", "base.json", "broken.json", "--fail-on-regression", cwd=tmp_path)
    assert broken.returncode == 1 and "critical regression: b" in broken.stdout
    # a consistent pass → fail blocks whatever the significance level ...
    strict = cli(
        "compare", "base.json", "broken.json", "--fail-on-regression", "--significance", "0.01",
        cwd=tmp_path,
    )  # fmt: skip
    assert strict.returncode == 1, strict.stdout
    # ... which still decides a mixed drop: 5/5 → 1/5 has p ≈ 0.024
    save_result(dataset(repeated("a", 5, 5)), tmp_path / "base5.json")
    save_result(dataset(repeated("a", 1, 5)), tmp_path / "mixed5.json")
    mixed = cli("compare", "base5.json", "mixed5.json", "--fail-on-regression", cwd=tmp_path)
    assert mixed.returncode == 1, mixed.stdout
    lenient = cli(
        "compare", "base5.json", "mixed5.json", "--fail-on-regression", "--significance", "0.01",
        cwd=tmp_path,
    )  # fmt: skip
    assert lenient.returncode == 0, lenient.stdout


def test_repeat_2_consistent_pass_to_fail_blocks(tmp_path: Path) -> None:
    # with two runs a side Fisher's smallest p is 1/6: the test alone could never block
    save_result(dataset(repeated("a", 2, 2), repeated("b", 2, 2)), tmp_path / "base.json")
    save_result(dataset(repeated("a", 2, 2), repeated("b", 0, 2)), tmp_path / "cand.json")
    proc = cli("compare", "base.json", "cand.json", "--fail-on-regression", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "BLOCK: 1 critical regression: b" in proc.stdout


def _interrupted(*cases: CaseResult) -> DatasetResult:
    result = dataset(*cases)
    result.interrupted = True
    return result


@pytest.mark.parametrize(
    ("base", "cand", "message"),
    [
        (
            dataset(*[case(f"c{i}") for i in range(11)]),
            _interrupted(case("c0"), case("c1")),
            "candidate 'code-review' was interrupted — re-run it",
        ),
        (
            _interrupted(case("c0"), case("c1")),
            dataset(*[case(f"c{i}") for i in range(11)]),
            "baseline 'code-review' was interrupted — re-run it",
        ),
        (dataset(case("a")), dataset(), "no case ran in the candidate"),
        (dataset(case("a")), dataset(case("a", skipped=True)), "no case ran in the candidate"),
        (
            dataset(case("a"), case("a", False)),
            dataset(case("a")),
            "more than one case with id 'a'",
        ),
        (
            dataset(case("a")),
            dataset(case("a"), case("x"), case("x")),
            "more than one case with id 'x'",
        ),
    ],
    ids=[
        "interrupted-cand",
        "interrupted-base",
        "empty-cand",
        "all-skipped",
        "dup-base",
        "dup-cand",
    ],
)
def test_results_that_cannot_be_gated_exit_2(
    tmp_path: Path, base: DatasetResult, cand: DatasetResult, message: str
) -> None:
    save_result(base, tmp_path / "base.json")
    save_result(cand, tmp_path / "cand.json")
    proc = cli("compare", "base.json", "cand.json", "--fail-on-regression", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_removed_passing_and_new_failing_cases_are_mentioned_but_do_not_block(
    tmp_path: Path,
) -> None:
    """A passing case the candidate dropped, and a new case that fails, would otherwise
    go by as plain "removed" and "new" rows under a green gate."""
    base = dataset(case("a"), case("b"), case("c"), case("d"), case("e", False))
    save_result(base, tmp_path / "base.json")
    save_result(dataset(case("a"), case("n1", False), case("n2")), tmp_path / "cand.json")
    proc = cli("compare", "base.json", "cand.json", "--fail-on-regression", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 baseline cases missing from the candidate" in proc.stdout
    assert "note: 1 new case failing in the candidate (not in the baseline" in proc.stdout
    rows = {line.split("│")[2].strip(): line for line in proc.stdout.splitlines() if "│" in line}
    assert "fails in the candidate" in rows["n1"] and "fails" not in rows["n2"]
    assert "passed in the baseline" in rows["b"] and "passed" not in rows["e"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"schemaVersion": 0, "kind": "dataset"}', "schemaVersion 0 is not supported"),
        ("{}", "not a signal-eval result file (no schemaVersion)"),
        ('{"schemaVersion": 1, "kind": "dataset", "cases": [', "invalid JSON"),
        (
            '{"schemaVersion": 1, "kind": "dataset", "name": "x", "cases": [{}]}',
            ":1:64: missing required field 'caseId'",
        ),
        ('{"schemaVersion": 1, "kind": "banana"}', "unknown result kind 'banana'"),
    ],
)
def test_old_or_malformed_result_files_exit_2(tmp_path: Path, content: str, message: str) -> None:
    save_result(dataset(case("a")), tmp_path / "good.json")
    (tmp_path / "bad.json").write_text(content)
    proc = cli("compare", "good.json", "bad.json", "--fail-on-regression", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("bad.json:") and message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_versioned_result_without_kind_is_a_dataset_result(tmp_path: Path) -> None:
    """Seed 002's DatasetResult fields, as an independent writer would produce them."""
    for name, passed in (("base.json", True), ("cand.json", False)):
        data = dataset(case("a", passed)).to_dict()
        del data["kind"]
        (tmp_path / name).write_text(json.dumps(data))
    proc = cli("compare", "base.json", "cand.json", "--fail-on-regression", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "a" in proc.stdout and "pass_to_fail" in proc.stdout


def test_incompatible_results_exit_2_with_the_reason(tmp_path: Path) -> None:
    save_result(dataset(case("a"), name="one"), tmp_path / "one.json")
    save_result(dataset(case("b"), name="two"), tmp_path / "two.json")
    proc = cli("compare", "one.json", "two.json", cwd=tmp_path)
    assert proc.returncode == 2 and "no case ids in common" in proc.stderr
    missing = cli("compare", "one.json", "nope.json", cwd=tmp_path)
    assert missing.returncode == 2 and "nope.json: cannot read result file" in missing.stderr


def test_an_output_path_that_cannot_be_a_file_exits_2_before_running(tmp_path: Path) -> None:
    save_result(dataset(case("a")), tmp_path / "base.json")
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "a-file").write_text("x")
    proc = cli("compare", "base.json", "base.json", "-o", "a-dir", cwd=tmp_path)
    assert proc.returncode == 2 and "a-dir: is a directory" in proc.stderr
    proc = cli(
        "run", str(ROOT / "datasets" / "code-review.yaml"), "-q",
        "--junit", "a-file/junit.xml", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot write here: a-file is a file" in proc.stderr
    assert "Traceback" not in proc.stderr and "passed" not in proc.stdout  # nothing ran
