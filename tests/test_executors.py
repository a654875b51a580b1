"""Choosing where a run executes (:mod:`signal_eval_cli.executors`): ``local`` runs on
this event loop, anything but ``local`` or ``ray`` is refused before anything runs, by
the library (an :class:`InputError`) and by every command that takes ``--executor``
(exit 2, one line, no traceback)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from signal_eval_cli import executors
from signal_eval_cli.cli import app
from signal_eval_cli.dataset import load_dataset
from signal_eval_cli.errors import InputError
from signal_eval_cli.runner import RunOptions

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "signal_eval_cli.cli"]
DATASET = """\
name: executors
cases:
  - id: greets
    input: hi
    assertions:
      - type: signal.trajectory
        patterns: [text:complete]
"""
REFUSED = "--executor must be local or ray, got 'bogus'"


def _harness(input: Any, ctx: Any) -> None:
    ctx.emit("text:complete", {"content": f"you said {input}"})


def test_local_runs_the_dataset_on_this_event_loop(tmp_path: Path) -> None:
    path = tmp_path / "eval.yaml"
    path.write_text(DATASET)
    running = executors.dataset_run("local", load_dataset(path), _harness, RunOptions(), spec=None)
    result = asyncio.run(running)
    assert [(c.case_id, c.passed) for c in result.cases] == [("greets", True)]


def test_an_unknown_executor_is_refused_before_anything_runs(tmp_path: Path) -> None:
    path = tmp_path / "eval.yaml"
    path.write_text(DATASET)
    calls: list[Any] = []
    with pytest.raises(InputError, match=REFUSED):
        executors.dataset_run("bogus", load_dataset(path), calls.append, RunOptions(), spec=None)
    with pytest.raises(InputError, match=REFUSED):
        executors.scenarios_run("bogus", [], concurrency=1)
    assert calls == []


@pytest.mark.parametrize(
    "command",
    [
        ["run", "datasets/code-review.yaml"],
        ["matrix", "datasets/matrix-code-review.yaml"],
        ["scenario", "scenarios/python-smoke.yaml"],
    ],
)
def test_every_command_exits_2_on_an_unknown_executor(command: list[str], tmp_path: Path) -> None:
    done = subprocess.run(
        [*CLI, *command, "--executor", "bogus", "-o", str(tmp_path / "out.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == REFUSED
    assert not (tmp_path / "out.json").exists()


def test_the_commands_themselves_exit_2_not_only_the_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through ``app`` (as an embedding program calls it): the command turns the
    library's refusal into exit 2 itself, no exception escapes."""
    monkeypatch.chdir(ROOT)
    out = str(tmp_path / "out.json")
    done = CliRunner().invoke(
        app, ["matrix", "datasets/matrix-code-review.yaml", "--executor", "bogus", "-o", out]
    )
    assert done.exit_code == 2, done.output
    assert done.exception is None or isinstance(done.exception, SystemExit)
    assert REFUSED in done.output
