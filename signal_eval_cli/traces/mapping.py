"""The one mapping from framework facts to signals, shared by importers and live harnesses.

Each importer (and each live harness) reduces its framework's records to :class:`Facts`:
agent runs, model calls, tool runs, handoffs and other records, each with a start time.
:func:`to_signals` then orders them by start time and writes the signal vocabulary every
assertion reads, so a format only has to say *what happened*, never how to spell it.
"""

from __future__ import annotations

import ast
import bisect
import datetime as _dt
import functools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from signal_eval_cli.signals import Signal

__all__ = [
    "AgentRun",
    "Facts",
    "Handoff",
    "ModelCall",
    "Other",
    "ToolRequest",
    "ToolRun",
    "as_mapping",
    "model_output",
    "note_input",
    "note_traces",
    "parse_arguments",
    "routed_handoffs",
    "stopped",
    "to_signals",
]

HANDOFF_PREFIXES = ("transfer_to_", "transfer_back_to_")
"""The names frameworks give a handoff tool: the Agents SDK's and langgraph-swarm's
``transfer_to_<agent>``, langgraph-supervisor's ``transfer_back_to_<supervisor>``."""


@dataclass
class ToolRequest:
    """A tool call as the model emitted it (in emission order within its response)."""

    id: str | None
    name: str
    input: Any


@dataclass
class AgentRun:
    name: str
    start: float
    end: float | None = None
    error: str | None = None  # why the run failed (max turns, a guardrail): an agent:error


@dataclass
class ModelCall:
    model: str | None
    start: float
    end: float | None = None
    agent: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    text: str = ""
    requests: list[ToolRequest] = field(default_factory=list)
    deltas: list[str] = field(default_factory=list)
    error: str | None = None  # the call failed: a provider:error where its provider:end would be


@dataclass
class ToolRun:
    name: str
    input: Any
    start: float
    end: float | None = None
    agent: str | None = None
    id: str | None = None
    result: Any = None
    error: str | None = None
    span_id: str | None = None  # the id when no model request names the call


@dataclass
class Handoff:
    source: str | None
    target: str
    start: float
    routed: bool = False  # the graph's routing said it (a Command's goto), no transfer's record


@dataclass
class Other:
    """A record no rule maps: kept as a signal ``name`` with its data, never dropped."""

    name: str
    payload: Any
    start: float
    agent: str | None = None


Step = AgentRun | ModelCall | ToolRun | Handoff | Other


@dataclass
class Facts:
    """What one run did; ``start``/``end`` bound the root (epoch seconds)."""

    steps: list[Step] = field(default_factory=list)
    input: Any = None
    output: str | None = None
    start: float | None = None
    end: float | None = None
    transfer_calls_are_handoffs: bool = False
    timed: bool = True  # False: times are only an order (no clock), so no timestamps
    gaps: set[str] = field(default_factory=set)  # what the file cannot say (warned on import)


MANY_TRACES = (
    "it holds {} traces (several runs, or a run continued in another, such as a "
    "previous_response_id): they are read as one run, their steps in time order; put one "
    "run in a file to evaluate each on its own"
)


def note_traces(facts: Facts, trace_ids: set[Any]) -> None:
    """Warn when a file's runs belong to more than one trace (``None``: no id given): the
    Agents SDK's spans; OTel's runs (not model calls made outside any span, each a trace
    of its own)."""
    found = trace_ids - {None, ""}
    if len(found) > 1:
        facts.gaps.add(MANY_TRACES.format(len(found)))


INPUT_GAP = (
    "none of its spans holds the run's input (a run stopped before its first model call, as "
    "by an input guardrail's tripwire, records none: the instrumentations put it on model "
    "calls): the trace's input is unknown"
)


def note_input(facts: Facts, *said: str) -> None:
    """Warn that the input is unknown, unless a gap in ``said`` already says why."""
    if facts.input is None and facts.steps and not facts.gaps & set(said):
        facts.gaps.add(INPUT_GAP)


def as_mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is an object, else an empty one (fields of records we do not trust)."""
    return value if isinstance(value, Mapping) else {}


def parse_arguments(value: Any) -> Any:
    """Tool arguments as an object: JSON text is parsed, anything else kept as is."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text") or p.get("content") or "")
            for p in content
            if isinstance(p, Mapping) and p.get("type") in ("text", "output_text", None)
        )
    return ""


