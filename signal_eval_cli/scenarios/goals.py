"""Running a goal's command: own process group, timeout, capped output.

Each goal runs in a new session (so a new process group). When the timeout hits, the
whole group — children and grandchildren — gets SIGTERM, a short grace, then SIGKILL:
a test runner that spawned a server cannot outlive its goal. Leftovers are killed the
same way after a normal exit. stdout and stderr are kept up to ``OUTPUT_LIMIT`` bytes
each; the rest is counted and replaced by a marker.

asyncio subprocesses keep several goals (of several scenarios) running at once.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from signal_eval_cli.process_scope import ProcessScope
from signal_eval_cli.scenarios.model import ResolvedGoal

__all__ = [
    "KILL_GRACE_S",
    "OUTPUT_LIMIT",
    "TAIL_LINES",
    "TAIL_WIDTH",
    "GoalResult",
    "ProcessResult",
    "cap_output",
    "fill_placeholders",
    "run_goal",
    "run_process",
]

OUTPUT_LIMIT = 10_000
TAIL_LINES = 12
"""Lines of a failed goal's output a console table shows (:meth:`GoalResult.tail`)."""
TAIL_WIDTH = 80
KILL_GRACE_S = 0.5
_CHUNK = 65_536
_DRAIN_S = 2.0
_REAP_S = 1.0
_TELLING = re.compile(
    r"(?i)\b(error|fail(ed|ure)?|not ok|assert\w*|exception|traceback)\b"
)  # reading what is left in the pipes once the group is gone


@dataclass(slots=True)
class ProcessResult:
    exit_code: int | None
    stdout: str
    stderr: str
    duration_ms: float
    timed_out: bool = False
    error: str | None = None


@dataclass(slots=True)
class GoalResult:
    """One goal's outcome, with the reference harness's field names in JSON."""

    goal: str
    status: Literal["passed", "failed"]
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    duration_ms: float = 0.0
    error: str | None = None
    command: list[str] = field(default_factory=list)
    skipped: bool = False
    """Passed without running (``only_if_exists`` file absent); ``stdout`` says why."""
    tests: list[dict[str, Any]] | None = None
    """Each test's ``{id, status, message?}`` from the goal's JUnit report, if it has one."""

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def _lines(self) -> list[str]:
        """Non-blank output lines, stdout then stderr, without npm's own warnings (noise)."""
        return [
            line.rstrip()
            for line in (self.stdout + "\n" + self.stderr).splitlines()
            if line.strip() and not line.startswith(("npm warn", "npm WARN"))
        ]

    def excerpt(self, limit: int = 8) -> list[str]:
        """The output lines most likely to say why the goal failed, for reports.

        Lines mentioning an error or failure (a test runner's ``not ok``, ``FAILED``,
        ``AssertionError``) from stdout then stderr, else the last lines of output.
        """
        lines = self._lines()
        telling = [line for line in lines if _TELLING.search(line)]
        return telling[:limit] if telling else lines[-limit:]

    def tail(self, limit: int = TAIL_LINES, width: int = TAIL_WIDTH) -> list[str]:
        """The last ``limit`` lines of output, for a console table.

        A line longer than ``width`` characters counts as several (10,000 bytes on one
        line would fill a screen); when lines are left out, a first line says how many.
        The full captured text stays in ``stdout``/``stderr`` (and the result JSON).
        """
        rows = [
            line[i : i + width]
            for line in (raw.expandtabs(4) for raw in self._lines())
            for i in range(0, len(line), width)
        ]
        if len(rows) <= limit:
            return rows
        earlier = len(rows) - limit
        return [f"… {earlier:,} earlier line{'s' if earlier != 1 else ''}", *rows[-limit:]]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "goal": self.goal,
            "status": self.status,
            "exitCode": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "durationMs": round(self.duration_ms, 3),
            "error": self.error,
            "command": self.command,
        }
        if self.skipped:
            out["skipped"] = True
        if self.tests is not None:
            out["tests"] = self.tests
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GoalResult:
        return cls(
            goal=str(data["goal"]),
            status="passed" if data.get("status") == "passed" else "failed",
            exit_code=data.get("exitCode"),
            stdout=str(data.get("stdout") or ""),
            stderr=str(data.get("stderr") or ""),
            duration_ms=float(data.get("durationMs") or 0.0),
            error=data.get("error"),
            command=[str(c) for c in data.get("command") or []],
            skipped=bool(data.get("skipped", False)),
            tests=data.get("tests"),
        )


