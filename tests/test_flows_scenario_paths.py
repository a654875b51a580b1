"""Issue 10 item 5: a scenario's fixture (and ``scope: repo`` files) resolve against the
scenario file, whatever the current directory; ``--root`` names the base explicitly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from flows_helpers import cli

CHECK = "import calc, sys; sys.exit(calc.add(2, 3) != 5)"
FIXED = "def add(a, b):\n    return a + b\n"


def scenario_project(tmp_path: Path, fixture_path: str, at: str, base: str = ".") -> Path:
    """``tmp/proj`` with ``fixtures/calc`` and a scenario file at ``proj/<at>`` naming the
    fixture as ``fixture_path``, and a ``scope: repo`` file in ``proj/<base>``, where the
    fixture path resolves from; returns the scenario file."""
    project = tmp_path / "proj"
    calc = project / "fixtures" / "calc"
    calc.mkdir(parents=True)
    (calc / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (project / base / "NOTES.md").parent.mkdir(parents=True, exist_ok=True)
    (project / base / "NOTES.md").write_text("repo-scoped file\n")
    data = {
        "id": "fix-add",
        "adapterId": "python-pytest",
        "goals": [{"goal": "check", "command": "{python}", "args": ["-c", CHECK]}],
        "fixture": {"path": fixture_path},
        "agentTask": {"instruction": f"WRITE|calc.py|{FIXED}"},
        "patternAssertions": [
            {"type": "file-contains", "path": "calc.py", "includes": ["a + b"]},
            {"type": "file-exists", "path": "NOTES.md", "scope": "repo"},
        ],
    }
    path = project / at
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("fixture_path", "at", "base"),
    [
        ("fixtures/calc", "scenarios/fix-add.yaml", "."),  # the seed's form: a parent holds it
        ("../fixtures/calc", "scenarios/fix-add.yaml", "scenarios"),  # from the file itself
        ("fixtures/calc", "fix-add.yaml", "."),  # beside the file
    ],
)
@pytest.mark.parametrize("place", ["project", "scenario-dir", "elsewhere"])
def test_the_fixture_resolves_against_the_scenario_file_from_anywhere(
    tmp_path: Path, fixture_path: str, at: str, base: str, place: str
) -> None:
    scenario = scenario_project(tmp_path, fixture_path, at, base)
    cwd = {
        "project": tmp_path / "proj",
        "scenario-dir": scenario.parent,
        "elsewhere": tmp_path / "elsewhere",
    }[place]
    cwd.mkdir(exist_ok=True)
    out = tmp_path / "out.json"
    done = cli("scenario", str(scenario), "-q", "-o", str(out), cwd=cwd)
    assert done.returncode == 0, done.stdout + done.stderr
    (result,) = json.loads(out.read_text())["scenarios"]
    assert result["passed"], done.stdout
    assert [a["status"] for a in result["patternAssertions"]] == ["passed", "passed"]
    assert cli("validate", str(scenario), cwd=cwd).returncode == 0


def test_root_names_the_base_and_a_missing_fixture_says_where_it_looked(tmp_path: Path) -> None:
    scenario = scenario_project(tmp_path, "fixtures/calc", "scenarios/fix-add.yaml")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ok = cli("scenario", str(scenario), "-q", "--root", str(tmp_path / "proj"), cwd=elsewhere)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    wrong = cli("scenario", str(scenario), "--root", str(elsewhere), cwd=elsewhere)
    assert wrong.returncode == 2 and "Traceback" not in wrong.stderr
    assert f"fixture directory not found: fixtures/calc (looked under --root {elsewhere})" in (
        wrong.stderr
    )
    (tmp_path / "proj" / "fixtures" / "calc" / "calc.py").unlink()
    (tmp_path / "proj" / "fixtures" / "calc").rmdir()
    for command in ("scenario", "validate"):
        missing = cli(command, str(scenario), cwd=elsewhere)
        assert missing.returncode == 2, missing.stdout + missing.stderr
        line = 1 + scenario.read_text().splitlines().index("fixture:")
        assert (
            f"{scenario}:{line + 1}:9: fixture directory not found: fixtures/calc "
            f"(looked in {scenario.parent} and its parents; --root DIR sets the base)"
        ) in missing.stderr + missing.stdout
