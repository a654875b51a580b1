"""The built-in reactive harness: agents as data, activated by the signals they emit.

In the spirit of Open Harness's ``runReactive``. An agents file (YAML) lists agents::

    agents:
      - id: reviewer
        activate_on: [harness:start]            # signal-name globs
        model: claude-sonnet-4
        prompt: "Review this {input.language} code:\\n{input.code}"
        updates: {review: json}                 # state key <- a source (see below)
        emits: [review:complete]                # payload {output: <text>}
      - id: fixer
        activate_on: [review:complete]
        when: {state: {review.issueCount: {gt: 0}}, reason: nothing to fix}
        prompt: "Fix: {state.review.summary}"
        emits: [fix:proposed]
    end_when: {state: {done: true}}             # optional
    max_activations: 50                         # optional runaway guard

The run is event-driven and deterministic: a FIFO queue of signals; each signal
activates, in declaration order, every agent whose ``activate_on`` matches it, one
at a time. Every signal an agent run emits (provider, text, tool, state and custom
ones) joins the queue. A false ``when`` emits ``agent:skipped``; ``end_when``
(checked before each signal is dispatched and after each agent) emits
``harness:terminating``; more than ``max_activations`` activations emit
``error:max-activations`` — which a dataset's ``signal.not "error:*"`` catches.

Sources (for ``updates`` and ``emits[].payload``): ``text`` (the model's text),
``json`` (the JSON it returned: the last ```json block, else the whole text),
``{json: a.b}``, ``{tool: Write, input: file_path, all: true}`` (inputs of this
call's tool calls; the last one unless ``all``), ``{state: a.b}``, ``{value: 42}``;
``default:`` is used when the value is missing, else the update is not made.

Prompts are templates: ``{input.code}``, ``{state.plan.steps}``, ``{trigger.name}``,
``{trigger.payload.output}``, ``{params.tone}``, ``{case.id}``; ``{{``/``}}`` are
literal braces; a missing value renders as nothing; non-strings render as JSON.

``durationMs`` of ``harness:end`` is the wall time of the run plus, for replayed
calls, the part of the recorded latency the replay did not spend, so latency
assertions mean the same offline as live.
"""

from __future__ import annotations

import json
import re
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from signal_eval_cli.assertions.helpers import short
from signal_eval_cli.errors import InputError, ParamError, Problem
from signal_eval_cli.harness.protocol import HarnessContext
from signal_eval_cli.loading import Document, kind_of, load_document, validate_document
from signal_eval_cli.paths import base_dir_of, default_cassette, resolve_from
from signal_eval_cli.patterns import (
    compile_glob,
    get_path,
    match_pattern,
    match_value,
    matcher_problems,
    pattern_problems,
    set_path,
    values_equal,
)
from signal_eval_cli.providers.base import (
    Provider,
    ProviderError,
    ProviderRequest,
    ProviderResponse,
    ToolCallRecord,
    call_provider,
)
from signal_eval_cli.providers.recording import RecordingProvider
from signal_eval_cli.providers.registry import make_provider
from signal_eval_cli.signals import Signal

__all__ = [
    "DEFAULT_MAX_ACTIVATIONS",
    "Agent",
    "AgentsSpec",
    "EmitSpec",
    "ReactiveHarness",
    "agents_from_document",
    "create_harness",
    "extract_json",
    "guard_failure",
    "load_agents",
    "render",
]

DEFAULT_MAX_ACTIVATIONS = 50
SKIP_BUDGET_FACTOR = 10
"""Guard skips allowed per allowed activation: a loop of skips is a runaway loop too."""