def model_output(value: Any) -> tuple[str, list[ToolRequest]]:
    """``(text, tool requests)`` of a model's output in any shape we meet.

    Chat Completions messages, Responses objects and output items, LangChain
    ``AIMessage`` dicts and GenAI ``{role, parts}`` messages; lists are concatenated.
    """
    if isinstance(value, list):
        texts, requests = [], []
        for item in value:
            text, calls = model_output(item)
            texts.append(text)
            requests.extend(calls)
        return "".join(texts), requests
    if not isinstance(value, Mapping):
        return ("" if value is None else str(value)), []
    if isinstance(value.get("output"), list):  # a Responses object
        return model_output(value["output"])
    if isinstance(value.get("choices"), list):  # a Chat Completions response
        return model_output([as_mapping(c).get("message") for c in value["choices"]])
    kind = value.get("type")
    if kind == "function_call":  # a Responses output item
        return "", [ToolRequest(value.get("call_id"), str(value.get("name")), _args(value))]
    if kind in ("message", "ai", "AIMessage", "AIMessageChunk") or "role" in value:
        if isinstance(value.get("parts"), list):  # GenAI semantic conventions
            return _genai_parts(value["parts"])
        requests = [_request(c) for c in value.get("tool_calls") or [] if isinstance(c, Mapping)]
        return _text_of(value.get("content")), requests
    return "", []


def _args(call: Mapping[str, Any]) -> Any:
    return parse_arguments(call.get("arguments", call.get("args")))


def _request(call: Mapping[str, Any]) -> ToolRequest:
    function = call.get("function")
    if isinstance(function, Mapping):  # Chat Completions
        return ToolRequest(call.get("id"), str(function.get("name")), _args(function))
    return ToolRequest(call.get("id"), str(call.get("name")), _args(call))  # LangChain


def _genai_parts(parts: list[Any]) -> tuple[str, list[ToolRequest]]:
    text, requests = [], []
    for part in parts:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "tool_call":
            requests.append(ToolRequest(part.get("id"), str(part.get("name")), _args(part)))
        elif part.get("type") == "text" and (written := _repr_message(part.get("content"))):
            said, asked = model_output(written)
            text.append(said)
            requests.extend(asked)
        elif part.get("type") == "text":
            text.append(str(part.get("content") or ""))
    return "".join(text), requests


def _repr_message(content: Any) -> Mapping[str, Any] | None:
    """A Chat Completions message written as its Python repr in a text part, as the Agents
    SDK's OTel bridge (``opentelemetry-instrumentation-openai-agents-v2``) writes a turn
    that called tools: ``"{'content': None, 'role': 'assistant', 'tool_calls': [...]}"``;
    in a streamed run, every turn as the repr of its Responses object (``{'id': ...,
    'object': 'response', 'output': [...]}``)."""
    if not (isinstance(content, str) and content.startswith("{'")):
        return None
    if "'role': " not in content and "'object': 'response'" not in content:
        return None
    try:
        message = ast.literal_eval(content)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not isinstance(message, Mapping):
        return None
    return message if "role" in message or message.get("object") == "response" else None


# -- facts → signals -----------------------------------------------------------------


def _iso(seconds: float) -> str:
    """``seconds`` as ``datetime.isoformat`` writes it in UTC to the microsecond (rounded
    half to even, as ``datetime.fromtimestamp`` does), with ``Z``: the date and time of
    the whole second are formatted once for all the signals that share it."""
    whole = math.floor(seconds)
    micros = round((seconds - whole) * 1e6)
    if micros == 1_000_000:
        whole, micros = whole + 1, 0
    return f"{_second(whole)}.{micros:06d}Z"


@functools.lru_cache(maxsize=4096)
def _second(whole: int) -> str:
    return _dt.datetime.fromtimestamp(whole, _dt.timezone.utc).isoformat()[:19]


class _Emitter:
    """Collects ``(time, order, signal)`` and hands them back sorted, with ids."""

    def __init__(self, timed: bool = True) -> None:
        self.rows: list[tuple[float, int, Signal]] = []
        self.timed = timed

    def emit(
        self,
        at: float,
        name: str,
        payload: Any,
        agent: str | None = None,
        parent: Signal | None = None,
    ) -> Signal:
        signal = Signal(name, payload, timestamp=_iso(at) if self.timed else None, agent=agent)
        if parent is not None:
            signal.extra = {"_parent": parent}
        self.rows.append((at, len(self.rows), signal))
        return signal

    def signals(self) -> list[Signal]:
        ordered = [row[2] for row in sorted(self.rows, key=lambda row: (row[0], row[1]))]
        for number, signal in enumerate(ordered, 1):
            signal.id = f"imp_{number}"
        for signal in ordered:
            if signal.extra is not None:
                signal.parent = signal.extra.pop("_parent").id
                signal.extra = None
        return ordered


