"""Leave no process behind: every process a command started, even one that left its
process group (``setsid``, ``setpgrp``) or was orphaned, is found and killed.

Use one :class:`ProcessScope` per command (a scenario goal, a command agent):

    scope = ProcessScope()
    proc = await asyncio.create_subprocess_exec(..., env=scope.env(env), start_new_session=True)
    ...
    scope.kill()  # when the command ends, however it ends

How members are found (Linux; elsewhere :meth:`kill` finds nothing and returns 0):

- this process becomes a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): an
  orphan is re-parented to us rather than to init, so every process started in the
  scope is either a descendant of the command or (its parents gone) a child of ours;
- every process started in the scope inherits ``SIGNAL_EVAL_SCOPE=<token>`` in its
  environment: that tells which of our adopted children belong to this scope;
- while the command runs, :meth:`watch` records the command's descendants every 50 ms
  (pid and start time), so one that cleared its environment and was then orphaned is
  still killed (a recorded pid only while its start time matches: no pid reuse);
- the tree is read from ``/proc/<pid>/task/<tid>/children``, a few small files, not a
  scan of all of ``/proc``; once killed, adopted processes are reaped here instead of
  lingering as zombies.

A run killed outright (``kill -9``, the OOM killer) kills nothing: its marker names its
owner (pid and start time, :func:`owner_tag`), and the next scenario command kills the
marked processes whose owner is gone (:func:`kill_orphans_of_dead_runs`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = [
    "SCOPE_ENV",
    "ProcessScope",
    "become_subreaper",
    "kill_descendants",
    "kill_orphans_of_dead_runs",
    "mark_children",
    "owner_gone",
    "owner_tag",
]

SCOPE_ENV = "SIGNAL_EVAL_SCOPE"
_PR_SET_CHILD_SUBREAPER = 36
_PROC = Path("/proc")
_PF_KTHREAD = 0x00200000  # a kernel thread, in /proc/<pid>/stat's flags
_EXEC_WAITS = 100  # of _exec_pause each: how long a process may read as mid-exec
_subreaper: bool | None = None


def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants (Linux); True when it is."""
    global _subreaper
    if _subreaper is None:
        _subreaper = False
        if sys.platform.startswith("linux"):
            import ctypes

            with contextlib.suppress(OSError, AttributeError):
                libc = ctypes.CDLL(None, use_errno=True)
                _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    return _subreaper


