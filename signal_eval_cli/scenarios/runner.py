"""run_scenario: workspace → baselines → agentTask → goals → assertions, as a trace.

The order is seed 000's. Every step emits a signal (``scenario:start``,
``workspace:ready``, ``agentTask:applied``, ``goal:start``/``goal:end``,
``assertion:result``, ``scenario:end``, then ``harness:end`` with ``durationMs`` for the
latency metric), so the scenario's own ``assertions`` — signal, metric, … — judge the
run like any dataset case, over the complete trace.

Every declared pattern assertion yields exactly one result, pass or fail: a check
that raises fails with the error, and an unknown type stops the run before it starts.

With the run's model proxies (:class:`ScenarioProxies`), each scenario run is a case on
its cassette's proxy: goals and command agents get its ``OPENAI_BASE_URL`` /
``ANTHROPIC_BASE_URL`` in their environment, a harness agent gets ``ctx.proxy``, and
every call becomes ``provider:start``/``provider:end`` signals under the step that made it.
"""

from __future__ import annotations

import asyncio
import functools
import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from signal_eval_cli.assertions import AssertionResult, EvalContext, evaluate_guarded
from signal_eval_cli.assertions.registry import lookup
from signal_eval_cli.errors import InputError
from signal_eval_cli.harness.protocol import HarnessContext
from signal_eval_cli.proxy.route import CaseRoute
from signal_eval_cli.results import (
    CaseMetrics,
    CaseResult,
    DatasetResult,
    SignalsPolicy,
)
from signal_eval_cli.runner import in_pool
from signal_eval_cli.scenarios.agents import run_agent
from signal_eval_cli.scenarios.changes import (
    TreeSnapshot,
    changed_files,
    entries,
    find_escapes,
    snapshot,
    workspace_diff,
)
from signal_eval_cli.scenarios.goals import KILL_GRACE_S, GoalResult, run_goal
from signal_eval_cli.scenarios.model import ResolvedGoal, Scenario
from signal_eval_cli.scenarios.proxying import ScenarioProxies
from signal_eval_cli.scenarios.reports import goal_report_path, needs_test_baseline, read_report
from signal_eval_cli.scenarios.workspace import (
    AgentTaskError,
    Workspace,
    apply_agent_task,
    prepare_workspace_in_thread,
    read_text,
    resolve_inside,
)
from signal_eval_cli.signals import Signal, Trace, now_iso
from signal_eval_cli.workpaths import fixture_dir, project_root

__all__ = [
    "ScenarioResult",
    "ScenarioRunResult",
    "capture_baselines",
    "check_scenarios",
    "existing_fixture",
    "fixture_dir",
    "project_root",
    "run_scenario",
    "run_scenarios",
]

SOURCE_AGENT = "signal-eval:scenario"


