"""In-place workspaces cannot be used to write outside (issue 11, finding 8)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from signal_eval_cli.cli import app
from signal_eval_cli.scenarios import workspace
from signal_eval_cli.scenarios.workspace import AgentTaskError, WriteOp, apply_agent_task

PY = sys.executable
CLI = Path(PY).parent / "signal-eval"


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


def test_a_workspace_still_being_prepared_when_cancelled_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the fixture is copied: the copy the thread still finishes is removed,
    not left in the temp dir (issue 11, finding 6)."""
    (tmp_path / "fx").mkdir()
    (tmp_path / "fx" / "f.txt").write_text("x")
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    (tmp_path / "tmp").mkdir()
    entered, release = threading.Event(), threading.Event()
    real = workspace.prepare_workspace

    def slow(fixture: Path, **options: Any) -> workspace.Workspace:
        made = real(fixture, **options)
        entered.set()
        release.wait(60)  # still copying when the task is cancelled
        return made

    monkeypatch.setattr(workspace, "prepare_workspace", slow)

    async def cancelled_while_preparing() -> None:
        task = asyncio.ensure_future(workspace.prepare_workspace_in_thread(tmp_path / "fx"))
        await asyncio.to_thread(entered.wait, 60)
        assert list((tmp_path / "tmp").iterdir())  # the copy exists
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()  # the thread finishes the copy after the task is gone

    asyncio.run(cancelled_while_preparing())  # waits for the thread (default executor)
    assert not list((tmp_path / "tmp").iterdir())


@pytest.mark.parametrize("absolute", ["{tmp}/fx", "C:\\fx", "\\\\host\\share\\fx"])
def test_an_absolute_fixture_path_is_a_located_input_error(tmp_path: Path, absolute: str) -> None:
    """The schema says fixture paths are relative (the file must mean the same on any
    machine); a fixture elsewhere is named relative to the scenario file, or to --root."""
    (tmp_path / "fx").mkdir()
    (tmp_path / "fx" / "victim.txt").write_text("precious\n")
    path = scenario(tmp_path, absolute.format(tmp=tmp_path), copy=False)
    for command in (["validate", str(path)], ["scenario", str(path), "--root", str(tmp_path)]):
        done = subprocess.run(
            [str(CLI), *command], capture_output=True, text=True, cwd=tmp_path, timeout=120
        )
        assert done.returncode == 2, done.stdout + done.stderr
        assert re.search(rf"{re.escape(str(path))}:1:\d+: fixture path", done.stderr), done.stderr
        assert "is absolute: give it relative to the scenario file" in done.stderr
        assert "Traceback" not in done.stderr
    assert (tmp_path / "fx" / "victim.txt").read_text() == "precious\n"