class ProcessScope:
    """The processes one command started, wherever they went; :meth:`kill` ends them."""

    def __init__(self) -> None:
        become_subreaper()
        _kill_orphans_once()
        self.token = _token()
        self.roots: set[int] = set()
        self.seen: dict[int, int] = {}  # pid -> start time (clock ticks since boot)

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` plus the marker every process of the scope inherits."""
        return {**env, SCOPE_ENV: self.token}

    def add(self, pid: int) -> None:
        """Count ``pid`` (the command's process) and its descendants as members."""
        self.roots.add(pid)

    def members(self) -> list[int]:
        """Live members: the roots, our adopted children carrying the marker, the
        processes :meth:`watch` saw that still run, and all their descendants."""
        starts = [pid for pid in self.roots if _start_time(pid) is not None]
        starts += [pid for pid in _children(os.getpid()) if _carries(pid, self.token)]
        starts += [pid for pid, start in self.seen.items() if _start_time(pid) == start]
        found: set[int] = set()
        while starts:
            pid = starts.pop()
            start = _start_time(pid)
            if pid in found or pid == os.getpid() or start is None:
                continue
            found.add(pid)
            self.seen.setdefault(pid, start)
            starts.extend(_children(pid))
        return sorted(found)

    async def watch(self, interval_s: float = 0.05) -> None:
        """Record members until cancelled (run it as a task while the command runs)."""
        while True:
            self.members()
            await asyncio.sleep(interval_s)

    def kill(self) -> int:
        """SIGKILL every member; reap the adopted ones. Returns how many."""
        return _kill_all(self.members)


def _token() -> str:
    """A marker no other run shares (``os.urandom``: importing ``secrets`` for it cost
    every start 6 ms), after its owner (:func:`owner_tag`)."""
    return f"{owner_tag()}.{os.urandom(8).hex()}"


def owner_tag() -> str:
    """This process as the owner of what it leaves behind (a marker, a workspace's
    directory): ``p<pid>t<start time>n<pid namespace>``, so that neither a pid used again
    nor one of another container sharing the directory is taken for it."""
    pid = os.getpid()
    return f"p{pid}t{_start_time(pid) or 0}n{_pid_namespace()}"


_OWNER = re.compile(r"p(\d+)t(\d+)n(\d+)")


def owner_gone(tag: str) -> bool:
    """Whether the owner ``tag`` (see :func:`owner_tag`) names is gone; False where this
    process cannot tell (not Linux; another pid namespace)."""
    found = _OWNER.fullmatch(tag)
    if found is None or _start_time(os.getpid()) is None:
        return False
    if int(found[3]) != _pid_namespace():
        return False
    return _start_time(int(found[1])) != int(found[2])


def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


@functools.cache
def _kill_orphans_once() -> int:
    return kill_orphans_of_dead_runs()


def kill_orphans_of_dead_runs() -> int:
    """SIGKILL the marked processes whose run is gone without killing them (an agent
    left sleeping by a ``kill -9`` of its run). Not those of the marker this process
    inherited (a run started from inside a run: its own parents). Returns how many."""
    prefix = f"{SCOPE_ENV}=".encode()
    inherited = os.environ.get(SCOPE_ENV, "").encode()
    found: list[int] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(_PROC):
            if not entry.name.isdigit():
                continue
            try:
                environ = _environ(int(entry.name))
            except OSError:
                continue
            for variable in environ.split(b"\0") if prefix in environ else ():
                token = variable[len(prefix) :] if variable.startswith(prefix) else b""
                if (
                    token
                    and token != inherited
                    and owner_gone(token.split(b".")[0].decode("ascii", "replace"))
                ):
                    found.append(int(entry.name))
    return _kill_all(lambda: [pid for pid in found if _start_time(pid) is not None])


def mark_children() -> None:
    """Mark every process this one starts from now on, and theirs: a marker of its own in
    the environment they inherit (``SIGNAL_EVAL_SCOPE``), by which :func:`kill_descendants`
    finds them once orphaned too (a daemon, a ``sleep &`` in a shell). Not by becoming
    their subreaper: orphans that exit on their own would stay our zombies until the end,
    thousands in a long run."""
    os.environ[SCOPE_ENV] = _token()


def kill_descendants() -> int:
    """SIGKILL every process this one started that still runs: its descendants, and the
    orphans that carry its :func:`mark_children` marker (with theirs). A command ends so
    (``run``): a harness's child left running would hold the command's stdout open, and
    ``signal-eval run ... | cat`` would wait for it. Returns how many."""
    token = os.environ.get(SCOPE_ENV)

    def members() -> list[int]:
        marked = _marked(token) if token else []
        return sorted(_descendants(os.getpid(), *marked) - {os.getpid()})

    return _kill_all(members)


def _marked(token: str) -> list[int]:
    """The processes of this machine whose environment carries ``token`` (those we may
    read: our user's)."""
    pids = [int(e.name) for e in os.scandir(_PROC) if e.name.isdigit()]
    return [pid for pid in pids if _carries(pid, token)]


def _carries(pid: int, token: str) -> bool:
    """Whether ``pid``'s environment holds ``token`` (once ``pid`` is past an exec)."""
    marker = f"{SCOPE_ENV}={token}".encode()
    try:
        environ = _settled_environ(pid)
    except OSError:
        return False
    return marker + b"\0" in environ or environ.endswith(marker)


def _environ(pid: int) -> bytes:
    return (_PROC / str(pid) / "environ").read_bytes()


def _settled_environ(pid: int) -> bytes:
    """``pid``'s environment, waited for while ``pid`` is mid-exec: between an exec's new
    memory and its arguments' place in it, the kernel shows neither arguments nor
    environment (1 read in 17 of a process exec'ing in a loop). A goal's ``setsid sh -c
    '…' & exit 0`` execs twice as it is orphaned: a scan in that window missed it, and it
    outlived the goal. A process whose environment is empty for good has arguments."""
    environ = _environ(pid)
    for _ in range(_EXEC_WAITS):
        if environ or not _runs_in_user_space(pid):
            break
        arguments = (_PROC / str(pid) / "cmdline").read_bytes()
        environ = _environ(pid)  # after the arguments: read past the window if they were
        if environ or arguments:
            break
        _exec_pause()
    return environ


def _exec_pause() -> None:
    time.sleep(0.001)


def _runs_in_user_space(pid: int) -> bool:
    """Whether ``pid`` runs (no zombie) and is no kernel thread (which has no environment)."""
    try:
        fields = (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] not in ("Z", "X") and not int(fields[6]) & _PF_KTHREAD


def _descendants(*roots: int) -> set[int]:
    """The live ``roots`` and every live process below them."""
    found: set[int] = set()
    starts = [*roots]
    while starts:
        child = starts.pop()
        if child not in found and _start_time(child) is not None:
            found.add(child)
            starts.extend(_children(child))
    return found


def _kill_all(members: Callable[[], list[int]]) -> int:
    """SIGKILL every one of ``members()`` (asked again until none is left: a dying
    parent's children are re-parented meanwhile); reap the adopted ones."""
    killed: set[int] = set()
    for _ in range(20):
        found = members()
        if not found:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        _reap(killed)
    return len(killed)


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` (of all its threads)."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in (_PROC / str(pid) / "task").iterdir():
            with contextlib.suppress(OSError):
                found += map(int, (task / "children").read_text().split())
    return found


def _start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot), or None if it is gone or a zombie."""
    try:
        fields = (_PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])


def _reap(pids: set[int]) -> None:
    """Collect the exit status of those of ``pids`` that are our (adopted) children."""
    for pid in pids:
        for _ in range(100):
            try:
                done, _status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not ours (its parent reaps it), or reaped already
                break
            if done:
                break
            os.sched_yield()