@dataclass(slots=True)
class ScenarioResult:
    id: str
    passed: bool
    goals: list[GoalResult] = field(default_factory=list)
    pattern_assertions: list[AssertionResult] = field(default_factory=list)
    assertions: list[AssertionResult] = field(default_factory=list)
    """The scenario's own assertions over its trace."""
    signals: list[Signal] = field(default_factory=list)
    title: str | None = None
    adapter_id: str = ""
    duration_ms: float = 0.0
    error: str | None = None
    workdir: str | None = None
    """Set when the working directory was kept (``--keep-workdir``) or is the fixture."""
    source: str | None = None
    tags: list[str] = field(default_factory=list)
    agent: dict[str, Any] | None = None
    """The agent's ``agent:end`` payload (exit code, duration, error), when there is one."""
    final_diff: str | None = None
    """Every change to the workspace before the goals ran, as ``git diff`` prints it."""
    changed_files: list[str] = field(default_factory=list)
    run: int = 0
    """Which run of the scenario this is (``--repeat``), from 0."""

    def recompute(self) -> None:
        """``passed`` from the parts (after ``--update-expected`` turned some into passes)."""
        self.passed = (
            self.error is None
            and all(g.passed for g in self.goals)
            and all(a.passed for a in self.pattern_assertions)
            and all(a.passed for a in self.assertions)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "adapterId": self.adapter_id,
            "passed": self.passed,
            "durationMs": round(self.duration_ms, 3),
            "error": self.error,
            "source": self.source,
            "workdir": self.workdir,
            "goals": [g.to_dict() for g in self.goals],
            "patternAssertions": [_pattern_dict(a) for a in self.pattern_assertions],
            "assertions": [a.to_dict() for a in self.assertions],
            "signals": [s.to_dict() for s in self.signals],
            "agent": self.agent,
            "finalDiff": self.final_diff,
            "changedFiles": self.changed_files,
            "run": self.run,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScenarioResult:
        return cls(
            id=str(data["id"]),
            passed=bool(data["passed"]),
            goals=[GoalResult.from_dict(g) for g in data.get("goals") or []],
            pattern_assertions=[_pattern_from_dict(a) for a in data.get("patternAssertions") or []],
            assertions=[AssertionResult.from_dict(a) for a in data.get("assertions") or []],
            signals=[Signal.from_dict(s) for s in data.get("signals") or []],
            title=data.get("title"),
            adapter_id=str(data.get("adapterId") or ""),
            duration_ms=float(data.get("durationMs") or 0.0),
            error=data.get("error"),
            workdir=data.get("workdir"),
            source=data.get("source"),
            agent=data.get("agent"),
            final_diff=data.get("finalDiff"),
            changed_files=[str(f) for f in data.get("changedFiles") or []],
            run=int(data.get("run") or 0),
        )

    def to_journal(self) -> dict[str, Any]:
        """Its journal line (and what a Ray actor sends back): its JSON and its tags,
        which :meth:`from_journal` reads back."""
        return self.to_dict() | {"tags": self.tags}

    @classmethod
    def from_journal(cls, data: Mapping[str, Any]) -> ScenarioResult:
        """A journaled scenario result: its tags ride along (its own JSON has none)."""
        scenario = cls.from_dict(data)
        scenario.tags = [str(t) for t in data.get("tags") or []]
        return scenario

    def to_case_result(self) -> CaseResult:
        """This scenario as a dataset case (kind ``scenario``) for reports and compare.

        Its assertions are one ``{type: goal}`` result per goal, then the pattern
        assertions, then the trace assertions; goals and patternAssertions are also
        kept verbatim as extra fields.
        """
        goal_checks = [
            AssertionResult(
                assertion={"type": "goal", "goal": g.goal},
                passed=g.passed,
                message=_goal_message(g),
                actual=g.exit_code,
                evaluation_ms=g.duration_ms,
            )
            for g in self.goals
        ]
        trace = Trace(self.signals)
        return CaseResult(
            case_id=self.id,
            name=self.title,
            passed=self.passed,
            assertions=[*goal_checks, *self.pattern_assertions, *self.assertions],
            signals=self.signals,
            final_state=None,
            metrics=CaseMetrics.from_trace(trace, self.duration_ms, finished=self.error is None),
            duration_ms=self.duration_ms,
            error=self.error,
            tags=list(self.tags),
            kind="scenario",
            extra={
                "goals": [g.to_dict() for g in self.goals],
                "patternAssertions": [_pattern_dict(a) for a in self.pattern_assertions],
            },
        )


def _goal_message(goal: GoalResult) -> str:
    if goal.passed:
        return f"exit {goal.exit_code} in {goal.duration_ms:,.0f} ms"
    excerpt = goal.excerpt()
    detail = ("\n" + "\n".join(excerpt)) if excerpt else ""
    return f"{goal.error or 'failed'}{detail}"


def _pattern_dict(result: AssertionResult) -> dict[str, Any]:
    """The reference harness's shape: ``{assertion, status, details}``."""
    out: dict[str, Any] = {
        "assertion": result.assertion,
        "status": "passed" if result.passed else "failed",
        "details": result.message,
    }
    if result.assertion.get("type") == "diff-match" and result.actual is not None:
        out["actualDiff"] = result.actual
    return out


def _pattern_from_dict(data: Mapping[str, Any]) -> AssertionResult:
    return AssertionResult(
        assertion=dict(data.get("assertion") or {}),
        passed=data.get("status") == "passed",
        message=str(data.get("details", "")),
        actual=data.get("actualDiff"),
    )


def _cases(scenarios: Sequence[ScenarioResult]) -> list[CaseResult]:
    """One case per scenario id; a repeated scenario is one case with every run's outcome,
    passing only when all runs pass (as ``run --repeat`` does for dataset cases)."""
    runs: dict[str, list[ScenarioResult]] = {}
    for scenario in scenarios:
        runs.setdefault(scenario.id, []).append(scenario)
    cases = []
    for group in runs.values():
        results = [s.to_case_result() for s in group]
        if len(results) == 1:
            cases.append(results[0])
            continue
        chosen = next((r for r in results if not r.passed), results[0])
        chosen.outcomes = [r.passed for r in results]
        chosen.passed = all(chosen.outcomes)
        chosen.metrics = CaseMetrics.of_runs([r.metrics for r in results])
        chosen.duration_ms = sum(r.duration_ms for r in results)
        cases.append(chosen)
    return cases


@dataclass(slots=True)
class ScenarioRunResult(DatasetResult):
    """Scenario results that are also a :class:`DatasetResult` (one case per scenario).

    Reports and ``compare`` read ``cases``; the JSON adds ``"scenarios"`` in the
    reference harness's shape. Call :meth:`refresh` after changing ``scenarios``.
    """

    scenarios: list[ScenarioResult] = field(default_factory=list)

    kind: ClassVar[str] = "scenarios"
    """As its results file says (what ``compare`` names in a mismatch)."""

    @classmethod
    def of(cls, scenarios: list[ScenarioResult], **fields: Any) -> ScenarioRunResult:
        fields.setdefault("name", "scenarios")
        return cls(cases=_cases(scenarios), scenarios=scenarios, **fields)

    def refresh(self) -> None:
        for scenario in self.scenarios:
            scenario.recompute()
        self.cases = _cases(self.scenarios)

    def to_dataset_result(self) -> DatasetResult:
        return DatasetResult(
            name=self.name,
            cases=list(self.cases),
            duration_ms=self.duration_ms,
            started_at=self.started_at,
            completed_at=self.completed_at,
            metadata=dict(self.metadata),
            interrupted=self.interrupted,
            shard=self.shard,
        )

    def to_dict(self, signals: SignalsPolicy = "failed") -> dict[str, Any]:
        base = DatasetResult.to_dict(self, signals)
        head = {"schemaVersion": base.pop("schemaVersion"), "kind": "scenarios"}
        base.pop("kind")
        return {**head, "scenarios": [s.to_dict() for s in self.scenarios], **base}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScenarioRunResult:
        scenarios = [ScenarioResult.from_dict(s) for s in data["scenarios"]]
        cases = data.get("cases")
        return cls(
            name=str(data.get("name", "scenarios")),
            cases=(
                [CaseResult.from_dict(c) for c in cases]
                if cases is not None
                else [s.to_case_result() for s in scenarios]
            ),
            duration_ms=float(data.get("durationMs", 0.0)),
            started_at=str(data.get("startedAt", "")),
            completed_at=str(data.get("completedAt", "")),
            metadata=dict(data.get("metadata", {})),
            interrupted=bool(data.get("interrupted", False)),
            shard=data.get("shard"),
            scenarios=scenarios,
        )


@dataclass
class _ScenarioTrace(HarnessContext):
    """The runner's recorder (a case's :class:`HarnessContext`) for a scenario: every
    signal is the scenario's (``agent``) and points at its cause; one emitted without a
    parent (a model call, from the proxy's thread) goes under the step running it
    (``step``: the agent's or a goal's start)."""

    step: Signal | None = None
    settle: Callable[[], Awaitable[bool]] | None = None
    """Waits for the model calls in flight (the proxy's), when there is a proxy."""

    def emit(
        self,
        name: str,
        payload: Any = None,
        *,
        agent: str | None = None,
        parent: str | Signal | None = None,
    ) -> Signal:
        parent = parent if parent is not None else self.step
        return HarnessContext.emit(self, name, payload, agent=SOURCE_AGENT, parent=parent)

    async def settled(self) -> None:
        """Wait until every model call started has emitted its end: a streamed answer's
        client may exit before the proxy emits ``provider:end``."""
        if self.settle is not None:
            await self.settle()


def existing_fixture(scenario: Scenario, root: Path | str | None = None) -> Path:
    """:func:`fixture_dir`, or :class:`InputError` saying where it was looked for."""
    fixture = fixture_dir(scenario, root)
    if fixture.is_dir():
        temp = Path(tempfile.gettempdir()).resolve()
        if fixture.resolve() in (temp, *temp.parents):  # ../../.. up to /, say
            message = (
                f"fixture path {scenario.fixture.path} is {fixture.resolve()}, which holds the "
                f"temp directory {temp} its workspace would be copied into: name the "
                "project's own directory"
            )
            raise InputError([scenario.problem(("fixture", "path"), message)])
        return fixture
    where = (
        f"under --root {Path(root).resolve()}"
        if root is not None
        else f"in {scenario.directory} and its parents; --root DIR sets the base"
        if scenario.source is not None
        else f"in {scenario.directory}"
    )
    message = f"fixture directory not found: {scenario.fixture.path} (looked {where})"
    raise InputError([scenario.problem(("fixture", "path"), message)])


def capture_baselines(
    scenario: Scenario, workspace: Path, root: Path
) -> dict[tuple[str, str], str | None]:
    """The content (None: no file) of every diff-match path, before anything changes."""
    baselines: dict[tuple[str, str], str | None] = {}
    for scope, path in scenario.diff_paths():
        base = workspace if scope == "fixture" else root
        try:
            baselines[(scope, path)] = read_text(resolve_inside(base, path))
        except (AgentTaskError, OSError):
            baselines[(scope, path)] = None  # the assertion itself reports the escape, the pipe
    return baselines


def _check_types(scenario: Scenario) -> None:
    """Raise :class:`UnknownAssertionType` before doing anything (inline scenarios)."""
    for a in [*scenario.pattern_assertions, *scenario.assertions]:
        lookup(a.get("type"))


@dataclass(slots=True)
class _Run:
    """One run of a scenario in progress: what each of its phases reads and fills in."""

    scenario: Scenario
    trace: _ScenarioTrace
    result: ScenarioResult
    start: Signal
    """``scenario:start``: the parent of each phase's signals."""
    grace_s: float
    route: CaseRoute | None
    """The scenario's route on the run's model proxy, when there is one."""
    base_env: dict[str, str] | None
    """The goals' environment: the proxy's variables over ours (None: ours as it is)."""

    async def reporting_goal(self, goal: ResolvedGoal, workdir: Path, parent: Signal) -> GoalResult:
        """Run a goal; with ``report: junit <path>`` record its tests as a ``tests:result``."""
        report = goal_report_path(goal, workdir)
        if report is not None:
            report.unlink(missing_ok=True)  # a stale report must not stand for this run
            report.parent.mkdir(parents=True, exist_ok=True)  # node's reporter will not
        self.trace.step = parent
        outcome = await run_goal(goal, workdir, grace_s=self.grace_s, base_env=self.base_env)
        await self.trace.settled()
        if report is not None and goal.report is not None:
            payload = await asyncio.to_thread(read_report, goal, report, outcome)
            outcome.tests = payload.get("tests")
            self.trace.emit("tests:result", payload, parent=parent)
        return outcome

    async def baseline(self, fixture: Path) -> None:
        """The goals on an untouched copy of the fixture: what passed before the agent."""
        trace = self.trace
        baseline_start = trace.emit("baseline:start", {}, parent=self.start)
        try:
            workspace = await prepare_workspace_in_thread(
                fixture, copy=True, label=f"{self.scenario.id}-baseline"
            )
        except OSError as exc:
            trace.emit("baseline:end", {"error": f"cannot prepare: {exc}"}, parent=baseline_start)
            return
        try:
            for goal in self.scenario.goals:
                outcome = await self.reporting_goal(goal, workspace.path, baseline_start)
                if not outcome.passed and goal.report is None:
                    break  # a failed build: the tests cannot run
        finally:
            await asyncio.to_thread(workspace.cleanup)
        for signal in trace.signals:
            if signal.name == "tests:result" and signal.parent == baseline_start.id:
                signal.payload["baseline"] = True
        trace.emit("baseline:end", {}, parent=baseline_start)

    async def prepare(self, fixture: Path, keep_workdir: bool) -> Workspace | None:
        """The scenario's workspace (``workspace:ready``), or ``None`` with the reason in
        ``result.error``."""
        try:
            workspace = await prepare_workspace_in_thread(
                fixture,
                copy=self.scenario.fixture.copy_to_temp,
                label=self.scenario.id,
                overlay=not keep_workdir,  # a kept workdir must not stay mounted
            )
        except OSError as exc:
            self.result.error = f"cannot prepare the workspace: {exc}"
            return None
        self.trace.emit(
            "workspace:ready",
            {
                "path": str(workspace.path),
                "copied": workspace.copied,
                "strategy": workspace.strategy,
            },
            parent=self.start,
        )
        return workspace

    async def edit(self, workspace: Workspace) -> bool:
        """The agentTask, then the agent, then the changes they made; a failure stops what
        follows (``result.error``). False when the agent was cut short (its calls are not
        recorded)."""
        scenario, result = self.scenario, self.result
        completed = True
        if scenario.agent_task is not None:
            try:
                files = await asyncio.to_thread(
                    apply_agent_task, scenario.agent_task.ops, workspace.path
                )
            except (AgentTaskError, OSError) as exc:
                result.error = f"agentTask: {exc}"
                self.trace.emit("agentTask:failed", {"error": str(exc)}, parent=self.start)
            else:
                self.trace.emit("agentTask:applied", {"files": files}, parent=self.start)
        if scenario.agent is not None and result.error is None:
            completed = await self.agent(workspace)
        if workspace.copied and result.error is None:
            await self.record_changes(workspace)
        return completed

    async def agent(self, workspace: Workspace) -> bool:
        """Run ``agent:``; its signals join the trace, what it wrote outside fails the run.
        Returns whether it ran to its end (not timed out)."""
        scenario, trace, result = self.scenario, self.trace, self.result
        assert scenario.agent is not None
        watched = await asyncio.to_thread(_watch, workspace)
        shallow = await asyncio.to_thread(_watch_top_level, workspace)
        agent_start = trace.emit("agent:start", {"agent": scenario.agent.label}, parent=self.start)
        trace.step = agent_start
        outcome = await run_agent(
            scenario.agent,
            workspace.path,
            scenario_id=scenario.id,
            scenario_dir=scenario.directory,
            grace_s=self.grace_s,
            proxy=self.route,
        )
        await trace.settled()
        for signal in outcome.signals:
            signal.parent = signal.parent or agent_start.id
            trace.signals.append(signal)
        payload: dict[str, Any] = {
            "agent": scenario.agent.label,
            "exitCode": outcome.exit_code,
            "durationMs": round(outcome.duration_ms, 3),
            "status": "failed" if outcome.error else "passed",
        }
        if outcome.error is not None:
            payload["error"] = outcome.error
            result.error = f"agent: {outcome.error}"
        trace.emit("agent:end", payload, parent=agent_start)
        result.agent = payload
        changes = await asyncio.to_thread(changed_files, workspace.fixture, workspace.path)
        escapes = await asyncio.to_thread(
            find_escapes, workspace.path, changes, watched, _own(workspace), shallow
        )
        if escapes:
            trace.emit("agent:escaped", {"escapes": escapes}, parent=agent_start)
            result.error = "agent wrote outside its workspace: " + "; ".join(escapes)
        return not outcome.timed_out

    async def record_changes(self, workspace: Workspace) -> None:
        """The whole workspace's diff against the fixture, before any goal runs."""
        changes = await asyncio.to_thread(changed_files, workspace.fixture, workspace.path)
        self.result.final_diff = workspace_diff(changes)
        self.result.changed_files = [c.path for c in changes]
        self.trace.emit("workspace:diff", {"files": self.result.changed_files}, parent=self.start)

    async def goals(self, workspace: Workspace | None) -> None:
        """Each goal in the workspace, between ``goal:start`` and ``goal:end``; after a
        failure before them (no workspace, the agentTask, the agent) none runs, each failed
        with that reason."""
        result = self.result
        for goal in self.scenario.goals:
            goal_start = self.trace.emit("goal:start", {"goal": goal.goal}, parent=self.start)
            if workspace is None or result.error is not None:
                outcome = GoalResult(goal.goal, "failed", None, error=f"not run: {result.error}")
            else:
                outcome = await self.reporting_goal(goal, workspace.path, goal_start)
            result.goals.append(outcome)
            payload = {
                "goal": outcome.goal,
                "exitCode": outcome.exit_code,
                "durationMs": round(outcome.duration_ms, 3),
                "status": outcome.status,
            }
            if outcome.error is not None:
                payload["error"] = outcome.error
            self.trace.emit("goal:end", payload, parent=goal_start)

    def check_patterns(self, ctx: EvalContext) -> None:
        """The pattern (file) assertions, each an ``assertion:result`` signal of the trace
        the trace assertions then read."""
        for a in self.scenario.pattern_assertions:
            checked = evaluate_guarded(a, ctx)
            self.result.pattern_assertions.append(checked)
            self.trace.emit(
                "assertion:result",
                {
                    "type": a["type"],
                    "path": a.get("path"),
                    "passed": checked.passed,
                    "message": checked.message,
                },
                parent=self.start,
            )

    def judge(
        self,
        workdir: Path | None,
        root: Path,
        baselines: dict[tuple[str, str], str | None],
        started: float,
    ) -> None:
        """The pattern assertions, the end of the trace (``scenario:end``, then
        ``harness:end``), then the trace assertions over all of it. ``started``: the
        run's ``time.perf_counter()`` at its start."""
        result, trace = self.result, self.trace

        def context() -> EvalContext:
            return EvalContext(
                Trace(trace.signals), workspace=workdir, root=root, baselines=baselines
            )

        self.check_patterns(context())
        result.duration_ms = (time.perf_counter() - started) * 1000
        result.recompute()
        duration = round(result.duration_ms, 3)
        end = {"passed": result.passed, "durationMs": duration}
        trace.emit("scenario:end", end, parent=self.start)
        # What metric.latency.* reads in any trace: the scenario's wall time.
        trace.emit("harness:end", {"durationMs": duration}, parent=self.start)
        result.signals = trace.signals
        result.assertions = [evaluate_guarded(a, context()) for a in self.scenario.assertions]
        result.recompute()


def _watch(workspace: Workspace) -> dict[Path, TreeSnapshot]:
    """What an agent must not touch: the fixture, and the workspace's temp parent."""
    watched = {}
    if workspace.copied:
        watched[workspace.fixture.resolve()] = snapshot(workspace.fixture.resolve())
    if workspace.temp_dir is not None:
        watched[workspace.temp_dir] = snapshot(workspace.temp_dir, _own(workspace))
    return watched


def _watch_top_level(workspace: Workspace) -> dict[Path, frozenset[str]]:
    """The current directory and the user's home, for new entries (see ``changes``); not
    the temp directory, where every scenario's workspace is made, nor a directory
    already watched whole."""
    deep = [workspace.fixture.resolve(), *([workspace.temp_dir] if workspace.temp_dir else [])]
    temp = Path(tempfile.gettempdir()).resolve()
    found = {}
    for directory in (Path.cwd(), Path.home()):
        try:
            directory = directory.resolve()
        except (OSError, RuntimeError):
            continue
        if directory != temp and not any(directory.is_relative_to(d) for d in deep):
            found[directory] = entries(directory)
    return found


def _own(workspace: Workspace) -> set[Path]:
    return {workspace.path, *workspace.private_dirs}


async def run_scenario(
    scenario: Scenario,
    *,
    root: Path | str | None = None,
    keep_workdir: bool = False,
    grace_s: float = KILL_GRACE_S,
    proxies: ScenarioProxies | None = None,
    run: int = 0,
) -> ScenarioResult:
    """Run one scenario; its failures are in the result, bad input raises InputError.

    ``proxies`` (started for this scenario) carry its model calls; ``run`` is which
    run of the scenario this is (``--repeat``)."""
    _check_types(scenario)
    fixture = existing_fixture(scenario, root)
    root = project_root(scenario, root)
    trace = _ScenarioTrace(scenario.id, run=run)
    started = time.perf_counter()
    start = trace.emit(
        "scenario:start",
        {
            "id": scenario.id,
            "title": scenario.display_title,
            "adapterId": scenario.adapter_id,
            "fixture": str(fixture),
            "goals": [g.goal for g in scenario.goals],
        },
    )
    result = ScenarioResult(
        scenario.id,
        passed=False,
        title=scenario.title,
        adapter_id=scenario.adapter_id,
        source=str(scenario.source) if scenario.source else None,
        tags=list(scenario.tags),
        run=run,
    )
    route = proxies.open(scenario, run, trace.emit) if proxies is not None else None
    base_env = {**os.environ, **route.env} if route is not None else None
    if proxies is not None and route is not None:
        trace.settle = functools.partial(proxies.settled, scenario, route)
    phases = _Run(scenario, trace, result, start, grace_s, route, base_env)
    completed = True  # False: cut short (the agent timed out), its calls are not recorded
    workspace: Workspace | None = None
    try:
        workspace = await phases.prepare(fixture, keep_workdir)
        baselines: dict[tuple[str, str], str | None] = {}
        if workspace is not None and needs_test_baseline(scenario):
            await phases.baseline(fixture)
        if workspace is not None:
            baselines = await asyncio.to_thread(capture_baselines, scenario, workspace.path, root)
            completed = await phases.edit(workspace)
        await phases.goals(workspace)
        if proxies is not None and route is not None:
            session = await proxies.finish(scenario, route, completed=completed)
            if session is not None and session.misses:  # the cause of what failed after it
                detail = f" ({result.error})" if result.error else ""
                result.error = f"model proxy: {session.misses[0]}{detail}"
        workdir = workspace.path if workspace is not None else None
        phases.judge(workdir, root, baselines, started)
    finally:
        if proxies is not None and route is not None:  # cut short: record nothing of it
            proxies.close(scenario, route, completed=False)
        if workspace is not None:
            if keep_workdir or not workspace.copied:
                result.workdir = str(workspace.path)
            else:
                await asyncio.to_thread(workspace.cleanup)
    return result


def check_scenarios(scenarios: Sequence[Scenario], root: Path | str | None = None) -> None:
    """Raise :class:`InputError` for an unknown assertion type or a missing fixture: bad
    input stops everything before anything runs."""
    for scenario in scenarios:
        _check_types(scenario)
        existing_fixture(scenario, root)


async def run_scenarios(
    scenarios: Sequence[Scenario],
    *,
    root: Path | str | None = None,
    concurrency: int = 1,
    keep_workdir: bool = False,
    on_complete: Callable[[ScenarioResult], None] | None = None,
    repeat: int = 1,
    finished: Mapping[tuple[str, int], ScenarioResult] | None = None,
    proxies: ScenarioProxies | None = None,
) -> ScenarioRunResult:
    """Run scenarios (each ``repeat`` times, independently), ``concurrency`` at a time;
    results in the order given. A run in ``finished`` (by scenario id and run number, read
    back from a journal) is kept, not run again. ``proxies``, started for ``scenarios``,
    carry their model calls."""
    started_at, started = now_iso(), time.perf_counter()
    check_scenarios(scenarios, root)
    runs = [(s, run) for s in scenarios for run in range(max(1, repeat))]
    done: list[ScenarioResult | None] = [(finished or {}).get((s.id, run)) for s, run in runs]

    async def one(index: int) -> None:
        scenario, run = runs[index]
        result = await run_scenario(
            scenario, root=root, keep_workdir=keep_workdir, proxies=proxies, run=run
        )
        done[index] = result
        if on_complete is not None:
            on_complete(result)

    await in_pool([i for i, result in enumerate(done) if result is None], concurrency, one)
    results = [r for r in done if r is not None]
    return ScenarioRunResult.of(
        results,
        duration_ms=(time.perf_counter() - started) * 1000,
        started_at=started_at,
        completed_at=now_iso(),
    )
