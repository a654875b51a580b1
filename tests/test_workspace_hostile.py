"""In-place workspaces cannot be used to write outside (issue 11, finding 8)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from signal_eval_cli.cli import app
from signal_eval_cli.scenarios.workspace import AgentTaskError, WriteOp, apply_agent_task

PY = sys.executable


def scenario(tmp_path: Path, fixture: str, copy: bool) -> Path:
    data = {
        "id": "hard",
        "adapterId": "python-pytest",
        "goals": [{"goal": "import", "command": PY, "args": ["-c", "pass"]}],
        "fixture": {"path": fixture, "copyToTemp": copy},
        "agentTask": {"instruction": "WRITE|victim.txt|pwned\n"},
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("copy", [False, True])
def test_a_hard_linked_fixture_file_never_changes_the_file_outside(
    tmp_path: Path, copy: bool
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    (tmp_path / "fx").mkdir()
    os.link(outside, tmp_path / "fx" / "victim.txt")
    path = scenario(tmp_path, "fx", copy)
    CliRunner().invoke(app, ["scenario", str(path), "--root", str(tmp_path)])
    assert outside.read_text() == "precious\n"


def test_writing_through_a_hard_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("precious\n")
    (tmp_path / "ws").mkdir()
    os.link(tmp_path / "outside.txt", tmp_path / "ws" / "victim.txt")
    with pytest.raises(AgentTaskError, match="2 hard links"):
        apply_agent_task([WriteOp("victim.txt", "pwned")], tmp_path / "ws")
    assert (tmp_path / "outside.txt").read_text() == "precious\n"