# -- the spec ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EmitSpec:
    signal: str
    payload: Mapping[str, Any] | None = None
    """Field -> source; ``None`` means ``{output: <text>}``."""
    when: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Agent:
    """One agent, as data."""

    id: str
    activate_on: tuple[str, ...]
    when: Mapping[str, Any] | None = None
    prompt: str | None = None
    """No prompt: the agent makes no model call (it only updates state and emits)."""
    system: str | None = None
    model: str | None = None
    temperature: float | None = None
    tools: tuple[dict[str, Any], ...] = ()
    updates: tuple[tuple[str, Any], ...] = ()
    emits: tuple[EmitSpec, ...] = ()

    def listens_to(self, name: str) -> bool:
        return any(compile_glob(p).fullmatch(name) for p in self.activate_on)

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Agent:
        activate_on = data["activate_on"]
        return cls(
            id=data["id"],
            activate_on=(activate_on,) if isinstance(activate_on, str) else tuple(activate_on),
            when=data.get("when"),
            prompt=data.get("prompt"),
            system=data.get("system"),
            model=data.get("model"),
            temperature=data.get("temperature"),
            tools=tuple(
                {"name": t} if isinstance(t, str) else dict(t) for t in data.get("tools", [])
            ),
            updates=tuple((data.get("updates") or {}).items()),
            emits=tuple(
                EmitSpec(e)
                if isinstance(e, str)
                else EmitSpec(e["signal"], e.get("payload"), e.get("when"))
                for e in data.get("emits", [])
            ),
        )


@dataclass(frozen=True)
class AgentsSpec:
    """A validated agents file."""

    agents: tuple[Agent, ...]
    end_when: Mapping[str, Any] | None = None
    max_activations: int = DEFAULT_MAX_ACTIVATIONS
    path: Path | None = None
    _routes: dict[str, tuple[Agent, ...]] = field(default_factory=dict, repr=False, compare=False)

    def agents_for(self, name: str) -> tuple[Agent, ...]:
        """Agents listening to signal ``name``, in declaration order (memoised per name)."""
        found = self._routes.get(name)
        if found is None:
            found = tuple(a for a in self.agents if a.listens_to(name))
            self._routes[name] = found
        return found


def load_agents(
    source: str | Path | Sequence[Any] | Mapping[str, Any], *, base_dir: Path | None = None
) -> AgentsSpec:
    """Read and validate agents from a YAML file, a list of agents, or a mapping.

    A mapping is either a whole agents file (with ``agents:``) or ``{id: agent}``.
    Raises :class:`InputError` listing every problem (``file:line:col`` for files).
    """
    if isinstance(source, (str, Path)):
        return agents_from_document(load_document(resolve_from(source, base_dir)))
    return agents_from_document(Document("<agents>", _normalise(source), {}, {}))


def agents_from_document(doc: Document) -> AgentsSpec:
    """Validate parsed agents (schema, then ids, sources and guards)."""
    if not isinstance(doc.data, Mapping):
        raise InputError([doc.problem((), "an agents file must be a mapping with 'agents'")])
    problems = validate_document(doc, "agents") or list(_semantic_problems(doc))
    if problems:
        raise InputError(problems)
    data = doc.data
    return AgentsSpec(
        agents=tuple(Agent.from_data(a) for a in data["agents"]),
        end_when=data.get("end_when"),
        max_activations=int(data.get("max_activations", DEFAULT_MAX_ACTIVATIONS)),
        path=Path(doc.path) if doc.path != "<agents>" else None,
    )


def _normalise(source: Sequence[Any] | Mapping[str, Any]) -> Any:
    if isinstance(source, Mapping):
        if "agents" in source:
            return dict(source)
        return {
            "agents": [
                {"id": key, **value} if isinstance(value, Mapping) else value
                for key, value in source.items()
            ]
        }
    return {"agents": list(source)}


_SOURCE_KINDS = ("json", "tool", "state", "value")


