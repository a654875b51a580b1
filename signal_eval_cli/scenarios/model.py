"""Scenario files: the dataclasses, loading, validation and lookup by id.

Everything a scenario can get wrong is found at load time and reported as
``file:line:col`` problems (exit 2): schema errors, unknown assertion types (with the
scenario id and "did you mean"), unknown adapters and goals, overrides of goals the
scenario does not run, malformed agentTask commands and paths leaving the workspace.
Unknown top-level fields are allowed (the reference harness's files carry more), except
near misses of known ones (``titel``, ``Tags``), which are typos.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from signal_eval_cli.assertions.registry import resolve
from signal_eval_cli.errors import InputError, Problem, closest, edit_distance, shorten
from signal_eval_cli.kinds import is_result_data, is_scenario_data
from signal_eval_cli.loading import Document, load_document, schema_validator, validate_document
from signal_eval_cli.scenarios.adapters import ADAPTERS, DEFAULT_TIMEOUT_MS, Adapter
from signal_eval_cli.scenarios.workspace import (
    AgentTaskError,
    TaskOp,
    check_relative_path,
    is_absolute_text,
    parse_agent_task,
)

__all__ = [
    "SCENARIO_SUFFIXES",
    "AgentSpec",
    "AgentTask",
    "Fixture",
    "GoalSpec",
    "ResolvedGoal",
    "Scenario",
    "find_scenarios",
    "is_scenario_data",
    "load_scenario",
    "parse_scenario",
    "scenario_from_document",
]

SCENARIO_SUFFIXES = (".json", ".yaml", ".yml")
Scope = Literal["fixture", "repo"]


@dataclass(frozen=True, slots=True)
class GoalSpec:
    """A goal as written: a name, and optionally what replaces the adapter's command."""

    goal: str
    command: str | None = None
    args: tuple[str, ...] | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout_ms: float | None = None
    report: str | None = None
    """``junit <path>`` as written."""

    @classmethod
    def from_data(cls, data: Any, goal: str | None = None) -> GoalSpec:
        if isinstance(data, str):
            return cls(data)
        args = data.get("args")
        return cls(
            goal=str(goal if goal is not None else data["goal"]),
            command=data.get("command"),
            args=tuple(args) if args is not None else None,
            env=dict(data.get("env") or {}),
            cwd=data.get("cwd"),
            timeout_ms=data.get("timeoutMs"),
            report=data.get("report"),
        )

    def over(self, base: GoalSpec) -> GoalSpec:
        """This spec's fields on top of ``base`` (env merged key by key)."""
        return GoalSpec(
            goal=self.goal,
            command=self.command if self.command is not None else base.command,
            args=self.args if self.args is not None else base.args,
            env={**base.env, **self.env},
            cwd=self.cwd if self.cwd is not None else base.cwd,
            timeout_ms=self.timeout_ms if self.timeout_ms is not None else base.timeout_ms,
            report=self.report if self.report is not None else base.report,
        )


@dataclass(frozen=True, slots=True)
class ResolvedGoal:
    """What will run, placeholders (``{fixture}``, ``{python}``) not yet filled in."""

    goal: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout_ms: float = DEFAULT_TIMEOUT_MS
    only_if_exists: str | None = None
    toolchain: str | None = None
    report: str | None = None
    """Path (relative to the goal's cwd) of the JUnit XML the goal writes."""


@dataclass(frozen=True, slots=True)
class Fixture:
    path: str
    copy_to_temp: bool = True


