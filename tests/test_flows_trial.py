"""Defects a new-user trial found, each driven through the real CLI from outside the repo:
a run of nothing, cases that rely on ``defaultAssertions``, a dataset given to ``matrix``,
and ``compare`` messages that named internals."""

from __future__ import annotations

import json
from pathlib import Path

from flows_helpers import cli

HARNESS = """\
def create_harness():
    def run(input, ctx):
        ctx.emit("text:complete", {"content": f"echo {input}"})
    return run
"""


def project(tmp_path: Path) -> Path:
    (tmp_path / "echo.py").write_text(HARNESS)
    return tmp_path


def test_a_dataset_with_no_cases_is_an_input_error_not_a_green_run(tmp_path: Path) -> None:
    (project(tmp_path) / "e.yaml").write_text(
        "name: e\nharness: echo.py:create_harness\ncases: []\n"
    )
    done = cli("run", str(tmp_path / "e.yaml"), cwd=tmp_path.parent)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "the dataset has no cases: nothing to run" in done.stderr


def test_default_assertions_are_enough_and_no_assertions_at_all_is_refused(
    tmp_path: Path,
) -> None:
    project(tmp_path)
    (tmp_path / "d.yaml").write_text(
        "name: d\nharness: echo.py:create_harness\n"
        "defaultAssertions:\n  - {type: output.contains, text: echo}\n"
        "cases:\n  - id: one\n    input: x\n  - id: two\n    input: y\n"
        "    assertions: [{type: output.contains, text: 'echo y'}]\n"
    )
    out = tmp_path / "r.json"
    done = cli("run", str(tmp_path / "d.yaml"), "-q", "-o", str(out), cwd=tmp_path.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    cases = {c["caseId"]: c for c in json.loads(out.read_text())["cases"]}
    assert [len(cases["one"]["assertions"]), len(cases["two"]["assertions"])] == [1, 2]
    (tmp_path / "n.yaml").write_text(
        "name: n\nharness: echo.py:create_harness\ncases:\n  - id: one\n    input: x\n"
    )
    for command in ("validate", "run"):
        refused = cli(command, str(tmp_path / "n.yaml"), cwd=tmp_path.parent)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert (
            f"{tmp_path / 'n.yaml'}:4:5: case 'one' has no 'assertions' and the dataset no "
            "'defaultAssertions': nothing would be checked"
        ) in refused.stdout + refused.stderr


def test_a_dataset_given_to_matrix_says_what_it_is(tmp_path: Path) -> None:
    (tmp_path / "d.yaml").write_text("name: d\ncases:\n  - id: a\n    assertions: []\n")
    done = cli("matrix", str(tmp_path / "d.yaml"), cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "this is a dataset (it has 'cases'): run it with `signal-eval run`" in done.stderr
    assert "{'name'" not in done.stderr  # the parsed document is never dumped


def test_compare_names_result_kinds_as_their_files_do(tmp_path: Path) -> None:
    run = {"schemaVersion": 1, "kind": "dataset", "name": "d", "cases": []}
    scenarios = {"schemaVersion": 1, "kind": "scenarios", "name": "s", "cases": [], "scenarios": []}
    (tmp_path / "d.json").write_text(json.dumps(run))
    (tmp_path / "s.json").write_text(json.dumps(scenarios))
    done = cli("compare", "d.json", "s.json", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "cannot compare a dataset result with a scenarios result" in done.stderr
    assert "ScenarioRunResult" not in done.stderr