def _semantic_problems(doc: Document) -> list[Problem]:
    """What the schema cannot say: unique ids, one kind per source, sane matchers."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for i, agent in enumerate(doc.data["agents"]):
        at: tuple[str | int, ...] = ("agents", i)
        if agent["id"] in seen:
            problems.append(doc.problem((*at, "id"), f"duplicate agent id '{agent['id']}'"))
        seen.add(agent["id"])
        if agent.get("when") is not None:
            problems += _guard_problems(doc, agent["when"], (*at, "when"))
        for key, source in (agent.get("updates") or {}).items():
            problems += _source_problems(doc, source, (*at, "updates", key))
        for j, emit in enumerate(agent.get("emits", [])):
            if isinstance(emit, Mapping):
                for name, source in (emit.get("payload") or {}).items():
                    problems += _source_problems(doc, source, (*at, "emits", j, "payload", name))
                if emit.get("when") is not None:
                    problems += _guard_problems(doc, emit["when"], (*at, "emits", j, "when"))
    if doc.data.get("end_when") is not None:
        problems += _guard_problems(doc, doc.data["end_when"], ("end_when",))
    return problems


def _source_problems(doc: Document, source: Any, at: tuple[str | int, ...]) -> list[Problem]:
    if not isinstance(source, Mapping):
        return []
    kinds = [k for k in _SOURCE_KINDS if k in source]
    if len(kinds) != 1:
        found = ", ".join(kinds) or "none"
        return [
            doc.problem(at, f"a source needs exactly one of json, tool, state, value (got {found})")
        ]
    if kinds != ["tool"] and ("input" in source or "all" in source):
        return [doc.problem(at, "'input' and 'all' only apply to a {tool: ...} source")]
    if kinds == ["value"] and "default" in source:
        return [doc.problem(at, "a {value: ...} source never needs a default")]
    return []


def _guard_problems(
    doc: Document, guard: Mapping[str, Any], at: tuple[str | int, ...]
) -> list[Problem]:
    problems = [
        doc.problem((*at, "state", *p.split("/")[1:]), m) for p, m in _state_matchers(guard)
    ]
    if "payload" in guard:
        problems += [
            doc.problem((*at, "payload", *p.split("/")[1:]), m)
            for p, m in pattern_problems(guard["payload"])
        ]
    if not set(guard) - {"reason"}:
        problems.append(
            doc.problem(at, "a guard needs a condition (state, signal, payload, all, any or not)")
        )
    for key in ("all", "any"):
        for i, sub in enumerate(guard.get(key, [])):
            problems += _guard_problems(doc, sub, (*at, key, i))
    if "not" in guard:
        problems += _guard_problems(doc, guard["not"], (*at, "not"))
    return problems


def _state_matchers(guard: Mapping[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for path, expected in (guard.get("state") or {}).items():
        out += [(f"/{path}{p}", m) for p, m in matcher_problems(expected)]
    return out


# -- pure helpers --------------------------------------------------------------------------


_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{\s*([A-Za-z_][\w-]*(?:\.[\w-]+|\[-?\d+\])*)\s*\}")


def render(template: str, context: Mapping[str, Any]) -> str:
    """Fill ``{dotted.path}`` placeholders from ``context``; other braces stay as written."""

    def fill(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        found, value = get_path(context, match.group(1))
        if not found or value is None:
            return ""
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    return _PLACEHOLDER.sub(fill, template)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of each fenced code block, in order."""
    blocks: list[tuple[str, str]] = []
    language: str | None = None
    body: list[str] = []
    for line in text.split("\n"):
        stripped = line.strip()
        if language is None:
            if stripped.startswith("```"):
                language, body = stripped[3:].strip().lower(), []
        elif stripped.startswith("```"):
            blocks.append((language, "\n".join(body)))
            language = None
        else:
            body.append(line)
    return blocks


def extract_json(text: str) -> tuple[bool, Any]:
    """The JSON a model returned: the last parseable ```json (or bare ```) block,
    else the whole text, else the outermost ``{...}``. ``(found, value)``."""
    for language, body in reversed(fenced_blocks(text)):
        if language in ("json", ""):
            try:
                return True, json.loads(body)
            except ValueError:
                continue
    candidates = [text]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return True, json.loads(candidate)
        except ValueError:
            continue
    return False, None


