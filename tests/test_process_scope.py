"""Goals leave nothing behind, even processes that left their group (issue 11, finding 7)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from processes import ps_lines, unique_sleep

from signal_eval_cli.process_scope import ProcessScope, become_subreaper
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


def test_the_scope_finds_marked_processes_and_their_descendants(tmp_path: Path) -> None:
    assert become_subreaper()
    scope = ProcessScope()
    t = unique_sleep()
    leader = subprocess.Popen(
        ["sh", "-c", f"setsid sleep {t} & sleep {t}"], env=scope.env(os.environ)
    )
    try:
        for _ in range(500):
            if len(ps_lines(f"sleep {t}")) == 2:
                break
            run_async(asyncio.sleep(0.01))
        assert len(scope.members()) == 3  # sh and both sleeps
        assert scope.kill() == 3
        assert ps_lines(f"sleep {t}") == []
    finally:
        leader.kill()
        leader.wait()