@dataclass(frozen=True, slots=True)
class AgentTask:
    instruction: str | tuple[str, ...]
    ops: tuple[TaskOp, ...] = ()


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """``agent:``: a harness factory or a command that edits the workspace."""

    command: tuple[str, ...] = ()
    harness: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    input: Any = None
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_ms: float = DEFAULT_TIMEOUT_MS

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> AgentSpec:
        return cls(
            command=tuple(str(a) for a in data.get("command") or ()),
            harness=data.get("harness"),
            params=dict(data.get("params") or {}),
            input=data.get("input"),
            env={str(k): str(v) for k, v in (data.get("env") or {}).items()},
            timeout_ms=float(data.get("timeoutMs", DEFAULT_TIMEOUT_MS)),
        )

    @property
    def label(self) -> str:
        return self.harness or " ".join(self.command)


@dataclass(slots=True)
class Scenario:
    id: str
    adapter_id: str
    goals: list[ResolvedGoal]
    fixture: Fixture
    title: str | None = None
    description: str | None = None
    agent_task: AgentTask | None = None
    agent: AgentSpec | None = None
    pattern_assertions: list[dict[str, Any]] = field(default_factory=list)
    assertions: list[dict[str, Any]] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    source: Path | None = None
    document: Document | None = field(default=None, repr=False, compare=False)
    """The parsed file, for ``file:line:col`` and for rewriting expectedDiff in place."""

    @property
    def directory(self) -> Path:
        """Where paths in the scenario file are relative to (its directory)."""
        return self.source.parent.resolve() if self.source is not None else Path.cwd()

    @property
    def display_title(self) -> str:
        return self.title or self.id

    def problem(self, path: tuple[str | int, ...], message: str) -> Problem:
        if self.document is not None:
            return self.document.problem(path, message)
        return Problem(str(self.source or f"<scenario {self.id}>"), 0, 0, message)

    def diff_paths(self) -> list[tuple[Scope, str]]:
        """``(scope, path)`` of every diff-match, in order, without repeats."""
        keys: dict[tuple[Scope, str], None] = {}
        for a in self.pattern_assertions:
            if a.get("type") == "diff-match":
                keys[(a.get("scope", "fixture"), a["path"])] = None
        return list(keys)


# -- validation ------------------------------------------------------------------------


def _known_types(doc: Document) -> tuple[list[str], list[str]]:
    """The registered pattern assertion types (they read the workspace) and trace assertion
    types, the plugins loaded first if the scenario names a type nobody registered."""
    named = [
        item.get("type")
        for key in ("patternAssertions", "assertions")
        for item in (doc.data.get(key) if isinstance(doc.data.get(key), list) else [])
        if isinstance(item, Mapping)
    ]
    types = resolve(named)
    pattern = [name for name, kind in types.items() if kind.workspace]
    return pattern, [name for name, kind in types.items() if not kind.workspace]


def _type_problems(doc: Document, scenario_id: str) -> list[Problem]:
    """Unknown types in ``patternAssertions`` and ``assertions``, named with the scenario id."""
    data = doc.data
    problems = []
    pattern_types, trace_types = _known_types(doc)
    lists = (("patternAssertions", pattern_types), ("assertions", trace_types))
    for key, known in lists:
        items = data.get(key)
        if not isinstance(items, list):
            continue
        other = "assertions" if key == "patternAssertions" else "patternAssertions"
        for i, item in enumerate(items):
            if not isinstance(item, Mapping) or "type" not in item or item["type"] in known:
                continue
            kind = item["type"]
            other_known = trace_types if key == "patternAssertions" else pattern_types
            if kind in other_known:
                hint = f" — '{kind}' belongs under '{other}'"
            else:
                guess = closest(str(kind), known)
                hint = f" — did you mean '{guess}'?" if guess else ""
            if key == "patternAssertions":
                label, listing = "pattern assertion", f" (known: {', '.join(known)})"
            else:
                label, listing = "assertion", ""
            problems.append(
                doc.problem(
                    (key, i, "type"),
                    f"scenario '{scenario_id}' ({doc.path}): unknown {label} type "
                    f"{kind!r}{hint}{listing}",
                )
            )
    return problems


TYPO_DISTANCE = 2
"""An unknown top-level field this close to a known one (case-insensitive) is a typo."""


