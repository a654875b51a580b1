"""A scenario's ``agent:``: something that edits the workspace itself.

Either a harness factory (an entry-point string, as datasets name theirs) whose
harness gets the workspace in ``ctx.workspace`` (and ``ctx.metadata["workspace"]``) and
whose signals join the scenario trace; or a command (a CLI coding agent) run in the
workspace in its own process group with the timeout rules of goals. A command's stdout
lines that are JSON signal objects (``{"name": ..., "payload": ...}``) are recorded as
signals; every other line becomes an ``agent:stdout`` / ``agent:stderr`` signal.

Model calls go through the run's model proxy: a command gets its variables
(``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, keys) in its environment, a harness gets
``ctx.proxy`` (``ctx.openai()``, ``ctx.proxy.env``), as dataset harnesses do.

Placeholders in a command's argv and env: ``{workspace}`` (also ``{fixture}``, as in
goals), ``{python}`` and ``{scenarioDir}`` (the directory of the scenario file).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from signal_eval_cli.deadline import guarded
from signal_eval_cli.harness.entrypoints import resolve_harness
from signal_eval_cli.harness.protocol import HarnessContext, collect
from signal_eval_cli.proxy.route import CaseRoute
from signal_eval_cli.scenarios.goals import KILL_GRACE_S, run_process
from signal_eval_cli.scenarios.model import AgentSpec, Scenario
from signal_eval_cli.signals import Signal, as_signal

__all__ = ["AGENT_OUTPUT_LIMIT", "AgentOutcome", "agent_files", "run_agent", "scenario_files"]

AGENT_OUTPUT_LIMIT = 1_000_000
"""Bytes of a command agent's stdout (and of its stderr) kept for the trace."""


@dataclass(slots=True)
class AgentOutcome:
    signals: list[Signal]
    error: str | None = None
    exit_code: int | None = None
    duration_ms: float = 0.0
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False


def _fill(text: str, workspace: Path, scenario_dir: Path) -> str:
    return (
        text.replace("{workspace}", str(workspace))
        .replace("{fixture}", str(workspace))
        .replace("{python}", sys.executable)
        .replace("{scenarioDir}", str(scenario_dir))
    )


def scenario_files(scenario: Scenario) -> list[Path]:
    """The scenario's file and the agent files it runs: the user's files, which no report
    of a run of it may be written over."""
    if scenario.source is None:
        return []
    agent = agent_files(scenario.agent, scenario.source.parent) if scenario.agent else []
    return [scenario.source, *agent]


def agent_files(spec: AgentSpec, scenario_dir: Path) -> list[Path]:
    """The user's files an agent runs (which no report may be written over): a harness
    agent's file (``agents/fixer.py:create``), and each argument of a command agent that
    names an existing file outside the workspace (``{scenarioDir}/agent.py``)."""
    named = [spec.harness.rpartition(":")[0]] if spec.harness else []
    named += [
        _fill(arg, Path(), scenario_dir)
        for arg in spec.command
        if "{workspace}" not in arg and "{fixture}" not in arg
    ]
    found = []
    for name in filter(None, named):
        path = Path(name) if Path(name).is_absolute() else scenario_dir / name
        with contextlib.suppress(OSError):
            if path.is_file():
                found.append(path)
    return found


def _output_signals(stream: str, text: str) -> list[Signal]:
    """A command's output lines as signals: JSON signal objects as they are, others as text."""
    signals = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if stream == "stdout" and line.lstrip().startswith("{"):
            try:
                data = json.loads(line)
            except ValueError:
                data = None
            if isinstance(data, dict) and isinstance(data.get("name"), str):
                try:
                    signals.append(as_signal(data))
                    continue
                except (TypeError, ValueError, KeyError):
                    pass
        signals.append(as_signal({"name": f"agent:{stream}", "payload": {"line": line}}))
    return signals


async def _run_command(
    spec: AgentSpec,
    workspace: Path,
    scenario_dir: Path,
    grace_s: float,
    base_env: Mapping[str, str],
) -> AgentOutcome:
    argv = [_fill(a, workspace, scenario_dir) for a in spec.command]
    env = {**base_env, **{k: _fill(v, workspace, scenario_dir) for k, v in spec.env.items()}}
    env["SIGNAL_EVAL_WORKSPACE"] = str(workspace)
    result = await run_process(
        argv,
        cwd=workspace,
        env=env,
        timeout_ms=spec.timeout_ms,
        grace_s=grace_s,
        limit=AGENT_OUTPUT_LIMIT,
    )
    error = result.error
    if error is None and result.exit_code != 0:
        error = f"exited with code {result.exit_code}"
    signals = _output_signals("stdout", result.stdout) + _output_signals("stderr", result.stderr)
    return AgentOutcome(
        signals,
        error,
        result.exit_code,
        result.duration_ms,
        result.stdout,
        result.stderr,
        result.timed_out,
    )


async def _run_harness(
    spec: AgentSpec,
    workspace: Path,
    scenario_id: str,
    scenario_dir: Path,
    proxy: CaseRoute | None,
) -> AgentOutcome:
    assert spec.harness is not None
    started = time.perf_counter()
    # A bad reference is an InputError: exit 2 before the scenario's result is made.
    harness = resolve_harness(spec.harness, spec.params, base_dir=scenario_dir)
    ctx = HarnessContext(
        scenario_id,
        dict(spec.params),
        metadata={"workspace": str(workspace)},
        proxy=proxy,
        workspace=workspace,
    )
    payload = spec.input if spec.input is not None else {"workspace": str(workspace)}
    # Under the runner's deadline and its line between the run's cancellation and the
    # agent's own failure (the scenario's): a TimeoutError the agent raises is not a timeout.
    timed_out, failed = await guarded(collect(harness, payload, ctx), spec.timeout_ms / 1000)
    error = f"{type(failed).__name__}: {failed}" if failed is not None else None
    if timed_out:
        ctx.cancelled.set()
        error = f"timed out after {spec.timeout_ms:g} ms"
    duration = (time.perf_counter() - started) * 1000
    return AgentOutcome(list(ctx.signals), error, None, duration, timed_out=timed_out)


async def run_agent(
    spec: AgentSpec,
    workspace: Path,
    *,
    scenario_id: str,
    scenario_dir: Path,
    grace_s: float = KILL_GRACE_S,
    proxy: CaseRoute | None = None,
) -> AgentOutcome:
    """Run the agent in ``workspace``; its failures are in the outcome. With ``proxy``
    (the scenario's route on the run's model proxy) its model calls go through it."""
    if spec.harness is not None:
        return await _run_harness(spec, workspace, scenario_id, scenario_dir, proxy)
    base_env = {**os.environ, **(proxy.env if proxy is not None else {})}
    return await _run_command(spec, workspace, scenario_dir, grace_s, base_env)