def cap_output(data: bytes, omitted: int, limit: int = OUTPUT_LIMIT) -> str:
    """Decode ``data`` (at most ``limit`` bytes kept) and say how much was dropped.

    The cut never splits a UTF-8 character: an incomplete one at the end is dropped too.
    """
    kept = data[:limit]
    omitted += len(data) - len(kept)
    text = codecs.getincrementaldecoder("utf-8")("replace").decode(kept, final=omitted == 0)
    if omitted:
        text += f"\n[... output truncated at {limit} bytes: {omitted} more bytes omitted]"
    return text


async def _read_capped(stream: asyncio.StreamReader, limit: int) -> tuple[bytes, int]:
    """Everything until EOF, keeping ``limit`` bytes and counting the others."""
    kept = bytearray()
    omitted = 0
    while chunk := await stream.read(_CHUNK):
        room = limit - len(kept)
        kept += chunk[:room]
        omitted += max(0, len(chunk) - room)
    return bytes(kept), omitted


def _group_alive(pgid: int) -> bool:
    """Whether any process of the group still runs (zombies do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _PROC is None or _has_live_member(pgid)


_PROC = Path("/proc") if Path("/proc/self/stat").exists() else None


def _has_live_member(pgid: int) -> bool:
    """Scan /proc: an orphan killed in a container whose init never reaps stays a zombie,
    and ``killpg(pgid, 0)`` would keep reporting its group alive."""
    assert _PROC is not None
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _kill_group(pgid: int, grace_s: float) -> None:
    """SIGTERM the group, wait up to ``grace_s`` for it to go, then SIGKILL what is left."""
    if not _group_alive(pgid):
        return
    _signal_group(pgid, signal.SIGTERM)
    if await _group_gone(pgid, grace_s):
        return
    _signal_group(pgid, signal.SIGKILL)
    await _group_gone(pgid, _REAP_S)  # SIGKILL is delivered asynchronously


async def _group_gone(pgid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while _group_alive(pgid):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.01)
    return True


async def _exited(process: asyncio.subprocess.Process, timeout_s: float) -> bool:
    """Whether ``process`` exits within ``timeout_s`` (polling its return code)."""
    deadline = time.monotonic() + timeout_s
    delay = 0.002
    while process.returncode is None:
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.02)
    return True


def _close_transport(process: asyncio.subprocess.Process) -> None:
    """Close the process's transport now (asyncio has no public call for it)."""
    transport = getattr(process, "_transport", None)
    if transport is not None:
        transport.close()


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_ms: float,
    limit: int = OUTPUT_LIMIT,
    grace_s: float = KILL_GRACE_S,
) -> ProcessResult:
    """Run ``argv`` in its own process group; never raises for the command's failures."""
    started = time.perf_counter()

    def elapsed() -> float:
        return (time.perf_counter() - started) * 1000

    executable = argv[0]
    if os.sep not in executable:
        found = shutil.which(executable, path=env.get("PATH", os.defpath))
        if found is None:
            return ProcessResult(None, "", "", elapsed(), error=f"command not found: {executable}")
        executable = found
    scope = ProcessScope()  # finds what leaves the group (setsid, setpgrp) too
    try:
        process = await asyncio.create_subprocess_exec(
            executable,
            *argv[1:],
            cwd=cwd,
            env=scope.env(env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return ProcessResult(None, "", "", elapsed(), error=f"cannot start {argv[0]}: {reason}")
    assert process.stdout is not None and process.stderr is not None
    scope.add(process.pid)
    watcher = asyncio.ensure_future(scope.watch())
    readers = [
        asyncio.ensure_future(_read_capped(process.stdout, limit)),
        asyncio.ensure_future(_read_capped(process.stderr, limit)),
    ]
    # Not process.wait(): it also waits for the pipes to close, which a grandchild
    # holding them open would delay until the timeout.
    try:
        timed_out = not await _exited(process, timeout_ms / 1000)
    except asyncio.CancelledError:  # Ctrl-C or a cancelled run: no goal outlives us
        _signal_group(process.pid, signal.SIGKILL)
        for task in (*readers, watcher):
            task.cancel()
        # Reap it and close its pipes while the loop still runs: left to the garbage
        # collector, the transport would close on a closed loop and print a traceback.
        await _exited(process, grace_s)
        scope.kill()
        _close_transport(process)
        raise
    # The leader's pid is the group id (start_new_session); kill whatever is left in it.
    watcher.cancel()
    await _kill_group(process.pid, grace_s)
    await _exited(process, grace_s + _DRAIN_S)
    scope.kill()  # what left the group: no goal leaves anything behind
    duration = elapsed()
    done, pending = await asyncio.wait(readers, timeout=_DRAIN_S)
    for task in pending:  # a process that left the group still holds the pipe
        task.cancel()
    outputs = [task.result() if task in done else (b"", 0) for task in readers]
    _close_transport(process)
    stdout, stderr = (cap_output(data, omitted, limit) for data, omitted in outputs)
    return ProcessResult(
        process.returncode,
        stdout,
        stderr,
        duration,
        timed_out=timed_out,
        error=f"timed out after {timeout_ms:g} ms" if timed_out else None,
    )


def fill_placeholders(text: str, workdir: Path) -> str:
    return text.replace("{fixture}", str(workdir)).replace("{python}", sys.executable)


async def run_goal(
    goal: ResolvedGoal,
    workdir: Path,
    *,
    grace_s: float = KILL_GRACE_S,
    base_env: Mapping[str, str] | None = None,
) -> GoalResult:
    """Fill in placeholders, run the goal's command in ``workdir``, judge the outcome.

    The goal's ``env`` goes over ``base_env`` (default: this process's environment; a
    scenario run adds its model proxy's variables)."""
    argv = [
        fill_placeholders(goal.command, workdir),
        *(fill_placeholders(a, workdir) for a in goal.args),
    ]
    inherited = os.environ if base_env is None else base_env
    env = {**inherited, **{k: fill_placeholders(v, workdir) for k, v in goal.env.items()}}
    # A relative cwd is inside the working directory; "{fixture}/x" fills in to absolute.
    cwd = workdir / fill_placeholders(goal.cwd, workdir) if goal.cwd else workdir
    if not cwd.is_dir():
        return GoalResult(
            goal.goal, "failed", None, error=f"cwd {cwd} is not a directory", command=argv
        )
    if goal.only_if_exists and not (cwd / goal.only_if_exists).exists():
        note = f"skipped: no {goal.only_if_exists}, nothing to do"
        return GoalResult(goal.goal, "passed", 0, stdout=note, command=argv, skipped=True)
    result = await run_process(argv, cwd=cwd, env=env, timeout_ms=goal.timeout_ms, grace_s=grace_s)
    error = result.error
    if error is not None and error.startswith("command not found") and goal.toolchain:
        error += f" — goal '{goal.goal}' needs {goal.toolchain} installed and on PATH"
    if error is None and result.exit_code != 0:
        error = f"exited with code {result.exit_code}"
    return GoalResult(
        goal=goal.goal,
        status="passed" if error is None else "failed",
        exit_code=result.exit_code,
        stdout=result.stdout,
        stderr=result.stderr,
        duration_ms=result.duration_ms,
        error=error,
        command=argv,
    )