def _top_level_fields() -> list[str]:
    schema: Any = schema_validator("scenario").schema
    return list(schema["properties"])


def _typo_problems(doc: Document) -> list[Problem]:
    """Unknown top-level fields that look like typos of known ones.

    The schema lets other top-level fields through (the reference harness's files
    carry ``mode``, ``category``, ``timeoutMs``, …), so ``titel``, ``Tags`` or
    ``patternAssertion`` would silently do nothing: they are errors with a "did you
    mean". A near miss must leave part of the word intact (``kind`` is no ``id``).
    """
    known = _top_level_fields()
    problems = []
    for key in doc.data:
        if key in known:
            continue
        near = [
            field
            for field in known
            if edit_distance(key, field) <= TYPO_DISTANCE and edit_distance(key, field) < len(field)
        ]
        guess = closest(key, near)
        if guess is not None:
            problems.append(
                doc.problem((key,), f"unknown field '{key}' — did you mean '{guess}'?", key=True)
            )
    return problems


def _goal_problems(doc: Document, adapter: Adapter) -> list[Problem]:
    data = doc.data
    problems = []
    overrides = data.get("overrides") or {}
    names: list[str] = []
    for i, goal in enumerate(data["goals"]):
        spec = GoalSpec.from_data(goal)
        where: tuple[str | int, ...] = (
            ("goals", i) if isinstance(goal, str) else ("goals", i, "goal")
        )
        if spec.goal in names:
            problems.append(doc.problem(where, f"goal '{spec.goal}' is listed twice"))
        names.append(spec.goal)
        has_command = spec.command is not None or "command" in overrides.get(spec.goal, {})
        if spec.goal not in adapter.goals and not has_command:
            known = list(adapter.goals)
            guess = closest(spec.goal, known)
            hint = f"did you mean '{guess}'? " if guess else ""
            problems.append(
                doc.problem(
                    where,
                    f"unknown goal '{spec.goal}' for adapter '{adapter.id}' — {hint}(its goals: "
                    f"{', '.join(known)}; or give the goal a 'command')",
                )
            )
    for i, goal in enumerate(data["goals"]):
        report = goal.get("report") if isinstance(goal, Mapping) else None
        try:
            if report is not None:
                check_relative_path(report.split(None, 1)[1].strip())
        except AgentTaskError as exc:
            problems.append(doc.problem(("goals", i, "report"), f"report: {exc}"))
    for name in overrides:
        if name not in names:
            guess = closest(name, names)
            hint = f" — did you mean '{guess}'?" if guess else ""
            problems.append(
                doc.problem(
                    ("overrides", name),
                    f"override for goal '{name}', which the scenario does not run{hint}",
                    key=True,
                )
            )
    return problems


def _semantic_problems(doc: Document) -> list[Problem]:
    data = doc.data
    problems: list[Problem] = []
    adapter = ADAPTERS.get(data["adapterId"])
    if adapter is None:
        guess = closest(data["adapterId"], list(ADAPTERS))
        hint = f" — did you mean '{guess}'?" if guess else ""
        problems.append(
            doc.problem(
                ("adapterId",),
                f"unknown adapter {data['adapterId']!r}{hint} (known: {', '.join(ADAPTERS)})",
            )
        )
    else:
        problems += _goal_problems(doc, adapter)
    task = data.get("agentTask")
    if task is not None:
        instruction = task["instruction"]
        commands = [instruction] if isinstance(instruction, str) else instruction
        for i, command in enumerate(commands):
            try:
                parse_agent_task(command)
            except AgentTaskError as exc:
                where: tuple[str | int, ...] = ("agentTask", "instruction")
                if not isinstance(instruction, str):
                    where = (*where, i)
                problems.append(doc.problem(where, f"agentTask: {exc}"))
    for i, a in enumerate(data.get("patternAssertions") or []):
        try:
            check_relative_path(a["path"])
        except AgentTaskError as exc:
            problems.append(doc.problem(("patternAssertions", i, "path"), f"{a['type']}: {exc}"))
    if not (data["goals"] or data.get("patternAssertions") or data.get("assertions")):
        message = (
            "no goals, patternAssertions or assertions: nothing would be checked, and the "
            "scenario would pass whatever its agent did"
        )
        problems.append(doc.problem(("goals",), message))
    fixture_path = data["fixture"]["path"]
    if is_absolute_text(fixture_path):
        message = (
            f"fixture path {shorten(repr(fixture_path))} is absolute: give it relative to the "
            "scenario file (as ../fixtures/x, say) or to --root, so the file works on any machine"
        )
        problems.append(doc.problem(("fixture", "path"), message))
    return problems


