"""Issue 10 item 9: the CI files a user wires up validate, offline, against their schemas."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import xmlschema
import yaml
from flows_helpers import ROOT, cli, project_copy

from signal_eval_cli.schema_bundle import bundled_text

JUNIT_XSD = Path(__file__).parent / "fixtures" / "junit" / "junit-10.xsd"


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One run and one matrix, from a directory outside the project, every report written."""
    tmp = tmp_path_factory.mktemp("ci")
    project = project_copy(tmp)
    outside = tmp / "ci-job"
    outside.mkdir()
    files = {k: outside / n for k, n in (("json", "r.json"), ("junit", "j.xml"), ("mj", "m.xml"))}
    run = cli(
        "run", str(project / "datasets/code-review.yaml"), "-q", "--repeat", "2",
        "-o", str(files["json"]), "--junit", str(files["junit"]), cwd=outside,
    )  # fmt: skip
    assert run.returncode == 1, run.stderr  # one case fails on purpose
    matrix = cli(
        "matrix", str(project / "datasets/matrix-code-review.yaml"), "-q",
        "--junit", str(files["mj"]), cwd=outside,
    )  # fmt: skip
    assert matrix.returncode == 0, matrix.stderr
    return files


@pytest.mark.parametrize("report", ["junit", "mj"])
def test_junit_validates_against_jenkins_junit_10_xsd(
    reports: dict[str, Path], report: str
) -> None:
    schema = xmlschema.XMLSchema(str(JUNIT_XSD))
    errors = [f"{e.path}: {e.reason}" for e in schema.iter_errors(str(reports[report]))]
    assert errors == []


def test_results_validate_with_a_plain_validator_and_no_network(reports: dict[str, Path]) -> None:
    schema = json.loads((ROOT / "schemas" / "result.schema.json").read_text())
    data = json.loads(reports["json"].read_text())
    jsonschema.validate(data, schema)  # no registry: the trace schema is bundled in
    data["cases"][0]["signals"] = [{"name": 3}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, schema)


@pytest.mark.parametrize("name", ["dataset", "matrix", "scenario", "result"])
def test_published_schemas_are_self_contained_and_current(name: str) -> None:
    path = ROOT / "schemas" / f"{name}.schema.json"
    assert path.read_text() == bundled_text(name), (
        "schemas/ is stale: run python -m signal_eval_cli.schema_bundle schemas"
    )
    schema = json.loads(path.read_text())
    example = {
        "dataset": lambda: yaml.safe_load((ROOT / "datasets/code-review.yaml").read_text()),
        "matrix": lambda: yaml.safe_load((ROOT / "datasets/matrix-code-review.yaml").read_text()),
        "scenario": lambda: json.loads(next((ROOT / "scenarios").glob("*.json")).read_text()),
        "result": lambda: None,
    }[name]()
    if example is not None:
        jsonschema.validate(example, schema)


def test_validate_recognises_result_files(reports: dict[str, Path], tmp_path: Path) -> None:
    done = cli("validate", str(reports["json"]), cwd=tmp_path)
    assert done.returncode == 0 and "(result)" in done.stdout, done.stdout + done.stderr
    broken = json.loads(reports["json"].read_text())
    broken["passedCases"] = "many"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(broken, indent=2))
    done = cli("validate", str(bad), cwd=tmp_path)
    assert done.returncode == 2 and f"{bad}:" in done.stderr and "passedCases" in done.stderr
    assert "unknown field" not in done.stderr and "Traceback" not in done.stderr


def test_an_empty_markdown_path_means_no_markdown(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    done = cli(
        "run", "datasets/code-review.yaml", "-q", "--case", "sql-injection", "--markdown", "",
        cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "no Markdown report" in done.stderr and "GITHUB_STEP_SUMMARY" in done.stderr