def test_a_fixture_outside_the_scenarios_folder_is_named_relative_to_it(tmp_path: Path) -> None:
    """The way the error above asks for (checked once, not beside each absolute path)."""
    (tmp_path / "fx").mkdir()
    (tmp_path / "sub").mkdir()
    moved = scenario(tmp_path / "sub", "../fx", copy=True)
    ok = subprocess.run([str(CLI), "validate", str(moved)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_a_fixture_holding_the_temp_dir_is_refused_before_it_is_hashed_or_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fixture.path: ../../..`` up to ``/`` (or ``..`` to /tmp) was accepted: the run
    hashed every file of the machine and would have copied it into itself. Refused at
    the path, exit 2, before anything is read; a fixture elsewhere by ``..`` still works."""
    from signal_eval_cli.configured_runs import run_scenarios_configured
    from signal_eval_cli.errors import InputError

    def never(root: Path) -> str:
        raise AssertionError(f"hashed {root}")

    monkeypatch.setattr("signal_eval_cli.fingerprint.tree_hash", never)
    temp = Path(tempfile.gettempdir()).resolve()
    up = "/".join([".."] * len(tmp_path.resolve().parts))  # to / from tmp_path
    for fixture, where in ((up, "/"), (os.path.relpath(temp, tmp_path), str(temp))):
        path = scenario(tmp_path, fixture, copy=True)
        with pytest.raises(InputError) as raised:
            asyncio.run(run_scenarios_configured([str(path)], directory=tmp_path))
        (problem,) = raised.value.problems
        assert (problem.file, problem.line) == (str(path), 1)
        assert f"is {where}, which holds the temp directory {temp}" in problem.message
        done = CliRunner().invoke(app, ["validate", str(path)])
        assert done.exit_code == 2 and "which holds the temp directory" in done.output


def test_a_fixtures_fifo_device_and_symlink_are_hashed_without_being_opened(
    tmp_path: Path,
) -> None:
    """A FIFO in a fixture hung the run for good as its fingerprint opened it (SIGTERM
    could not stop it), and a symlink to /dev/zero was read until memory ran out."""
    from signal_eval_cli.fingerprint import tree_hash

    fixture = tmp_path / "fx"
    fixture.mkdir()
    (fixture / "a.txt").write_text("one\n")
    os.mkfifo(fixture / "pipe")
    (fixture / "zero").symlink_to("/dev/zero")
    hashes: list[str] = []
    worker = threading.Thread(target=lambda: hashes.append(tree_hash(fixture)), daemon=True)
    worker.start()
    worker.join(120)  # a bound on a hang, not a speed
    assert hashes, "tree_hash blocked on the FIFO or read /dev/zero"
    (fixture / "zero").unlink()
    (fixture / "zero").symlink_to("/dev/null")
    assert tree_hash(fixture) != hashes[0]  # a symlink's target is part of the tree
    (fixture / "a.txt").write_text("two\n")
    assert len({hashes[0], tree_hash(fixture)}) == 2


def _bounded(work: Any) -> list[Any]:
    """``work()``'s outcome (its value or what it raised), or none if it hangs."""
    done: list[Any] = []

    def attempt() -> None:
        try:
            done.append(work())
        except Exception as exc:
            done.append(exc)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(60)  # a bound on a hang, not a speed
    return done


@pytest.mark.parametrize("cp", [True, False], ids=["cp", "shutil"])
def test_a_fixtures_fifo_is_copied_as_a_fifo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cp: bool
) -> None:
    """shutil's copy (no GNU cp) refused a fixture holding a named pipe: the scenario
    failed with "cannot prepare the workspace: [('…/pipe', …, '… is a named pipe')]"."""
    if not cp:
        monkeypatch.setattr(workspace, "_CP", None)
    fixture = tmp_path / "fx"
    fixture.mkdir()
    (fixture / "a.txt").write_text("one\n")
    os.mkfifo(fixture / "pipe", 0o640)
    (made,) = _bounded(lambda: workspace.prepare_workspace(fixture, overlay=False))
    assert isinstance(made, workspace.Workspace), made
    try:
        copied = os.lstat(made.path / "pipe")
        assert stat.S_ISFIFO(copied.st_mode) and stat.S_IMODE(copied.st_mode) == 0o640
        assert (made.path / "a.txt").read_text() == "one\n"
    finally:
        made.cleanup()


def test_a_named_pipe_in_the_workspace_is_never_opened(tmp_path: Path) -> None:
    """file-contains on a named pipe, and an agentTask writing one, waited for a writer
    for ever: the scenario hung, and SIGTERM could not stop it."""
    from signal_eval_cli.assertions import EvalContext, evaluate_assertion
    from signal_eval_cli.signals import Trace

    os.mkfifo(tmp_path / "pipe")
    ctx = EvalContext(Trace([]), workspace=tmp_path, root=tmp_path)
    contains = {"type": "file-contains", "path": "pipe", "includes": "x"}
    (checked,) = _bounded(lambda: evaluate_assertion(contains, ctx))
    assert (checked.passed, checked.message) == (
        False,
        "cannot read pipe: a named pipe, not a file",
    )
    (written,) = _bounded(lambda: apply_agent_task([WriteOp("pipe", "x")], tmp_path))
    assert isinstance(written, AgentTaskError)
    assert str(written) == "'pipe' is a named pipe, not a file"