LOOKBACK = 64  # model calls searched back for a run's request: a tool runs soon after


def _link_turns(facts: Facts) -> dict[int, tuple[ModelCall, int]]:
    """Each tool run → ``(the model call that requested it, its emission index)``.

    A run is matched to the latest earlier model call of the same agent (else of any)
    that requested a call with its id, else its name and arguments, else its name
    (first unclaimed). Calls are found by bisection, so long traces stay linear.
    """
    calls = sorted((s for s in facts.steps if isinstance(s, ModelCall)), key=lambda c: c.start)
    by_agent: dict[str | None, list[ModelCall]] = {}
    for call in calls:
        by_agent.setdefault(call.agent, []).append(call)
    starts = {agent: [c.start for c in group] for agent, group in by_agent.items()}
    all_starts = [c.start for c in calls]
    claimed: set[tuple[int, int]] = set()
    links: dict[int, tuple[ModelCall, int]] = {}
    fallback_count: dict[int, int] = {}
    runs = sorted((s for s in facts.steps if isinstance(s, ToolRun)), key=lambda r: r.start)
    for run in runs:
        group = by_agent.get(run.agent)
        if group:
            before = bisect.bisect_right(starts[run.agent], run.start)
            candidates = group[max(0, before - LOOKBACK) : before]
        else:
            candidates = []
        if not candidates:
            before = bisect.bisect_right(all_starts, run.start)
            candidates = calls[max(0, before - LOOKBACK) : before]
        for call in reversed(candidates):
            index = _match_request(call, run, claimed)
            if index is not None:
                claimed.add((id(call), index))
                links[id(run)] = (call, index)
                request = call.requests[index]
                if run.id is None:
                    run.id = request.id
                if isinstance(request.input, Mapping) and not isinstance(run.input, Mapping):
                    run.input = request.input  # what the model asked, not what a tool got
                break
        else:  # the model's requests are unreadable: the turn is the call just before
            if candidates and not candidates[-1].requests:
                turn = candidates[-1]
                index = fallback_count.get(id(turn), 0)
                fallback_count[id(turn)] = index + 1
                links[id(run)] = (turn, index)
        if run.id is None:
            run.id = run.span_id
    return links


def _match_request(call: ModelCall, run: ToolRun, claimed: set[tuple[int, int]]) -> int | None:
    free = [(i, r) for i, r in enumerate(call.requests) if (id(call), i) not in claimed]
    tests: list[Callable[[ToolRequest], bool]] = [
        lambda r: run.id is not None and r.id == run.id,
        lambda r: r.name == run.name and r.input == run.input,
        lambda r: r.name == run.name,
    ]
    for test in tests:
        for index, request in free:
            if test(request):
                return index
    return None


def _handoff_target(name: str) -> str | None:
    for prefix in HANDOFF_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix) :]
    return None


