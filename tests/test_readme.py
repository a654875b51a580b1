"""The README's examples are tested: Python blocks run, YAML blocks validate."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from signal_eval_cli import load_dataset
from signal_eval_cli.cli import app
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
    elif "jobs" in data:  # a CI workflow: its signal-eval commands use real options
        check_workflow(data)
        return
    elif "adapterId" in data:  # a scenario
        assert validate_document(parse_yaml(block, "README.md"), "scenario") == []
        return
    path = tmp_path / "example.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    load_dataset(path)


def check_workflow(workflow: dict[str, Any]) -> None:
    """Every ``signal-eval`` command a workflow's steps run names a command and options
    its ``--help`` lists."""
    commands = [
        shlex.split(step["run"].split("||")[0])
        for job in workflow["jobs"].values()
        for step in job["steps"]
        if str(step.get("run", "")).startswith("signal-eval ")
    ]
    assert commands
    for argv in commands:
        shown = CliRunner().invoke(app, [argv[1], "--help"], env={"COLUMNS": "200"})
        assert shown.exit_code == 0, shown.output
        for option in (a for a in argv[2:] if a.startswith("--")):
            listed = re.search(re.escape(option) + r"(?![\w-])", shown.output)
            assert listed, f"{argv[1]} has no {option}"


@pytest.mark.parametrize("block", re.findall(r"```json\n(.*?)```", README, re.S))
def test_json_scenario_examples_validate(block: str) -> None:
    doc = parse_yaml(block, "README.md")
    assert "patternAssertions" in doc.data
    assert validate_document(doc, "scenario") == []


def _table_rows(heading: str) -> dict[str, str]:
    """``first cell -> second cell`` of the first table after ``heading``."""
    lines = README.split(heading, 1)[1].split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    cells = [[c.strip() for c in line.strip("|").split(" | ")] for line in table[2:]]
    return {row[0]: row[1] for row in cells}


def test_the_limits_the_readme_states_are_the_codes() -> None:
    """Issue 11: the README states the limits and the signals; they must be the code's."""
    import signal

    from signal_eval_cli.interrupts import UNWIND_LIMIT_S
    from signal_eval_cli.limits import (
        MAX_ALIAS_NODES,
        MAX_DEPTH,
        MAX_INT_DIGITS,
        MAX_SUGGEST_LENGTH,
        OUT_OF_RANGE,
    )
    from signal_eval_cli.regex_budget import REGEX_BUDGET_MS

    rows = _table_rows("### Limits and signals")
    assert rows["nesting depth (lists and mappings, YAML or JSON)"].startswith(
        f"{MAX_DEPTH} levels"
    )
    aliases = rows["document size added by YAML aliases (`*anchor` expanded)"]
    assert aliases.startswith(f"{MAX_ALIAS_NODES:,} values")
    assert rows["integers"].startswith(f"{MAX_INT_DIGITS:,} digits")
    assert rows["other numbers"].split(" at most")[0] in OUT_OF_RANGE
    assert f"up to {MAX_SUGGEST_LENGTH} characters" in rows['"did you mean" suggestions']
    regex = rows["regex budget (`output.matches`, the `matches` matcher)"]
    assert regex.startswith(f"{REGEX_BUDGET_MS:,} ms per search")
    assert f'"regex took longer than {REGEX_BUDGET_MS} ms"' in regex
    assert f"waits up to {UNWIND_LIMIT_S:g} s" in " ".join(README.split())
    signals = _table_rows("command exits, so they never cut the unwinding short")
    assert signals == {
        f"`{name}`{' (Ctrl-C)' if name == 'SIGINT' else ''}": str(128 + getattr(signal, name))
        for name in ("SIGINT", "SIGTERM", "SIGHUP")
    }