def guard_failure(guard: Mapping[str, Any], state: Any, trigger: Signal | None) -> str | None:
    """``None`` when ``guard`` holds for ``state`` and the trigger, else the first reason why not."""
    for path, expected in (guard.get("state") or {}).items():
        found, actual = get_path(state, path)
        if not found:
            return f"state '{path}' is missing (expected {short(expected)})"
        if not match_value(expected, actual):
            return f"state '{path}' is {short(actual)}, expected {short(expected)}"
    if "signal" in guard:
        name = trigger.name if trigger is not None else None
        if name is None or not compile_glob(guard["signal"]).fullmatch(name):
            return f"trigger '{name}' does not match '{guard['signal']}'"
    if "payload" in guard:
        payload = trigger.payload if trigger is not None else None
        if not match_pattern(guard["payload"], payload):
            return f"trigger payload {short(payload)} does not match {short(guard['payload'])}"
    for sub in guard.get("all", []):
        failure = guard_failure(sub, state, trigger)
        if failure is not None:
            return failure
    if "any" in guard:
        failures = [guard_failure(sub, state, trigger) for sub in guard["any"]]
        if all(f is not None for f in failures):
            return "none of the alternatives holds: " + "; ".join(map(str, failures))
    if "not" in guard and guard_failure(guard["not"], state, trigger) is None:
        return f"'not' condition holds: {short(guard['not'])}"
    return None


@dataclass(slots=True)
class _Reply:
    """What one activation produced, for sources to read (JSON parsed once, lazily)."""

    text: str = ""
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    _json: tuple[bool, Any] | None = None

    @property
    def json(self) -> tuple[bool, Any]:
        if self._json is None:
            self._json = extract_json(self.text)
        return self._json


def _read_source(source: Any, reply: _Reply, state: Any) -> tuple[bool, Any]:
    """``(found, value)`` of a source (see the module docstring)."""
    if source == "text":
        return True, reply.text
    if source == "json":
        return reply.json
    if "value" in source:
        return True, source["value"]
    found, value = False, None
    if "json" in source:
        found, data = reply.json
        if found and source["json"] not in ("", "."):
            found, value = get_path(data, source["json"])
        else:
            value = data
    elif "state" in source:
        found, value = get_path(state, source["state"])
    elif "tool" in source:
        inputs = [c.input for c in reply.tool_calls if c.name == source["tool"]]
        if source.get("input"):
            picked = [get_path(i, source["input"]) for i in inputs]
            inputs = [v for ok, v in picked if ok]
        if source.get("all"):
            found, value = True, inputs
        elif inputs:
            found, value = True, inputs[-1]
    if not found and "default" in source:
        return True, source["default"]
    return found, value


# -- the run -------------------------------------------------------------------------------