def scenario_from_document(doc: Document) -> Scenario:
    """Validate a parsed scenario file; raise :class:`InputError` with every problem."""
    data = doc.data
    if not isinstance(data, Mapping):
        raise InputError([doc.problem((), "a scenario must be a mapping with id, goals, fixture")])
    scenario_id = data["id"] if isinstance(data.get("id"), str) else "?"
    own = _type_problems(doc, scenario_id) + _typo_problems(doc)
    spots = {(p.line, p.column) for p in own}
    problems = own + [
        p
        for p in validate_document(doc, "scenario")
        if not (p.message.startswith("unknown assertion type") and (p.line, p.column) in spots)
    ]
    if not problems:
        problems = _semantic_problems(doc)
    if problems:
        raise InputError(sorted(problems, key=lambda p: (p.line, p.column)))
    return _build(doc)


def _build(doc: Document) -> Scenario:
    data = doc.data
    adapter = ADAPTERS[data["adapterId"]]
    overrides = {
        name: GoalSpec.from_data(spec, goal=name)
        for name, spec in (data.get("overrides") or {}).items()
    }
    goals = []
    for goal in data["goals"]:
        spec = GoalSpec.from_data(goal)
        if spec.goal in overrides:
            spec = spec.over(overrides[spec.goal])
        goals.append(_resolve(adapter, spec))
    fixture = data["fixture"]
    task = data.get("agentTask")
    agent_task = None
    if task is not None:
        instruction = task["instruction"]
        agent_task = AgentTask(
            instruction if isinstance(instruction, str) else tuple(instruction),
            tuple(parse_agent_task(instruction)),
        )
    return Scenario(
        id=data["id"],
        adapter_id=adapter.id,
        goals=goals,
        fixture=Fixture(fixture["path"], bool(fixture.get("copyToTemp", True))),
        title=data.get("title"),
        description=data.get("description"),
        agent_task=agent_task,
        agent=AgentSpec.from_data(data["agent"]) if data.get("agent") is not None else None,
        pattern_assertions=[dict(a) for a in data.get("patternAssertions") or []],
        assertions=[dict(a) for a in data.get("assertions") or []],
        tags=list(data.get("tags") or []),
        metadata=dict(data.get("metadata") or {}),
        source=Path(doc.path) if not doc.path.startswith("<") else None,
        document=doc,
    )


def _resolve(adapter: Adapter, spec: GoalSpec) -> ResolvedGoal:
    """Adapter default < scenario ``overrides`` < the goal's own fields."""
    base = adapter.goals.get(spec.goal)
    if base is not None and spec.command is None:
        command, args, only_if = base.command, base.args, base.only_if_exists
        env = {**adapter.env, **base.env}
    else:
        command, args, only_if, env = spec.command or "", (), None, dict(adapter.env)
    return ResolvedGoal(
        goal=spec.goal,
        command=command,
        args=spec.args if spec.args is not None else args,
        env={**env, **spec.env},
        cwd=spec.cwd,
        timeout_ms=float(spec.timeout_ms) if spec.timeout_ms is not None else DEFAULT_TIMEOUT_MS,
        only_if_exists=only_if if spec.args is None else None,
        toolchain=adapter.toolchain if base is not None and spec.command is None else None,
        report=spec.report.split(None, 1)[1].strip() if spec.report else None,
    )