def to_signals(facts: Facts) -> list[Signal]:
    """The signals of ``facts``, ordered by start time (ties keep the importer's order)."""
    out = _Emitter(facts.timed)
    steps = list(facts.steps)
    if facts.transfer_calls_are_handoffs:
        steps = _handoffs_from_transfers(steps)
    for step in steps:  # a transfer request is a handoff, no tool call the model waits on
        if isinstance(step, ModelCall):
            step.requests = [r for r in step.requests if not _handoff_target(r.name)]
    facts.steps = steps
    unmetered = sum(1 for s in steps if isinstance(s, ModelCall) and _unmetered(s))
    if unmetered:
        facts.gaps.add(USAGE_GAP.format(unmetered))
    redacted = sorted({s.name for s in steps if isinstance(s, ToolRun) and s.error == REDACTED})
    if redacted:
        facts.gaps.add(REDACTED_GAP.format(", ".join(redacted)))
    links = _link_turns(facts)
    starts = [s.start for s in steps]
    begin = facts.start if facts.start is not None else min(starts, default=0.0)
    ends = [getattr(s, "end", None) or s.start for s in steps]
    finish = facts.end if facts.end is not None else max(ends, default=begin)
    out.emit(begin, "harness:start", {"input": facts.input})
    # parallel runs of one response start in the order the model emitted them
    by_turn: dict[int, list[ToolRun]] = {}
    for step in steps:
        if isinstance(step, ToolRun) and id(step) in links:
            by_turn.setdefault(id(links[id(step)][0]), []).append(step)
    run_start: dict[int, float] = {}
    for runs in by_turn.values():
        times = sorted(r.start for r in runs)
        for run, at in zip(sorted(runs, key=lambda r: links[id(r)][1]), times, strict=True):
            run_start[id(run)] = at
    starts_of: dict[int, Signal] = {}
    last_text = ""
    for step in steps:
        if isinstance(step, AgentRun):
            activated = out.emit(step.start, "agent:activated", {"agent": step.name}, step.name)
            if step.error is not None:
                at = step.end if step.end is not None else step.start
                failure = {"agent": step.name, "error": step.error}
                out.emit(at, "agent:error", failure, step.name, activated)
        elif isinstance(step, ModelCall):
            start = out.emit(step.start, "provider:start", {"model": step.model}, step.agent)
            starts_of[id(step)] = start
            end_at = step.end if step.end is not None else step.start
            for chunk in step.deltas:
                out.emit(step.start, "text:delta", {"content": chunk}, step.agent, start)
            if step.error is not None:  # as a provider's own failed call says it
                refused = {"model": step.model, "error": step.error, "code": None}
                out.emit(end_at, "provider:error", refused, step.agent, start)
                continue
            end: dict[str, Any] = {
                "model": step.model,
                "usage": {
                    "inputTokens": step.input_tokens or 0,
                    "outputTokens": step.output_tokens or 0,
                },
            }
            if step.requests:
                end["toolCalls"] = [
                    {"id": r.id, "name": r.name, "input": r.input} for r in step.requests
                ]
            else:
                end["output"] = step.text
                last_text = step.text or last_text
            out.emit(end_at, "provider:end", end, step.agent, start)
        elif isinstance(step, ToolRun):
            _emit_tool(out, step, run_start.get(id(step), step.start), links, starts_of)
        elif isinstance(step, Handoff):
            payload = {"from": step.source, "to": step.target}
            out.emit(step.start, "agent:handoff", payload, step.source)
        else:
            out.emit(step.start, step.name, step.payload, step.agent)
    output = facts.output
    if output is None:  # a run that raised answered nothing: not the model's last text
        output = "" if stopped(steps) else last_text  # (nor, the trace's view, provider:end's)
    out.emit(finish, "text:complete", {"content": output})
    duration = max(0.0, (finish - begin) * 1000)
    out.emit(finish, "harness:end", {"durationMs": round(duration, 3)} if facts.timed else {})
    return out.signals()


def stopped(steps: list[Step]) -> bool:
    """The run raised, so it has no final answer: the agent run that ended last failed (an
    output guardrail's tripwire after the model's answer, max turns, a model error it gave
    up on, a node that raised). ``Runner.run`` raises there and the user never gets the
    text the model wrote last: the run's output is empty, as a live harness's that raises.
    An agent that failed inside another that went on (an agent used as a tool) is the
    other's step, not the run's end."""
    runs = [s for s in steps if isinstance(s, AgentRun)]
    if not runs:
        return False
    last = max(runs, key=lambda r: r.end if r.end is not None else r.start)
    return last.error is not None


def _emit_tool(
    out: _Emitter,
    run: ToolRun,
    at: float,
    links: dict[int, tuple[ModelCall, int]],
    starts_of: dict[int, Signal],
) -> None:
    link = links.get(id(run))
    turn = starts_of.get(id(link[0])) if link is not None else None
    call = out.emit(
        at, "tool:call", {"id": run.id, "name": run.name, "input": run.input}, run.agent, turn
    )
    result: dict[str, Any] = {"id": run.id, "name": run.name, "result": run.result}
    if run.error is not None:
        result["error"] = run.error or "tool failed"
    out.emit(
        max(at, run.end if run.end is not None else at), "tool:result", result, run.agent, call
    )


USAGE_GAP = (
    "{} of its model calls carry no token usage: their provider:end counts 0 tokens (a "
    "streamed call the provider was not asked for usage: LangChain's stream_usage=True, "
    "OpenAI's stream_options.include_usage, the Agents SDK's ModelSettings(include_usage=True))"
)


