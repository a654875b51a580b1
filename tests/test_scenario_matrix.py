"""`signal-eval matrix` over scenarios: variants are agents; ranking and recommendation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from typer.testing import CliRunner

from signal_eval_cli.cli import app

REPO = Path(__file__).resolve().parents[1]
FIX = "import pathlib; p = pathlib.Path('calc.py'); p.write_text(p.read_text().replace('return a + b\\n\\n\\ndef mul', 'return a - b\\n\\n\\ndef mul'))"
BREAK = "import pathlib; p = pathlib.Path('calc.py'); p.write_text(p.read_text().replace('a * b', 'a ** b'))"


def write(tmp_path: Path) -> Path:
    scenario = {
        "id": "fix-sub",
        "adapterId": "python-pytest",
        "goals": [
            {
                "goal": "test",
                "args": ["-m", "pytest", "-q", "--junitxml=r.xml"],
                "report": "junit r.xml",
            }
        ],
        "fixture": {"path": "fixtures/grading-python"},  # scenarios/ beside fixtures/
        "assertions": [{"type": "tests.pass", "ids": ["test_calc::test_sub"]}],
    }
    shutil.copytree(REPO / "fixtures" / "grading-python", tmp_path / "fixtures" / "grading-python")
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "fix-sub.yaml").write_text(yaml.safe_dump(scenario))
    matrix = {
        "name": "agents",
        "scenarios": ["scenarios/*.yaml"],
        "variants": [
            {"id": "breaks", "name": "Breaks mul", "agent": {"command": ["{python}", "-c", BREAK]}},
            {"id": "fixes", "name": "Fixes sub", "agent": {"command": ["{python}", "-c", FIX]}},
        ],
    }
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(matrix, sort_keys=False))
    return path


def test_a_scenario_matrix_ranks_agents_and_recommends_the_one_that_resolves(
    tmp_path: Path,
) -> None:
    path = write(tmp_path)
    assert CliRunner().invoke(app, ["validate", str(path)]).exit_code == 0
    out = tmp_path / "m.json"
    result = CliRunner().invoke(app, ["matrix", str(path), "-o", str(out), "--repeat", "2"])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["recommendation"]["variantId"] == "fixes"
    rates = {v["variantId"]: v["result"]["cases"][0]["passed"] for v in data["variants"]}
    assert rates == {"breaks": False, "fixes": True}
    fixes = next(v for v in data["variants"] if v["variantId"] == "fixes")
    assert fixes["result"]["cases"][0]["outcomes"] == [True, True]
    assert data["comparison"]["byPassRate"] == ["fixes", "breaks"]
    assert "fixes" in data["comparison"]["paretoFrontier"]
    assert "highest pass rate: 100%" in data["recommendation"]["reason"]


def test_a_variant_without_agent_over_a_scenario_without_one_is_exit_2(tmp_path: Path) -> None:
    path = write(tmp_path)
    data = yaml.safe_load(path.read_text())
    del data["variants"][0]["agent"]
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(app, ["matrix", str(path)])
    assert result.exit_code == 2
    assert "variant 'breaks' names no agent and scenario 'fix-sub' has none" in result.output
    data["scenarios"] = ["nothing/*.yaml"]
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(app, ["matrix", str(path)])
    assert result.exit_code == 2 and "no scenario file matches 'nothing/*.yaml'" in result.output
