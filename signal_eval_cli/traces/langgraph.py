"""LangGraph streams written as JSONL → :class:`Facts`.

Two shapes, one line per item, messages serialized by ``langchain_core.load.dumpd``
(``{"lc": 1, "kwargs": {...}}``) or ``model_dump()``:

- ``astream_events(version="v2")``: ``{"event": "on_chain_start", "name", "metadata":
  {"langgraph_node"}, "data", ...}``;
- ``astream(stream_mode=["values", "updates", "messages"])``: ``[mode, chunk]`` (or
  ``[namespace, mode, chunk]`` with subgraphs);
- ``astream`` in one mode, as most code streams: ``stream_mode="updates"`` writes
  ``{node: update}``, ``"values"`` (the default) the whole state, ``"messages"``
  ``[message, metadata]`` (a model's tokens as chunks, merged back into its call)
  (``[namespace, chunk]`` with subgraphs). Updates and messages hold no input; values
  do not say which node ran.

All give the same facts, minus what their shape lacks (warned as a gap): a node run is an agent activation; model calls and tool
results come from the messages the nodes return (a ``ToolMessage`` with
``status: "error"``, as ``ToolNode(handle_tool_errors=True)`` writes, is a failed call);
a ``transfer_to_X`` call is a handoff. Lines carry no clock: line order is time.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from signal_eval_cli.traces.mapping import (
    HANDOFF_PREFIXES,
    AgentRun,
    Facts,
    ModelCall,
    Other,
    ToolRun,
    as_mapping,
    model_output,
    parse_arguments,
    routed_handoffs,
)
from signal_eval_cli.traces.source import TraceFormatError

__all__ = [
    "LangGraphReader",
    "command_goto",
    "handed_back",
    "looks_like_events",
    "looks_like_stream",
    "looks_like_task_updates",
    "message",
]

STREAM_MODES = frozenset(
    {"values", "updates", "messages", "custom", "debug", "tasks", "checkpoints"}
)


def looks_like_events(first: Any) -> bool:
    return isinstance(first, Mapping) and str(first.get("event", "")).startswith("on_")


def looks_like_stream(first: Any) -> bool:
    return (
        isinstance(first, list)
        and len(first) in (2, 3)
        and isinstance(first[-2], str)
        and first[-2] in STREAM_MODES
    )


def _one_mode_chunk(item: Any) -> Any:
    """The chunk of a one-mode ``astream`` line: the line, or its second half after a
    subgraph namespace (``[["node:task"], chunk]``)."""
    if isinstance(item, list) and len(item) == 2 and isinstance(item[0], list):
        return item[1]
    return item


def looks_like_messages(first: Any) -> bool:
    """``[message, metadata]``: ``astream(stream_mode="messages")``."""
    pair = _one_mode_chunk(first)
    return (
        isinstance(pair, list)
        and len(pair) == 2
        and message(pair[0]) is not None
        and isinstance(pair[1], Mapping)
    )


def looks_like_tasks(first: Any) -> bool:
    """A task's start (``{id, name, input, triggers}``) or result (``{id, name, error,
    result, interrupts}``): ``astream(stream_mode="tasks")``."""
    chunk = _one_mode_chunk(first)
    return (
        isinstance(chunk, Mapping)
        and "id" in chunk
        and isinstance(chunk.get("name"), str)
        and ("triggers" in chunk or {"result", "interrupts"} <= chunk.keys())
    )


def looks_like_debug(first: Any) -> bool:
    """``{step, timestamp, type, payload}``: ``astream(stream_mode="debug")``."""
    chunk = _one_mode_chunk(first)
    return (
        isinstance(chunk, Mapping)
        and {"step", "type", "payload"} <= chunk.keys()
        and chunk.get("type") in ("task", "task_result", "checkpoint")
    )


def looks_like_values(first: Any) -> bool:
    """A state with a ``messages`` list: ``astream(stream_mode="values")``."""
    chunk = _one_mode_chunk(first)
    return isinstance(chunk, Mapping) and isinstance(chunk.get("messages"), list)


def looks_like_updates(first: Any) -> bool:
    """``{node: update}``, every update an object (or null) and one with ``messages``, or
    every one null (a first node that only routes: ``Command(goto=...)`` updates nothing):
    ``astream(stream_mode="updates")`` (a graph without messages: name the format)."""
    chunk = _one_mode_chunk(first)
    updates = list(chunk.values()) if isinstance(chunk, Mapping) else []
    return (
        bool(updates)
        and all(isinstance(v, Mapping) or v is None for v in updates)
        and (all(v is None for v in updates) or any("messages" in as_mapping(v) for v in updates))
    )


def looks_like_task_updates(items: Iterable[Any]) -> bool:
    """The functional API's ``astream(stream_mode="updates")``: a line per ``@task`` run
    and, last, the ``@entrypoint``'s, each ``{name: what it returned}`` (text, a number, a
    list: no state update), so the first line alone says nothing. Every line is one such
    pair, some return is no object (a graph's update is one), and two names at least ran
    (tasks, then the entrypoint once, at the end): a values stream of a one-key state
    repeats its key."""
    names: list[str] = []
    returned_value = False
    for item in items:
        chunk = _one_mode_chunk(item)
        if not (isinstance(chunk, Mapping) and len(chunk) == 1):
            return False
        ((name, value),) = chunk.items()
        names.append(str(name))
        returned_value = returned_value or not (isinstance(value, Mapping) or value is None)
    return returned_value and len(set(names)) > 1 and names.count(names[-1]) == 1


TEXT_MESSAGES_GAP = (
    "its messages were written as text (json.dumps with default=str?), not as objects: "
    "model calls, tool calls and the answer are unknown; write them with "
    "langchain_core.load.dumpd or .model_dump()"
)
_NO_INPUT_GAP = (
    'astream(stream_mode="{}") holds no input: the trace\'s input is unknown '
    '(stream ["values", "updates", "messages"] or astream_events to keep it)'
)
UPDATES_GAP, MESSAGES_GAP = _NO_INPUT_GAP.format("updates"), _NO_INPUT_GAP.format("messages")
STREAM_INPUT_GAP = (
    'astream(stream_mode=[...]) without "values" holds no input: the trace\'s input is '
    'unknown (add "values" to the modes, or stream astream_events, to keep it)'
)
HANDED_BACK = "__is_handoff_back"  # langgraph-supervisor's mark on the messages it writes
UNFINISHED = "node {!r} never finished: the stream ends inside it"
STOPPED = "stopped: node {!r} raised {}"
INSIDE = "node {!r} never finished: node {!r} inside it did not"
UNFINISHED_GAP = (
    "the stream ends inside node {!r}, before the graph's end: the node raised (the "
    "exception ends astream_events) or the run was cut off; it is taken as failed"
)
UNANSWERED = "tool calls ({}) it ran were never answered: the stream ends before their results"
UNANSWERED_UNSURE_GAP = (
    "the stream ends with tool calls ({}) the model asked for and no result: a tool raised, "
    "the run was cut off, or the graph paused before its tools (an interrupt, which these "
    'stream modes do not show; add "updates" to see it); no agent is taken as failed'
)
UNANSWERED_GAP = (
    "the stream ends with tool calls ({}) the model asked for and no result, before the "
    "graph's end: a tool raised or the run was cut off; node {!r}, which ran the calls beside "
    "them, is taken as failed"
)
UNANSWERED_NODE_GAP = (
    "the stream ends with tool calls ({}) the model asked for and no result, before the "
    "graph's end: a tool raised or the run was cut off, in a node the stream does not name "
    "(it shows a node once it has returned); no agent is taken as failed"
)
VALUES_GAP = (
    'astream(stream_mode="values") does not say which node ran: no agent activations, '
    'and model and tool calls are not attributed to agents (stream ["values", "updates", '
    '"messages"] or astream_events to keep them)'
)


def message(value: Any) -> dict[str, Any] | None:
    """A serialized LangChain message as ``{type, content, ...}``, else None."""
    if not isinstance(value, Mapping):
        return None
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), Mapping):
        data = dict(value["kwargs"])
        data.setdefault("type", str((value.get("id") or ["?"])[-1]))
        return data
    if isinstance(value.get("type"), str) and "content" in value:
        return dict(value)
    fields = value.get("data")  # messages_to_dict's {"type", "data"} (OpenInference's JSON)
    if isinstance(value.get("type"), str) and isinstance(fields, Mapping) and "content" in fields:
        return {**fields, "type": value["type"]}
    return None


_KINDS = {"ai": "ai", "AIMessage": "ai", "tool": "tool", "ToolMessage": "tool"}
_USER_KINDS = frozenset({"human", "HumanMessage", "user"})


def _kind(msg: Mapping[str, Any]) -> str | None:
    return _KINDS.get(str(msg.get("type")))


def _message_key(msg: Mapping[str, Any]) -> str | None:
    """What tells a message repeated by later events from a new one: a tool result's
    call id (first: ``add_messages`` gives a message without an id one, so a subgraph's
    state repeats its tool results under ids they did not have when its ``ToolNode``
    returned them), else its id. A message with neither is always new (keying it by the
    ``id()`` of its dict made a later message whose dict reused a freed address count as
    seen)."""
    if _kind(msg) == "tool" and msg.get("tool_call_id"):
        return f"tool:{msg['tool_call_id']}"
    if msg.get("id"):
        return f"id:{msg['id']}"
    return None


def _input_of(state: Any) -> Any:
    """A run's input: the user's text in the input state's messages, or the whole state
    when it holds no messages (a graph that keeps its question in a field of its own); an
    input that is no state (a functional API ``@entrypoint``'s: any value) as it is."""
    if not isinstance(state, (Mapping, list)):
        return state
    messages = state.get("messages") if isinstance(state, Mapping) else state
    text = _user_text(messages)
    if text is None and isinstance(state, Mapping) and "messages" not in state:
        return dict(state)
    return text


def _user_text(messages: Any) -> str | None:
    for item in messages if isinstance(messages, list) else []:
        if isinstance(item, (list, tuple)) and len(item) == 2 and item[0] in ("user", "human"):
            return str(item[1])
        msg = message(item)
        if msg is not None and msg.get("type") in _USER_KINDS:
            text, _ = model_output({"role": "user", "content": msg.get("content")})
            return text
        if isinstance(item, Mapping) and item.get("role") == "user":
            return str(item.get("content"))
    return None


def _error_text(error: Any) -> str | None:
    """An exception as an event holds it: ``dumpd``'s ``{"repr": ...}``, else its text."""
    if isinstance(error, Mapping) and isinstance(error.get("repr"), str):
        return str(error["repr"])
    return None if error is None or error == "" else str(error)


def _is_task(mode: str, chunk: Any) -> bool:
    """A ``"tasks"`` item, or a ``"debug"`` one about a task (not a checkpoint)."""
    if mode == "debug":
        return as_mapping(chunk).get("type") in ("task", "task_result")
    return mode == "tasks" and isinstance(chunk, Mapping)


def _task_mode(item: Mapping[str, Any]) -> str:
    return "langgraph:debug" if "payload" in item else "langgraph:tasks"


def _is_transfer(name: str) -> bool:
    return name.startswith(HANDOFF_PREFIXES)


def _run_of(event: Mapping[str, Any]) -> str:
    """Which node run an event belongs to: its ``run_id`` (as text, whatever a file holds
    there), else its node's name."""
    run_id = event.get("run_id")
    return (
        str(run_id) if run_id else f"node:{as_mapping(event.get('metadata')).get('langgraph_node')}"
    )


class LangGraphReader:
    """Accumulates node runs and returned messages; line numbers stand for time."""

    def __init__(self) -> None:
        self.facts = Facts(transfer_calls_are_handoffs=True, timed=False)
        self.requested: dict[str, Any] = {}  # tool call id -> arguments the model gave
        self.seen: set[str] = set()  # message ids already turned into facts
        self.deltas: dict[str | None, list[str]] = {}  # node -> streamed chunks not yet claimed
        self.values_seen = 0  # messages in the last state of a values stream
        self.streamed: dict[Any, _Streamed] = {}  # model messages being streamed, by id
        self.tasks_seen: set[tuple[Any, Any, Any]] = set()  # (node, step, task) of "messages"
        self.answers: dict[str, list[tuple[float, dict[str, Any]]]] = {}  # node -> model ends
        self.step: tuple[Any, Any] = (None, None)  # the node run the last message came from
        self.clock = 0.0
        self.running: dict[str, AgentRun] = {}  # node runs started, not yet ended (by run id)
        self.raised: dict[str, ToolRun] = {}  # tool runs that raised, by call id, unreturned
        self.raised_in: dict[str, str] = {}  # run id -> the error of a tool that raised in it
        self.within: dict[str, set[str]] = {}  # node run id -> the runs it ran inside
        self.tool_ends: dict[str, list[tuple[float, Mapping[str, Any]]]] = {}  # run id -> ends
        self.ended = False  # the graph's own end was seen (astream_events)
        self.shows_interrupts = False  # events or "updates": an interrupt() would be seen
        self.updated = False  # a multi-mode stream has "updates" (the nodes' own messages)
        self.held: list[tuple[float, Any]] = []  # its "messages" items, read if it has not
        self.updated_at: dict[str, list[float]] = {}  # node -> when its updates came
        self.tasks: list[tuple[float, Any, Any]] = []  # its "tasks" (and debug) items and
        # their subgraph namespaces, likewise
        self.paused = False  # an interrupt() paused the graph: it waits, it did not fail
        self.handing_back: dict[str, str | None] = {}  # transfer call id -> agent handing back
        self.named: list[tuple[ModelCall, str]] = []  # calls whose message names its agent
        self.returned: str | None = None  # the text the last update returned (an entrypoint's)

    def tick(self) -> float:
        self.clock += 1.0
        return self.clock

    # -- shared: what a node returned ------------------------------------------------

    def _first_time(self, msg: Mapping[str, Any]) -> bool:
        """Whether ``msg`` is met for the first time (and remember it: :func:`_message_key`)."""
        key = _message_key(msg)
        if key is None:
            return True
        if key in self.seen:
            return False
        self.seen.add(key)
        return True

    def node_output(self, node: str | None, output: Any, at: float) -> None:
        """The messages a node returned (``node`` None: a state of unknown provenance)."""
        messages = output.get("messages") if isinstance(output, Mapping) else None
        if isinstance(messages, Mapping) or messages is None:
            messages = [messages] if messages is not None else []
        for raw in messages if isinstance(messages, list) else []:
            msg = message(raw)
            if msg is None:
                if isinstance(raw, str):
                    self.facts.gaps.add(TEXT_MESSAGES_GAP)
                continue
            if not self._first_time(msg):
                continue
            kind = _kind(msg)
            if kind == "ai":
                self._model_call(node, msg, at)
            elif kind == "tool":
                self._tool_result(node, msg, at)

    def _model_call(self, node: str | None, msg: Mapping[str, Any], at: float) -> None:
        """An AI message a node returned: a model's call. langgraph-supervisor writes one
        itself when an agent hands back (``__is_handoff_back``, ``"Transferring back to
        supervisor"``): no model's, but the transfer its tool message completes, by the
        agent the message names."""
        text, requests = model_output({**msg, "role": "assistant"})
        for request in requests:
            self.requested[str(request.id)] = request.input
        if as_mapping(msg.get("response_metadata")).get(HANDED_BACK):
            by = msg.get("name") if isinstance(msg.get("name"), str) else node
            self.handing_back.update((str(r.id), by) for r in requests)
            return
        usage = as_mapping(msg.get("usage_metadata"))
        metadata = msg.get("response_metadata")
        model = metadata.get("model_name") if isinstance(metadata, Mapping) else None
        call = ModelCall(
            model,
            at,
            at,
            node,
            usage.get("input_tokens"),
            usage.get("output_tokens"),
            text,
            requests,
            self.deltas.pop(node, []),
        )
        if isinstance(msg.get("name"), str) and msg["name"] != node:
            self.named.append((call, msg["name"]))
        self.facts.steps.append(call)
        if not requests and text:
            self.facts.output = text

    def _tool_result(self, node: str | None, msg: Mapping[str, Any], at: float) -> None:
        call_id = msg.get("tool_call_id")
        node = self.handing_back.get(str(call_id), node)
        content = msg.get("content")
        result = (
            content
            if isinstance(content, str)
            else model_output({"role": "tool", "content": content})[0]
        )
        error = None
        if msg.get("status") == "error":  # ToolNode writes "Error: <repr>\n Please fix ..."
            error = result.split("\n", 1)[0].removeprefix("Error: ").strip() or "tool failed"
        self.raised.pop(str(call_id), None)  # its on_tool_error, said by the message
        self.facts.steps.append(
            ToolRun(
                str(msg.get("name")),
                self.requested.get(str(call_id)),
                at,
                at,
                node,
                id=call_id,
                result=result,
                error=error,
            )
        )

    def node_start(self, node: str, at: float) -> AgentRun | None:
        if node.startswith("__"):
            return None
        run = AgentRun(node, at, at)
        self.facts.steps.append(run)
        return run

    # -- astream_events v2 ----------------------------------------------------------------

    def event(self, event: Any) -> None:
        if not isinstance(event, Mapping) or not isinstance(event.get("event"), str):
            raise TraceFormatError("not an astream_events record (no 'event')")
        at = self.tick()
        self.shows_interrupts = True
        kind, name = event["event"], event.get("name")
        metadata, data = as_mapping(event.get("metadata")), as_mapping(event.get("data"))
        node = metadata.get("langgraph_node")
        is_node = isinstance(node, str) and name == node
        if kind == "on_chain_start":
            if not event.get("parent_ids") and self.facts.input is None:
                self.facts.input = _input_of(data.get("input"))
                self.facts.start = at
            elif (
                is_node
                and not self._same_run(str(node), event)
                and (run := self.node_start(str(node), at)) is not None
            ):
                self.running[_run_of(event)] = run
                parents = event.get("parent_ids")
                self.within[_run_of(event)] = {str(p) for p in parents or ()}
        elif kind == "on_chain_error" and is_node:
            run = self.running.pop(_run_of(event), None)
            if run is not None:
                run.end, run.error = at, _error_text(data.get("error")) or "the node raised"
        elif kind == "on_tool_error":
            self._tool_raised(event, data, at)
        elif kind == "on_tool_end":
            self._tool_ended(event, at)
        elif kind == "on_chain_end":
            if is_node:
                run = self.running.pop(_run_of(event), None)
                self._unreturned_answers(str(node), data.get("output"))
                self.node_output(str(node), data.get("output"), at)
                self._unreturned_tools(str(node), _run_of(event))
                if run is not None:
                    goto = command_goto(data.get("output"))
                    self.facts.steps += routed_handoffs(
                        self.facts.steps, run.name, run.start, at, goto
                    )
            elif not event.get("parent_ids"):
                self.facts.end = at
                self.ended = True
        elif kind == "on_chain_stream" and not event.get("parent_ids"):
            self._interrupts(as_mapping(data.get("chunk")), at)
        elif kind == "on_chat_model_end":
            answer = message(data.get("output"))
            if answer is not None and isinstance(node, str):
                self.answers.setdefault(node, []).append((at, {**answer, "type": "ai"}))
        elif kind == "on_chat_model_stream":
            chunk = message(data.get("chunk"))
            content = chunk.get("content") if chunk else None
            if isinstance(content, str) and content and isinstance(node, str):
                self.deltas.setdefault(node, []).append(content)
        elif kind not in _KNOWN_EVENTS:
            self.facts.steps.append(
                Other(f"langgraph:{kind}", {"name": name, "data": data}, at, node)
            )

    def _same_run(self, node: str, event: Mapping[str, Any]) -> bool:
        """Whether a node's start is a graph named as the node running inside its run (a
        prebuilt agent, ``create_react_agent(name=...)``, that is a node of a supervisor's
        or swarm's graph): the same node run, not a second one."""
        parents = event.get("parent_ids")
        return any(
            (run := self.running.get(str(p))) is not None and run.name == node
            for p in (parents if isinstance(parents, list) else ())
        )

    def _tool_raised(self, event: Mapping[str, Any], data: Mapping[str, Any], at: float) -> None:
        """A tool that raised (``on_tool_error``): a failed call, unless its node returns
        it as a message (``ToolNode(handle_tool_errors=True)``); the node it raised in
        (its run among the event's parents) has its error, should the stream end there."""
        call_id = data.get("tool_call_id") or event.get("run_id")
        error = _error_text(data.get("error")) or "tool failed"
        node = as_mapping(event.get("metadata")).get("langgraph_node")
        input = self.requested.get(str(call_id), data.get("input"))
        run = ToolRun(str(event.get("name")), input, at, at, node, id=call_id, error=error)
        self.raised[str(call_id)] = run
        parents = event.get("parent_ids")
        for parent in parents if isinstance(parents, list) else []:
            self.raised_in.setdefault(str(parent), error)

    def _tool_ended(self, event: Mapping[str, Any], at: float) -> None:
        """A tool's ``on_tool_end``, kept by the node run it ran in until that node ends."""
        parents = event.get("parent_ids")
        inside = (
            [str(p) for p in parents if str(p) in self.running] if isinstance(parents, list) else []
        )
        if inside:
            self.tool_ends.setdefault(inside[-1], []).append((at, event))

    def _unreturned_tools(self, node: str, run: str) -> None:
        """The tools a node ran whose results it returned in no ``ToolMessage`` (a node
        that calls a tool itself and keeps the result in a field of its own): tool runs
        from their ``on_tool_end``. A result a message returned counts once."""
        for at, event in self.tool_ends.pop(run, []):
            data = as_mapping(event.get("data"))
            output = data.get("output")
            msg = message(output)
            if msg is not None and _kind(msg) == "tool":
                if self._first_time(msg):
                    self._tool_result(node, msg, at)
                continue
            name, input = str(event.get("name")), data.get("input")
            run_id = str(event.get("run_id") or "") or None  # its id: no model named the call
            self.facts.steps.append(
                ToolRun(name, input, at, at, node, result=output, span_id=run_id)
            )

    def _interrupts(self, chunk: Mapping[str, Any], at: float) -> None:
        """``interrupt()`` paused the graph for a human: kept as ``langgraph:interrupt``."""
        if "__interrupt__" in chunk:
            self.paused = True
            self.facts.steps.append(Other("langgraph:interrupt", chunk["__interrupt__"], at))

    def _unreturned_answers(self, node: str, output: Any) -> None:
        """The model calls of a node that returns no AI message (a state without
        ``messages``: it keeps the answer's text in a field of its own) are read from
        its chat models' ends; a node that returns its AI messages is read from those."""
        answers = self.answers.pop(node, [])
        messages = output.get("messages") if isinstance(output, Mapping) else None
        returned = messages if isinstance(messages, list) else [messages]
        if any(_kind(m) == "ai" for m in map(message, returned) if m is not None):
            return
        for at, answer in answers:
            if self._first_time(answer):  # a parent graph's state repeats it: one call
                self._model_call(node, answer, at)

    # -- astream multi-mode ------------------------------------------------------------------

    def stream_item(self, item: Any) -> None:
        if not looks_like_stream(item):
            raise TraceFormatError("not an astream record ([mode, chunk])")
        at = self.tick()
        mode, chunk = item[-2], item[-1]
        if mode in ("updates", "messages") and self.facts.start is None:
            self.facts.gaps.add(STREAM_INPUT_GAP)  # no values line first: no input
        if mode == "values":
            if self.facts.input is None and isinstance(chunk, Mapping):
                self.facts.input = _input_of(chunk)
                self.facts.start = at
            self.facts.end = at
        elif mode == "updates":
            self.updated = True
            self._updates(chunk, at)
        elif mode == "messages":
            piece, metadata = [*chunk, None, None][:2] if isinstance(chunk, list) else [None, None]
            msg = message(piece)
            node = metadata.get("langgraph_node") if isinstance(metadata, Mapping) else None
            content = msg.get("content") if msg else None
            is_chunk = msg is not None and str(msg.get("type")).endswith("Chunk")
            if is_chunk and isinstance(content, str) and content and isinstance(node, str):
                self.deltas.setdefault(node, []).append(content)
            if looks_like_messages(chunk):
                self.held.append((at, chunk))
        elif _is_task(mode, chunk):
            self.tasks.append((at, chunk, item[0] if len(item) == 3 else None))
        else:
            self.facts.steps.append(Other(f"langgraph:{mode}", chunk, at))

    def _updates(self, chunk: Any, at: float) -> None:
        """``{node: update}``: each node that ran and what it returned. A functional API
        ``@entrypoint`` returns last: the text it returned is the run's answer."""
        self.shows_interrupts = True
        self._interrupts(as_mapping(chunk), at)
        for node, output in (chunk or {}).items() if isinstance(chunk, Mapping) else []:
            if str(node).startswith("__"):
                continue
            self.updated_at.setdefault(str(node), []).append(at)
            self.node_start(str(node), at)
            self.node_output(str(node), output, at)
            self.returned = output if isinstance(output, str) else None

    # -- astream in one mode -------------------------------------------------------------------

    def updates_item(self, item: Any) -> None:
        chunk = _one_mode_chunk(item)
        if not isinstance(chunk, Mapping):
            raise TraceFormatError('not an astream(stream_mode="updates") record ({node: update})')
        if self.facts.input is None:
            self.facts.gaps.add(UPDATES_GAP)
        self._updates(chunk, self.tick())

    def tasks_item(self, item: Any) -> None:
        """A one-mode ``"tasks"`` (or ``"debug"``) item: node runs, read at the end."""
        chunk = _one_mode_chunk(item)
        if not (looks_like_tasks(chunk) or looks_like_debug(chunk)):
            raise TraceFormatError(
                'not an astream(stream_mode="tasks" or "debug") record (a task or its result)'
            )
        mode = "debug" if "payload" in chunk else "tasks"
        self.stream_item([item[0], mode, chunk] if chunk is not item else [mode, chunk])

    def messages_item(self, item: Any) -> None:
        """``[message, metadata]``: a model's streamed chunks, merged per message id into
        the call they make up, and the whole messages a node returned (tool results)."""
        pair = _one_mode_chunk(item)
        if not looks_like_messages(pair):
            raise TraceFormatError(
                'not an astream(stream_mode="messages") record ([message, metadata])'
            )
        at = self.tick()
        if self.facts.start is None:
            self.facts.start = at
            self.facts.gaps.add(MESSAGES_GAP)
        self.facts.end = at
        self._message(pair, at)

    def _message(self, pair: list[Any], at: float, runs: bool = True) -> None:
        """One ``"messages"`` item. A node run is a task: the parallel tasks of a step
        (nodes a step's edges start together, a ``Send`` fan-out's runs of one node, each
        its own ``langgraph_checkpoint_ns``) are runs of their own, and their chunks,
        interleaved, are merged per message id until the step ends. ``runs``: whether
        the items say which nodes ran (not when ``"updates"`` said it)."""
        msg, metadata = message(pair[0]) or {}, as_mapping(pair[1])
        node = metadata.get("langgraph_node")
        node = node if isinstance(node, str) else None
        namespace = str(metadata.get("langgraph_checkpoint_ns") or "")
        step = (namespace.rpartition("|")[0], metadata.get("langgraph_step"))  # the graph's
        task = (node, metadata.get("langgraph_step"), namespace)
        if node is not None and step != self.step:
            self.finish()
            self.step = step
        if runs and node is not None and task not in self.tasks_seen:
            self.tasks_seen.add(task)
            self.node_start(node, at)
        if str(msg.get("type")).endswith("Chunk"):
            streamed = self.streamed.get(msg.get("id"))
            if streamed is None:
                streamed = self.streamed[msg.get("id")] = _Streamed(node, msg.get("id"), at)
            streamed.add(msg)
        else:
            self.finish()
            self.node_output(node, {"messages": [msg]}, at)

    def close(self, error: str | None = None, raised: Sequence[str] = ()) -> None:
        """At the end of the stream: what is still open is finished. A node that started and
        never ended, in a graph that never ended, is where the run stopped: the node raised
        (``astream_events`` records no error, the exception ends the stream) or the run was
        cut off. Either way it did not complete: an ``agent:error``, with the ``error`` that
        ended the stream when it is known (a live run; a tool's ``on_tool_error`` in the
        node), else a gap saying it was cut. The nodes the error is known to have ``raised``
        through (innermost first) have it; a node running beside them was stopped by it
        (LangGraph cancels it), it did not raise it. A stream that ends with a model's tool
        calls unanswered, with no end of its own, was cut there too (:meth:`_unanswered`).
        A multi-mode stream without ``"updates"`` (``["messages", "custom"]``, as chat UIs
        stream) has its model calls and tool results in its ``"messages"`` items: read now."""
        if self.updated:  # the nodes' runs are read from "updates": the tasks are kept,
            self.facts.steps += [Other(_task_mode(t), t, at) for at, t, _ in self.tasks]
            for at, pair in self.held:  # and the messages no update returned (a functional
                key = _message_key(message(pair[0]) or {})  # API task returns text) read
                if key is None or key not in self.seen:  # where their node's update says
                    node = as_mapping(pair[1]).get("langgraph_node")  # it ran
                    ends = self.updated_at.get(str(node), [])
                    self._message(pair, next((t for t in ends if t >= at), at), runs=False)
        elif self.tasks:
            self._task_runs()
        else:
            for at, pair in self.held:
                self._message(pair, at)
        self.held.clear()
        self.tasks.clear()
        self.finish()
        if self.returned is not None:
            self.facts.output = self.returned
        self._named_agents()
        if self.facts.end is not None:  # the last state may come before the last steps
            self.facts.end = max(self.facts.end, self.clock if self.facts.steps else 0.0)
        self.facts.steps.extend(self.raised.values())  # no message returned their error
        self.raised.clear()
        if self.facts.end is None:
            self._unfinished(error, raised)
        if not self.ended and not self.paused:
            self._unanswered()

    def _named_agents(self) -> None:
        """A model call in a subgraph's node (the ``agent`` node of a prebuilt react agent
        that is a node of a supervisor's or swarm's graph) is the call of the agent its
        message names (``create_react_agent(name=...)``), when that agent is a node the
        run ran: the node running the subgraph, as a stream without subgraphs says (its
        transfer calls are that agent's handoffs). A name that is no node (a react agent
        that is the whole graph) leaves the call its node's."""
        nodes = {s.name for s in self.facts.steps if isinstance(s, AgentRun)}
        for call, name in self.named:
            if name in nodes:
                call.agent = name
        self.named.clear()

    def _task_runs(self) -> None:
        """A stream's ``"tasks"`` items (``"debug"``'s ``task``/``task_result`` payloads):
        each node run's start, then its result (what it returned) or its error. A task in
        a subgraph (``subgraphs=True``) whose result never came while the node running
        that subgraph returned was ended with it, not cut: a tool that hands off by
        ``Command(graph=Command.PARENT)`` (langgraph-supervisor's, langgraph-swarm's)
        leaves its subgraph at once."""
        started: dict[Any, tuple[AgentRun, Any, Any]] = {}
        ended: dict[str, float] = {}  # task id -> when its result came
        for at, item, namespace in self.tasks:
            task = as_mapping(item.get("payload")) if "payload" in item else item
            name = str(task.get("name"))
            if "result" not in task and "error" not in task:
                if self.facts.input is None and not _sent(task):  # the state the first
                    self.facts.input = _input_of(task.get("input"))  # node was given
                if (run := self.node_start(name, at)) is not None:
                    started[task.get("id")] = (run, task.get("input"), namespace)
                continue
            ended[str(task.get("id"))] = at
            began = started.pop(task.get("id"), None)
            error = _error_text(task.get("error"))
            if began is not None:
                began[0].end, began[0].error = at, error
            input = began[1] if began is not None else None
            call = as_mapping(as_mapping(input).get("tool_call"))  # a ToolNode task of one call
            if error is not None and call.get("name"):
                raised = ToolRun(
                    str(call["name"]), call.get("args"), at, at, name, id=call.get("id")
                )
                raised.error = error
                self.facts.steps.append(raised)
            result = task.get("result")
            if isinstance(result, list):  # [[channel, value], ...]: the writes of older versions
                result = {
                    k: v for k, v in (w for w in result if isinstance(w, list) and len(w) == 2)
                }
            self.node_output(name, result, at)
        for run, _, namespace in started.values():
            enclosing = _enclosing_task(namespace)
            if enclosing in ended:  # ended with the node running its subgraph
                run.end = ended[enclosing]
                continue
            run.end, run.error = (
                self.clock,
                UNFINISHED.format(run.name),
            )  # the stream ends inside it
            self.facts.gaps.add(UNFINISHED_GAP.format(run.name))

    def _unfinished(self, error: str | None, raised: Sequence[str]) -> None:
        failed = {key: self.raised_in[key] for key in self.running if key in self.raised_in}
        known = next(((self.running[k].name, e) for k, e in failed.items()), None)
        inner = {o: k for k in self.running for o in self.within.get(k, ()) if o in self.running}
        for key, run in self.running.items():
            run.end = self.clock
            if error is None and key in failed:
                run.error = failed[key]  # a tool raised in it
            elif error is None and known is not None:
                run.error = STOPPED.format(*known)
            elif error is None and key in inner:  # a subgraph's node: where it stopped is inside
                run.error = INSIDE.format(run.name, self.running[inner[key]].name)
            elif error is None:
                run.error = UNFINISHED.format(run.name)
                self.facts.gaps.add(UNFINISHED_GAP.format(run.name))
            elif raised and run.name not in raised:
                run.error = STOPPED.format(raised[0], error)
            else:
                run.error = error
        self.running.clear()

    def _unanswered(self) -> None:
        """The last model call asked for tools whose results never came, and no node is
        known to have failed: the stream stops where they ran (a tool raised, or the run
        was cut off; ``astream`` records no error), unless the graph paused there
        (``interrupt_before=["tools"]``): a stream that would show an interrupt
        (``astream_events``, ``"updates"``) showed none; one that would not (``"values"``,
        ``"messages"`` alone) is only warned of. The node that asked returned its message:
        it finished (an update is written when its node ends). Where the calls ran, the
        calls beside them answered (the react agent's ``ToolNode`` runs each in a task of
        its own, one task's result written before another raised): that node did not
        finish; when none was answered the stream never named that node, and none fails."""
        steps = self.facts.steps
        if any(isinstance(s, AgentRun) and s.error for s in steps):
            return
        calls = [s for s in steps if isinstance(s, ModelCall)]
        answered = {s.id: s for s in steps if isinstance(s, ToolRun)}
        if not calls or steps.index(calls[-1]) < max(
            (i for i, s in enumerate(steps) if isinstance(s, ToolRun) and s.id is None), default=-1
        ):
            return
        requests = calls[-1].requests
        waiting = [r.name for r in requests if r.id not in answered]
        waiting = [name for name in waiting if not _is_transfer(name)]
        if not waiting:
            return
        names = ", ".join(waiting)
        if not self.shows_interrupts:
            self.facts.gaps.add(UNANSWERED_UNSURE_GAP.format(names))
            return
        beside = [answered[r.id].agent for r in requests if r.id in answered]
        node = next((n for n in beside if n is not None), None)
        if node is None:
            self.facts.gaps.add(UNANSWERED_NODE_GAP.format(names))
            return
        self.facts.gaps.add(UNANSWERED_GAP.format(names, node))
        for run in reversed(steps):
            if isinstance(run, AgentRun) and run.name == node:
                run.end, run.error = self.clock, UNANSWERED.format(names)
                break

    def finish(self) -> None:
        """The model calls whose chunks were being merged, now that they have all come."""
        streams, self.streamed = self.streamed, {}
        for streamed in streams.values():
            answer = streamed.message()
            self._first_time(answer)  # counted here, whatever repeats it later
            self.deltas[streamed.node] = streamed.pieces
            self._model_call(streamed.node, answer, streamed.at)

    def values_item(self, item: Any) -> None:
        """A whole state: the messages past those of the state before are new."""
        chunk = _one_mode_chunk(item)
        if not isinstance(chunk, Mapping):
            raise TraceFormatError('not an astream(stream_mode="values") record (a state)')
        at = self.tick()
        messages = chunk.get("messages")
        messages = messages if isinstance(messages, list) else []
        if self.facts.start is None:
            self.facts.input = _user_text(messages)
            self.facts.start = at
            self.facts.gaps.add(VALUES_GAP)
        self.facts.end = at
        self.node_output(None, {"messages": messages[self.values_seen :]}, at)
        self.values_seen = len(messages)


_GOTO = ", goto="  # the last field Command's repr writes (those set, in field order)
_SEND = re.compile(r"Send\(node='([^']+)'")


def command_goto(output: Any) -> list[str]:
    """The nodes a node's returned ``Command`` goes to: from the repr ``dumpd`` keeps of it
    (``{"id": [..., "Command"], "repr": "Command(update=..., goto='weather')"}``), or its
    fields as JSON (OpenInference's ``output.value``: ``{"graph", "update", "resume",
    "goto"}``); ``goto`` a name, names, or ``Send``s. The graph's end is no node."""
    if not isinstance(output, Mapping):
        return []
    if "goto" in output and output.keys() <= {"graph", "update", "resume", "goto"}:
        return _nodes(output["goto"])
    if list(output.get("id") or [])[-1:] != ["Command"]:
        return []
    text = str(output.get("repr") or "")
    text = text.replace("Command(goto=", "Command(" + _GOTO, 1)
    if _GOTO not in text or not text.endswith(")"):
        return []
    value = text[text.rindex(_GOTO) + len(_GOTO) : -1]
    try:
        return _nodes(ast.literal_eval(value))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _SEND.findall(value)


def _nodes(goto: Any) -> list[str]:
    """The node names of a ``goto``: a name, a ``Send`` (as JSON: ``{"node", "arg"}``), or
    a list of those."""
    items = goto if isinstance(goto, (list, tuple)) else [goto]
    names = [as_mapping(i).get("node") if isinstance(i, Mapping) else i for i in items]
    return [n for n in names if isinstance(n, str) and n and not n.startswith("__")]


def handed_back(output: Any) -> list[tuple[Any, str, Any]]:
    """``(agent, tool, call id)`` of each handoff back in the messages a node returned (or
    its ``Command`` updates): langgraph-supervisor writes an AI message of its own, marked
    ``__is_handoff_back`` and named as the agent handing back, whose one tool call is the
    ``transfer_back_to_<supervisor>`` it stands for."""
    state = output.get("update") if "goto" in as_mapping(output) else output
    messages = as_mapping(state).get("messages")
    found = []
    for msg in map(message, messages if isinstance(messages, list) else []):
        if msg is None or _kind(msg) != "ai":
            continue
        if not as_mapping(msg.get("response_metadata")).get(HANDED_BACK):
            continue
        _, requests = model_output({**msg, "role": "assistant"})
        found += [(msg.get("name"), r.name, r.id) for r in requests]
    return found


def _sent(task: Mapping[str, Any]) -> bool:
    """Whether a task is one a ``Send`` started (a fan-out's, a ``ToolNode`` call's): its
    input is what the ``Send`` carried, not the graph's state."""
    triggers = task.get("triggers")
    return isinstance(triggers, list) and "__pregel_push" in triggers


def _enclosing_task(namespace: Any) -> str | None:
    """The id of the task whose subgraph a namespace (``["node:<task id>", ...]``) is in."""
    if not isinstance(namespace, list) or not namespace:
        return None
    return str(namespace[-1]).rpartition(":")[2] or None


_KNOWN_EVENTS = frozenset(
    {
        "on_chain_start",
        "on_chain_end",
        "on_chain_stream",
        "on_chat_model_start",
        "on_chat_model_stream",
        "on_chat_model_end",
        "on_llm_start",
        "on_llm_stream",
        "on_llm_end",
        "on_tool_start",
        "on_tool_end",
        "on_tool_error",
        "on_chain_error",
    }
)


class _Streamed:
    """The chunks of one streamed model message, added up as LangChain adds them: text
    and tool-call arguments concatenated (calls by their ``index``), tokens summed."""

    def __init__(self, node: str | None, id: Any, at: float) -> None:
        self.node, self.id, self.at = node, id, at
        self.pieces: list[str] = []
        self.calls: dict[Any, dict[str, Any]] = {}
        self.tokens = {"input_tokens": 0, "output_tokens": 0}
        self.model: Any = None

    def add(self, chunk: Mapping[str, Any]) -> None:
        content = chunk.get("content")
        if isinstance(content, str) and content:
            self.pieces.append(content)
        for part in chunk.get("tool_call_chunks") or []:
            if not isinstance(part, Mapping):
                continue
            call = self.calls.setdefault(part.get("index"), {"name": "", "args": "", "id": None})
            call["name"] += str(part.get("name") or "")
            call["args"] += str(part.get("args") or "")
            call["id"] = call["id"] or part.get("id")
        usage = as_mapping(chunk.get("usage_metadata"))
        for key in self.tokens:
            if isinstance(usage.get(key), int):
                self.tokens[key] += usage[key]
        self.model = self.model or as_mapping(chunk.get("response_metadata")).get("model_name")

    def message(self) -> dict[str, Any]:
        return {
            "type": "ai",
            "id": self.id,
            "content": "".join(self.pieces),
            "tool_calls": [
                {"name": c["name"], "args": parse_arguments(c["args"] or "{}"), "id": c["id"]}
                for c in self.calls.values()
            ],
            "usage_metadata": self.tokens,
            "response_metadata": {"model_name": self.model},
        }
