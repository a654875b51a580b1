"""The README's examples are tested: Python blocks run, YAML blocks validate."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from signal_eval_cli import load_dataset
from signal_eval_cli.loading import parse_yaml, validate_document

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)
YAML_BLOCKS = re.findall(r"```yaml\n(.*?)```", README, re.S)


def test_readme_starts_with_the_two_commands() -> None:
    head = README.split("\n")[:6]
    assert any(line.startswith("make run") for line in head)
    assert any(line.startswith("make test") for line in head)


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.split("\n")[0][:40])
def test_python_examples_run(block: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", block], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=lambda b: b.strip().split("\n")[0][:40])
def test_yaml_examples_validate(block: str, tmp_path: Path) -> None:
    data = yaml.safe_load(block)
    if isinstance(data, list):  # a list of assertions: wrap it in a one-case dataset
        data = {"name": "readme", "cases": [{"id": "c", "input": {}, "assertions": data}]}
    elif (
        "variants" in data
    ):  # a matrix excerpt: its dataset lives in datasets/, so check the schema
        doc = parse_yaml(block, "README.md")
        assert validate_document(doc, "matrix") == []
        return
    elif "adapterId" in data:  # a scenario
        assert validate_document(parse_yaml(block, "README.md"), "scenario") == []
        return
    path = tmp_path / "example.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    load_dataset(path)


@pytest.mark.parametrize("block", re.findall(r"```json\n(.*?)```", README, re.S))
def test_json_scenario_examples_validate(block: str) -> None:
    doc = parse_yaml(block, "README.md")
    assert "patternAssertions" in doc.data
    assert validate_document(doc, "scenario") == []