class ReactiveHarness:
    """Runs an :class:`AgentsSpec` against one case input; safe to share across cases."""

    model_proxy = False
    """Its calls go through its own provider (or cassette), never the run's model proxy:
    ``run`` starts none for it (nor imports aiohttp's server for one)."""

    def __init__(
        self,
        spec: AgentsSpec,
        provider: Provider,
        *,
        max_activations: int | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> None:
        self.spec = spec
        self.provider = provider
        self.max_activations = max_activations or spec.max_activations
        self.params = dict(params or {})

    async def run(self, input: Any, ctx: HarnessContext) -> None:
        await _Run(self, input, ctx).execute()


class _Run:
    """The mutable part of one case's run."""

    def __init__(self, harness: ReactiveHarness, input: Any, ctx: HarnessContext) -> None:
        self.spec = harness.spec
        self.provider = harness.provider
        self.limit = harness.max_activations
        self.params = {**harness.params, **ctx.params}
        self.input = input
        self.ctx = ctx
        self.state: Any = input
        self.queue: deque[Signal] = deque()
        self.activations = 0
        self.skips = 0
        self.calls: dict[str, int] = {}
        self.unspent_ms = 0.0

    def emit(
        self, name: str, payload: Any = None, *, agent: str | None = None, parent: Any = None
    ) -> Signal:
        signal = self.ctx.emit(name, payload, agent=agent, parent=parent)
        self.queue.append(signal)
        return signal

    def template_context(self, trigger: Signal | None) -> dict[str, Any]:
        return {
            "input": self.input,
            "state": self.state,
            "params": self.params,
            "case": {"id": self.ctx.case_id},
            "trigger": {"name": trigger.name, "payload": trigger.payload} if trigger else None,
        }

    async def execute(self) -> None:
        began = time.perf_counter()
        start = self.emit(
            "harness:start", {"agents": [a.id for a in self.spec.agents], "state": self.state}
        )
        ended: Signal | None = None
        while self.queue and ended is None:
            signal = self.queue.popleft()
            ended = self.terminating(signal, signal.agent) or await self.dispatch(signal)
        duration = (time.perf_counter() - began) * 1000 + self.unspent_ms
        self.ctx.emit(
            "harness:end",
            {
                "durationMs": round(duration, 3),
                "activations": self.activations,
                "state": self.state,
            },
            parent=ended or start,
        )

    async def dispatch(self, trigger: Signal) -> Signal | None:
        """Activate every listening agent; a terminating signal when the run must end."""
        for agent in self.spec.agents_for(trigger.name):
            failure = guard_failure(agent.when, self.state, trigger) if agent.when else None
            if failure is not None:
                ended = self.skip(agent, trigger, failure)
            elif self.activations >= self.limit:
                ended = self.runaway(
                    agent, trigger, f"{self.activations} activations reached max_activations"
                )
            else:
                ended = self.terminating(await self.activate(agent, trigger), agent.id)
            if ended is not None:
                return ended
        return None

    def skip(self, agent: Agent, trigger: Signal, failure: str) -> Signal | None:
        """Emit ``agent:skipped``; a skip loop past its budget is a runaway too."""
        self.skips += 1
        budget = self.limit * SKIP_BUDGET_FACTOR
        if self.skips > budget:
            return self.runaway(agent, trigger, f"more than {budget} guard skips")
        reason = (agent.when or {}).get("reason")
        self.emit(
            "agent:skipped",
            {
                "agent": agent.id,
                "reason": render(reason, self.template_context(trigger)) if reason else failure,
                "trigger": trigger.name,
            },
            agent=agent.id,
            parent=trigger,
        )
        return None

    def terminating(self, signal: Signal, agent: str | None) -> Signal | None:
        end_when = self.spec.end_when
        if end_when is None or guard_failure(end_when, self.state, signal) is not None:
            return None
        reason = end_when.get("reason")
        return self.ctx.emit(
            "harness:terminating",
            {
                "reason": render(reason, self.template_context(signal)) if reason else "end_when",
                "agent": agent,
                "state": self.state,
            },
            agent=agent,
            parent=signal,
        )

    def runaway(self, agent: Agent, trigger: Signal, what: str) -> Signal:
        message = (
            f"runaway loop stopped: {what} (max_activations {self.limit}); agent "
            f"'{agent.id}' was about to run again on '{trigger.name}'. Check the "
            "activate_on cycle, or raise max_activations."
        )
        error = self.ctx.emit(
            "error:max-activations",
            {
                "error": message,
                "code": "max_activations",
                "limit": self.limit,
                "agent": agent.id,
                "trigger": trigger.name,
            },
            agent=agent.id,
            parent=trigger,
        )
        return self.ctx.emit(
            "harness:terminating",
            {"reason": "max-activations", "agent": agent.id, "state": self.state},
            agent=agent.id,
            parent=error,
        )

    async def activate(self, agent: Agent, trigger: Signal) -> Signal:
        """Run one agent; return the last signal it emitted."""
        self.activations += 1
        activated = self.emit(
            "agent:activated",
            {"agent": agent.id, "trigger": trigger.name},
            agent=agent.id,
            parent=trigger,
        )
        reply = _Reply()
        if agent.prompt is not None:
            response = await self.call(agent, trigger, activated)
            reply = _Reply(response.text, response.tool_calls)
        last = activated
        for key, source in agent.updates:
            found, value = _read_source(source, reply, self.state)
            if found:
                last = self.update(key, value, agent, activated) or last
        for spec in agent.emits:
            if spec.when is not None and guard_failure(spec.when, self.state, trigger) is not None:
                continue
            if spec.payload is None:
                payload: dict[str, Any] = {"output": reply.text}
            else:
                payload = {}
                for name, source in spec.payload.items():
                    found, value = _read_source(source, reply, self.state)
                    if found:
                        payload[name] = value
            last = self.emit(spec.signal, payload, agent=agent.id, parent=activated)
        return last

    async def call(self, agent: Agent, trigger: Signal, activated: Signal) -> ProviderResponse:
        context = self.template_context(trigger)
        messages = []
        if agent.system is not None:
            messages.append({"role": "system", "content": render(agent.system, context)})
        messages.append({"role": "user", "content": render(agent.prompt or "", context)})
        number = self.calls.get(agent.id, 0)
        self.calls[agent.id] = number + 1
        request = ProviderRequest(
            case_id=self.ctx.case_id,
            agent=agent.id,
            messages=messages,
            model=agent.model,
            tools=[dict(t) for t in agent.tools],
            temperature=agent.temperature,
            call=number,
            run=self.ctx.run,
        )
        began = time.perf_counter()
        try:
            response = await call_provider(self.provider, request, self.emit, parent=activated)
        except ProviderError as exc:
            self.ctx.emit(
                "agent:error",
                {"agent": agent.id, "error": str(exc), "code": exc.code},
                agent=agent.id,
                parent=activated,
            )
            raise
        spent = (time.perf_counter() - began) * 1000
        if response.latency_ms is not None:
            self.unspent_ms += max(0.0, float(response.latency_ms) - spent)
        return response

    def update(self, key: str, value: Any, agent: Agent, activated: Signal) -> Signal | None:
        found, old = get_path(self.state, key)
        old = old if found else None
        if found and values_equal(old, value):
            return None
        self.state = set_path(self.state, key, value)
        return self.emit(
            f"state:{key}:changed",
            {"key": key, "oldValue": old, "newValue": value, "agent": agent.id},
            agent=agent.id,
            parent=activated,
        )


# -- the factory ----------------------------------------------------------------------------


def create_harness(
    agents: str | Path | Sequence[Any] | Mapping[str, Any],
    cassette: str | Path | None = None,
    provider: str | Provider | None = None,
    max_activations: int | None = None,
    *,
    dataset_dir: str | Path | None = None,
    dataset_path: str | Path | None = None,
    latency_scale: float = 0.0,
    provider_options: Mapping[str, Any] | None = None,
    **params: Any,
) -> ReactiveHarness:
    """Build the reactive harness (entry point ``reactive``).

    Args:
        agents: an agents YAML file (relative paths resolve against the dataset's
            directory), a list of agents, or a mapping (see :func:`load_agents`).
        cassette: the cassette to replay; default ``cassettes/<dataset-stem>.yaml``
            beside the dataset (``<agents-file-stem>`` when the dataset is unknown);
            see :mod:`signal_eval_cli.paths`.
        provider: a :class:`Provider` object, ``"cassette"`` (the default), or a spec
            such as ``"openai:gpt-4o"`` handed to
            ``signal_eval_cli.providers.registry.make_provider(spec, **provider_options)``.
        max_activations: runaway guard; overrides the agents file (default 50).
        dataset_dir: the dataset's directory (passed by the CLI); ``dataset_path``
            the dataset file itself, which also names the default cassette.
        latency_scale: replay sleeps this fraction of each recorded latency (0: none).
        **params: extra values for prompt templates, as ``{params.<name>}``.
    """
    base_dir = _base_dir(dataset_dir, dataset_path)
    spec = load_agents(agents, base_dir=base_dir)
    if max_activations is not None and (
        not isinstance(max_activations, int) or max_activations < 1
    ):
        raise InputError(
            f"reactive harness: max_activations must be a whole number >= 1, got {max_activations!r}"
        )
    if isinstance(provider, str) and provider != "cassette":
        options = dict(provider_options or {})
        if base_dir is not None:
            options.setdefault("base_dir", base_dir)  # relative cassette: paths
        if "cassette" not in options and (cassette or dataset_path or spec.path):
            options["cassette"] = str(_cassette_path(cassette, spec, base_dir, dataset_path))
        chosen = make_provider(provider, **options)
    elif provider is not None and not isinstance(provider, str):
        chosen = provider
    else:
        path = _cassette_path(cassette, spec, base_dir, dataset_path)
        if not path.is_file():
            raise InputError([Problem(str(path), 0, 0, _NOT_RECORDED)])
        chosen = RecordingProvider.replaying(path, latency_scale=latency_scale)
    return ReactiveHarness(spec, chosen, max_activations=max_activations, params=params)


_NOT_RECORDED = (
    "cassette not found (record one with --record --provider openai:<model>, or pass cassette=PATH)"
)


def _check_params(
    params: Mapping[str, Any], base_dir: Path | None, dataset_path: Path, recording: bool
) -> None:
    """For ``validate`` and ``run`` before any case: the agents file exists and is valid,
    and so does the cassette a replay reads (not one a real provider may call live
    without, nor one ``recording`` writes)."""
    if "agents" not in params:
        raise InputError("reactive harness: params need 'agents' (an agents YAML file)")
    for name, (types, what) in _PARAM_TYPES.items():
        value = params.get(name)
        if (value is not None or name == "agents") and not isinstance(value, types):
            raise ParamError(name, f"'{name}': expected {what}, got {kind_of(value)}")
    try:
        spec = load_agents(params["agents"], base_dir=base_dir)
    except InputError as exc:
        if all(p.line > 0 for p in exc.problems):
            raise  # located inside the agents file itself
        raise ParamError("agents", exc.problems) from None
    provider = params.get("provider")
    if recording:
        return
    if provider is None or provider == "cassette":
        param = "cassette" if "cassette" in params else None  # None: the default one
        path = _cassette_path(params.get("cassette"), spec, base_dir, dataset_path)
    elif isinstance(provider, str) and provider.startswith("cassette:"):
        param, path = "provider", resolve_from(provider.partition(":")[2], base_dir)
    else:
        return
    if not path.is_file():
        raise ParamError(param, [Problem(str(path), 0, 0, _NOT_RECORDED)])


# What a dataset may give the params that name files or a provider (the others are
# template values): anything else is refused, located at the param, before it is used.
_PARAM_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "agents": ((str, list, Mapping), "an agents file path, a list of agents or a mapping"),
    "cassette": ((str,), "a cassette file path"),
    "provider": ((str,), "a provider such as 'cassette' or 'openai:gpt-4o-mini'"),
}

create_harness.check_params = _check_params  # type: ignore[attr-defined]


def _base_dir(dataset_dir: str | Path | None, dataset_path: str | Path | None) -> Path | None:
    if dataset_dir is not None:
        return resolve_from(dataset_dir, None)
    return base_dir_of(dataset_path) if dataset_path is not None else None


def _cassette_path(
    cassette: str | Path | None,
    spec: AgentsSpec,
    base_dir: Path | None,
    dataset_path: str | Path | None,
) -> Path:
    if cassette is not None:
        return resolve_from(cassette, base_dir)
    if dataset_path is not None:
        return default_cassette(dataset_path)
    if spec.path is None:
        raise InputError("reactive harness: agents given inline and no dataset: pass cassette=PATH")
    # no dataset (library use): name it after the agents file, in the same place
    return resolve_from(Path("cassettes") / f"{spec.path.stem}.yaml", base_dir)