# -- loading ---------------------------------------------------------------------------


def load_scenario(path: str | Path) -> Scenario:
    """Load and validate one scenario file (JSON or YAML)."""
    doc = load_document(path)
    return scenario_from_document(doc)


def parse_scenario(data: Mapping[str, Any], source: str = "<inline>") -> Scenario:
    """Validate a scenario given as data (no line numbers), as a file would be."""
    plain = json.loads(json.dumps(data))
    return scenario_from_document(Document(source, plain, {}, {}))


def _scenario_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        where = os.path.abspath(directory)
        message = f"scenario directory not found (looked in {where}; pass --dir, or a file path)"
        raise InputError([Problem(str(directory), 0, 0, message)])
    return sorted(p for p in directory.iterdir() if p.suffix in SCENARIO_SUFFIXES)


def _is_result_file(path: Path) -> bool:
    try:
        data = load_document(path).data
    except InputError:
        return False
    return isinstance(data, Mapping) and is_result_data(data)


def _peek_id(path: Path) -> str | None:
    """The ``id`` of a scenario file, without validating it (None if unreadable)."""
    try:
        data = load_document(path).data
    except InputError:
        return None
    if isinstance(data, Mapping) and is_scenario_data(data):
        scenario_id = data.get("id")
        return scenario_id if isinstance(scenario_id, str) else None
    return None


def find_scenarios(
    targets: Sequence[str], *, directory: Path, include_all: bool = False
) -> list[Scenario]:
    """Scenarios named by file path (``.json``/``.yaml``/``.yml``) or by id in ``directory``.

    With ``include_all`` every scenario file in ``directory`` comes first (a results file
    saved there is not one: skipped). Every file is validated; all problems are raised
    together. Ids must be unique.
    """
    paths: list[Path] = []
    problems: list[Problem] = []
    if include_all:
        paths += _scenario_files(directory)
    listed = set(paths)
    ids: dict[str, Path] | None = None
    for target in targets:
        if target.endswith(SCENARIO_SUFFIXES):
            paths.append(Path(target))
            continue
        direct = [directory / f"{target}{suffix}" for suffix in SCENARIO_SUFFIXES]
        found = next((p for p in direct if p.is_file() and _peek_id(p) == target), None)
        if found is None:
            if ids is None:
                ids = {}
                for p in _scenario_files(directory):
                    peeked = _peek_id(p)
                    if peeked is not None:
                        ids.setdefault(peeked, p)
            found = ids.get(target)
        if found is None:
            known = sorted(ids or {})
            guess = closest(target, known)
            hint = f" — did you mean '{guess}'?" if guess else ""
            listing = f" (known: {', '.join(known)})" if known else ""
            problems.append(
                Problem(str(directory), 0, 0, f"no scenario with id '{target}'{hint}{listing}")
            )
        else:
            paths.append(found)
    scenarios: list[Scenario] = []
    seen_files: set[str] = set()
    for path in paths:
        real = os.path.realpath(path)  # Path.resolve raises RuntimeError on a symlink loop
        if real in seen_files:
            continue
        seen_files.add(real)
        try:
            scenarios.append(load_scenario(path))
        except InputError as exc:
            if path in listed and _is_result_file(path):
                continue  # results saved among them (-o scenarios/out.json): not a scenario
            problems += exc.problems
    first: dict[str, Scenario] = {}
    for scenario in scenarios:
        if scenario.id in first:
            problems.append(
                scenario.problem(
                    ("id",),
                    f"duplicate scenario id '{scenario.id}' (also in {first[scenario.id].source})",
                )
            )
        first.setdefault(scenario.id, scenario)
    if problems:
        raise InputError(problems)
    return scenarios
