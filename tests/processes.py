"""Process helpers for tests: /proc readers (no process outlives a kill; Linux only),
waiting for a child's line, and a rendezvous that shows concurrency by an event."""

from __future__ import annotations

import os
import queue
import random
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

RENDEZVOUS = """\
import pathlib, sys, time
me, others = pathlib.Path(sys.argv[1]), [pathlib.Path(o) for o in sys.argv[2:]]
me.touch()
deadline = time.monotonic() + 120
while not all(o.exists() for o in others) and time.monotonic() < deadline:
    time.sleep(0.02)
sys.exit(0 if all(o.exists() for o in others) else 1)
"""
"""A goal that passes only if the others started while it ran: it marks its own file and
waits for theirs. Run one after the other, the first would give up: concurrency is shown by
the event, whatever the machine's speed."""

_DEAD = ("Z", "X")  # a zombie is dead, just not yet reaped


def _stat_fields(path: Path) -> list[str] | None:
    try:
        return path.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    fields = _stat_fields(Path(f"/proc/{pid}/stat"))
    return fields is not None and fields[0] not in _DEAD


def group_members(pgid: int) -> list[int]:
    """Live processes whose process group is ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(entry / "stat")
            if fields is not None and int(fields[2]) == pgid and fields[0] not in _DEAD:
                members.append(int(entry.name))
    return members


def wait_for_line(stream: IO[str], wanted: Callable[[str], bool], timeout_s: float) -> list[str]:
    """Lines read from ``stream`` up to and including the first ``wanted`` one.

    A thread reads, so a child that prints nothing cannot block the test past
    ``timeout_s`` (a bound on a hang, not on speed); the lines seen are returned either
    way, for the failure message. The thread keeps draining the stream afterwards.
    """
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line is None:
            break
        seen.append(line)
        if wanted(line):
            break
    return seen


def ps_lines(needle: str) -> list[str]:
    """``ps`` rows whose command line holds ``needle`` (zombies excluded)."""
    rows = subprocess.run(
        ["ps", "-eo", "pid,ppid,stat,args"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    return [r for r in rows if needle in r and " Z" not in r and "ps -eo" not in r]


def unique_sleep() -> str:
    """A ``sleep`` duration (about 300 s) no other test uses: its ``ps`` rows are ours."""
    return f"300.{random.randrange(10**6):06d}"


def ctrl_c(process: subprocess.Popen[str], ready: Callable[[], bool]) -> tuple[str, str]:
    """Once ``ready()``, SIGINT ``process``'s group (it has its own session), as Ctrl-C in a
    terminal does; its stdout and stderr. The process is killed if anything goes wrong."""
    try:
        deadline = time.monotonic() + 300  # a bound on a hang, not on speed
        while not ready():
            assert process.poll() is None, process.communicate(timeout=30)
            assert time.monotonic() < deadline, "never ready for Ctrl-C"
            time.sleep(0.02)
        os.killpg(process.pid, signal.SIGINT)
        return process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
