"""Goals leave nothing behind, even processes that left their group (issue 11, finding 7)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from processes import alive, ps_lines, unique_sleep

from signal_eval_cli.process_scope import (
    SCOPE_ENV,
    ProcessScope,
    become_subreaper,
    kill_orphans_of_dead_runs,
    owner_tag,
)
from signal_eval_cli.scenarios.goals import run_process

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="prctl and /proc are Linux")


def run_async(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """``asyncio.run`` in a thread of its own (another test may leave a loop running here)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.mark.parametrize(
    ("script", "timeout_ms"),
    [
        ("setsid sleep {t} & sleep {t}", 500),  # the goal times out
        ("setsid sleep {t} & exit 0", 20_000),  # the goal exits at once
        ("setsid sh -c 'setsid sleep {t} & sleep {t}' & exit 0", 20_000),  # twice removed
        ("{py} -c 'import os, time; os.setpgrp(); time.sleep({t})' & exit 0", 20_000),
        ("env -u SIGNAL_EVAL_SCOPE setsid sleep {t} & sleep 0.3; exit 0", 20_000),
    ],
    ids=["setsid-timeout", "setsid-exit", "setsid-nested", "setpgrp", "env-cleared"],
)
def test_after_a_goal_ps_shows_nothing_it_started(
    tmp_path: Path, script: str, timeout_ms: int
) -> None:
    t = unique_sleep()
    command = script.format(t=t, py=sys.executable)
    result = run_async(
        run_process(["sh", "-c", command], cwd=tmp_path, env=os.environ, timeout_ms=timeout_ms)
    )
    assert result.exit_code is not None
    assert ps_lines(f"sleep {t}") == [] and ps_lines(f"sleep({t})") == []


@pytest.mark.parametrize(
    ("state", "flags", "cmdline", "found", "waits"),
    [
        ("S", 0, b"", True, 1),  # mid-exec: waited for, then found
        ("S", 0, b"sleep\0", False, 0),  # an environment empty for good: no wait
        ("S", 0x00200000, b"", False, 0),  # a kernel thread: none, never waited for
        ("Z", 0, b"", False, 0),  # a zombie: nothing to wait for
    ],
    ids=["mid-exec", "empty-env", "kernel-thread", "zombie"],
)
def test_a_member_read_mid_exec_is_waited_for(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    state: str,
    flags: int,
    cmdline: bytes,
    found: bool,
    waits: int,
) -> None:
    """Mid-exec, /proc shows a process neither arguments nor environment: a goal's
    ``setsid sh -c '…' & exit 0``, scanned in that window, was not taken for a member and
    outlived the goal (seen once under load). A fake /proc whose environment appears
    at the first wait, as the exec's does."""
    import signal_eval_cli.process_scope as scope

    proc = tmp_path / "4242"
    proc.mkdir()
    (proc / "environ").write_bytes(b"")
    (proc / "cmdline").write_bytes(cmdline)
    (proc / "stat").write_text(f"4242 (sh) {state} 1 4242 4242 0 -1 {flags} " + "0 " * 44)
    slept: list[bool] = []

    def exec_ends() -> None:
        slept.append(True)
        (proc / "environ").write_bytes(f"PATH=/bin\0{SCOPE_ENV}=tok\0".encode())
        (proc / "cmdline").write_bytes(b"sh\0")

    monkeypatch.setattr(scope, "_PROC", tmp_path)
    monkeypatch.setattr(scope, "_exec_pause", exec_ends)
    assert scope._carries(4242, "tok") is found
    assert len(slept) == waits


def test_the_scope_finds_marked_processes_and_their_descendants(tmp_path: Path) -> None:
    assert become_subreaper()
    scope = ProcessScope()
    t = unique_sleep()
    leader = subprocess.Popen(
        ["sh", "-c", f"setsid sleep {t} & sleep {t}"], env=scope.env(os.environ)
    )
    try:
        deadline = time.monotonic() + 60  # a bound on a hang, not on speed
        while len(scope.members()) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(scope.members()) == 3  # sh and both sleeps
        assert scope.kill() == 3
        assert ps_lines(f"sleep {t}") == []
    finally:
        leader.kill()
        leader.wait()


def _dead_owner() -> str:
    """The owner tag of a process that has exited."""
    with subprocess.Popen(["true"]) as finished:
        finished.wait()
    return owner_tag().replace(f"p{os.getpid()}t", f"p{finished.pid}t", 1)


def test_what_a_run_killed_outright_left_running_is_killed_by_the_next(tmp_path: Path) -> None:
    """A ``kill -9`` of ``signal-eval scenario`` left its agent running for good: nothing
    of the run lived to kill it. Its marker names its owner; the next run kills it."""
    orphan = subprocess.Popen(
        ["sleep", "60"], env={**os.environ, SCOPE_ENV: f"{_dead_owner()}.00ff"}
    )
    ours = subprocess.Popen(["sleep", "60"], env={**os.environ, SCOPE_ENV: f"{owner_tag()}.00"})
    try:
        assert kill_orphans_of_dead_runs() >= 1
        assert not alive(orphan.pid)  # killed (and reaped: our child)
        assert alive(ours.pid)  # a live run's processes are its own to end
    finally:
        for process in (orphan, ours):
            process.kill()
            process.wait()


def test_a_workspace_a_run_killed_outright_left_is_removed_by_the_next(tmp_path: Path) -> None:
    from signal_eval_cli.scenarios.overlay import can_overlay, mount_overlay
    from signal_eval_cli.scenarios.workspace import remove_dead_runs_workspaces

    dead = tmp_path / f"signal-eval-fix-{_dead_owner()}-ab12cd_3"
    live = tmp_path / f"signal-eval-fix-{owner_tag()}-ab12cd_4"
    untagged = tmp_path / "signal-eval-fix-ab12cd_5"  # a version before the tag: not known
    fixture = tmp_path / "fixture"
    for directory in (dead, live, untagged, fixture):
        directory.mkdir()
    (fixture / "kept.txt").write_text("the fixture")
    layers = [dead / ".upper", dead / ".work", dead / "fixture"]
    for layer in layers:
        layer.mkdir()
    mounted = can_overlay(fixture) and mount_overlay(fixture, *layers)
    assert remove_dead_runs_workspaces(tmp_path) == [dead]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (live, untagged, fixture)
    )
    assert (fixture / "kept.txt").read_text() == "the fixture", mounted