REDACTED = "Tool execution failed. Error details are redacted."
"""What the Agents SDK (0.24) records, in its export and so in every instrumentation of it,
as the error of a tool that raised under its default ``failure_error_function``."""
REDACTED_GAP = (
    "the Agents SDK redacted the error of {} (a tool that raised under its default "
    "failure_error_function: neither the model nor the trace is told why): the call "
    "reads as failed, with that text as its error; give the tool a failure_error_function "
    "to keep its error in the trace"
)


def _unmetered(call: ModelCall) -> bool:
    """No usage, or none but zeros (the Agents SDK's streamed Chat Completions without
    include_usage): no call a provider answered read no token."""
    return call.error is None and not call.input_tokens and not call.output_tokens


def _handoffs_from_transfers(steps: list[Step]) -> list[Step]:
    """``transfer_to_X`` calls are handoffs, not tool calls (LangGraph, OTel). A trace
    that records its handoffs as such (handoff spans) has said them already: its
    transfer calls are dropped, not counted twice. The agent handing off is the one whose
    model asked for the transfer: its result may be seen first in another node's output
    (a LangGraph node that hands off by a ``Command``, its parent graph's state). A
    transfer tool hands off by a ``Command(goto=X)``: a routed handoff to X after it is
    that same handoff, not another."""
    out: list[Step] = []
    ran = {s.id for s in steps if isinstance(s, ToolRun) and s.id}
    asked = {r.id: s for s in steps if isinstance(s, ModelCall) for r in s.requests if r.id}
    unnamed = _transfers_asked(steps, ran)
    recorded = any(isinstance(s, Handoff) and not s.routed for s in steps)
    for step in steps:
        if isinstance(step, ToolRun) and (target := _handoff_target(step.name)):
            if not recorded:
                by = asked.get(step.id) if step.id else unnamed.get(id(step))
                out.append(
                    Handoff(step.agent, target, step.start)
                    if by is None
                    else Handoff(by.agent, target, min(step.start, _ended(by)))
                )
            continue
        out.append(step)
        if isinstance(step, ModelCall) and not recorded:
            for request in step.requests:
                target = _handoff_target(request.name)
                if target and request.id not in ran:
                    out.append(Handoff(step.agent, target, _ended(step)))
    return _routed_once(out)


def routed_handoffs(
    steps: list[Step], node: str, start: float, end: float, targets: list[str]
) -> list[Handoff]:
    """The handoffs of a LangGraph node run (``node``, from ``start`` to ``end``) that
    returned ``Command(goto=...)`` to ``targets``: a multi-agent graph's handoff without a
    transfer tool, to each other node. A run whose model asked for a transfer handed off by
    that already: none."""
    asked = any(
        isinstance(s, ModelCall)
        and s.agent == node
        and start <= s.start <= end
        and any(_handoff_target(r.name) for r in s.requests)
        for s in steps
    )
    return [] if asked else [Handoff(node, t, end, routed=True) for t in targets if t != node]


def _routed_once(steps: list[Step]) -> list[Step]:
    """``steps`` without the routed handoffs an earlier transfer to their target made (the
    transfer tool's own ``Command``)."""
    said: dict[str, int] = {}
    repeats: set[int] = set()
    for step in sorted(steps, key=lambda s: s.start):
        if isinstance(step, Handoff) and not step.routed:
            said[step.target] = said.get(step.target, 0) + 1
        elif isinstance(step, Handoff) and said.get(step.target):
            said[step.target] -= 1
            repeats.add(id(step))
    return [s for s in steps if id(s) not in repeats]


def _transfers_asked(steps: list[Step], ran: set[Any]) -> dict[int, ModelCall]:
    """The model call that asked for each transfer run with no call id (OpenInference's
    LangChain tool span names none): the latest earlier request of its name not run yet,
    whose id now counts as run (the run and the request were one handoff, read as two)."""
    calls = [s for s in steps if isinstance(s, ModelCall)]
    found: dict[int, ModelCall] = {}
    for run in steps:
        if not isinstance(run, ToolRun) or run.id or not _handoff_target(run.name):
            continue
        for call in reversed([c for c in calls if c.start <= run.start]):
            request = next(
                (r for r in call.requests if r.name == run.name and r.id not in ran), None
            )
            if request is not None:
                ran.add(request.id)
                found[id(run)] = call
                break
    return found


def _ended(call: ModelCall) -> float:
    return call.end if call.end is not None else call.start
