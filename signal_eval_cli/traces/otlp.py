"""OTLP/JSON traces with OpenTelemetry GenAI (and OpenInference) attributes → :class:`Facts`.

``ExportTraceServiceRequest``: ``resourceSpans[].scopeSpans[].spans[]``, attributes as
``AnyValue``, int64 as strings, hex ids. The operation comes from
``gen_ai.operation.name`` (``chat``, ``invoke_agent``, ``execute_tool``, ...), else from
``openinference.span.kind`` (whose flattened messages :mod:`.openinference` reads). Old
and new attribute names are both read. An ``invoke_agent`` span's usage is the sum of its
calls: only model calls count tokens.
"""

from __future__ import annotations

import ast
import base64
import binascii
import re
from collections.abc import Iterator, Mapping
from typing import Any

from signal_eval_cli.errors import shorten
from signal_eval_cli.traces import logfire, traceloop, vercel_ai
from signal_eval_cli.traces.langgraph import command_goto, handed_back
from signal_eval_cli.traces.mapping import (
    AgentRun,
    Facts,
    Handoff,
    ModelCall,
    Other,
    ToolRun,
    as_mapping,
    model_output,
    note_input,
    note_traces,
    parse_arguments,
    routed_handoffs,
)
from signal_eval_cli.traces.openai_agents import error_text
from signal_eval_cli.traces.openinference import (
    chat_messages,
    handoff,
    langgraph_node,
    tool_output,
)
from signal_eval_cli.traces.otlp_encode import messages_from_events
from signal_eval_cli.traces.source import TraceFormatError

__all__ = ["camel_case", "decode_value", "facts_from_request", "looks_like", "spans_of"]

MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion"})
AGENT_OPERATIONS = frozenset({"invoke_agent"})
TOOL_OPERATIONS = frozenset({"execute_tool"})
HANDOFF_OPERATIONS = frozenset({"agent_handoff", "handoff"})
OPENINFERENCE_KINDS = {"LLM": "chat", "AGENT": "invoke_agent", "TOOL": "execute_tool"}

INPUT_TOKENS = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
)
OUTPUT_TOKENS = (
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
)
MODEL_KEYS = ("gen_ai.response.model", "gen_ai.request.model", "llm.model_name")
TOOL_NAME_KEYS = ("gen_ai.tool.name", "tool.name")
AGENT_NAME_KEYS = ("gen_ai.agent.name", "agent.name")
ARGUMENT_KEYS = ("gen_ai.tool.call.arguments", "input.value")  # not tool.parameters: a schema
RESULT_KEYS = ("gen_ai.tool.call.result", "output.value")
OUTPUT_KEYS = ("gen_ai.output.messages", "gen_ai.completion", "output.value")
INPUT_KEYS = ("gen_ai.input.messages", "gen_ai.prompt")
AGENT_INPUT_KEYS = ("pydantic_ai.all_messages",)  # an agent run's conversation (Pydantic AI)
AGENT_OUTPUT_KEYS = ("final_result",)  # its answer (Pydantic AI; an output_type's as JSON)


CONTENT_GAP = (
    "its model-call spans carry no messages (no gen_ai.output.messages): the final answer and "
    "tool calls (and the input, if no span has it) are unknown (opentelemetry-instrumentation-openai-v2 "
    "sends them as log records, which a trace file does not hold; set "
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (2.4: SPAN_ONLY) and write the "
    "Collector's logs pipeline to the same file, fold them in with "
    "otlp_encode.spans_to_otlp(spans, events), or run it live with the otel harness)"
)


UNREAD_GAP = (
    "none of its spans is a model call, tool run or agent run signal-eval reads (no "
    "gen_ai.operation.name, openinference.span.kind or the Vercel AI SDK's ai.operationId): "
    "they are kept as span:* signals, and model, tool and agent assertions find nothing"
)


REQUEST_KEYS = ("resourceSpans", "resourceLogs", "resource_spans", "resource_logs")


def looks_like(document: Any) -> bool:
    """An ``ExportTraceServiceRequest``, or an ``ExportLogsServiceRequest`` (a Collector
    writing its logs pipeline to the trace's file: the GenAI events of its model calls),
    in OTLP/JSON or with protobuf's field names (:func:`camel_case`)."""
    return isinstance(document, Mapping) and any(
        isinstance(document.get(key), list) for key in REQUEST_KEYS
    )


_UNDERSCORE = re.compile(r"_([a-z0-9])")


def camel_case(document: Any) -> Any:
    """A request as OTLP/JSON names its fields (``resourceSpans``, ``startTimeUnixNano``,
    ``stringValue``): protobuf's JSON with the proto field names
    (``MessageToJson(request, preserving_proto_field_name=True)``, ``MessageToDict``
    likewise) writes ``resource_spans``, ``start_time_unix_nano``, ``string_value``. Every
    key of a request is a field name (attribute names are values of ``key``)."""
    if not isinstance(document, Mapping) or not any(
        key in document for key in ("resource_spans", "resource_logs")
    ):
        return document
    return _camel(document)


def _camel(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {
            _UNDERSCORE.sub(lambda m: m.group(1).upper(), str(k)): _camel(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_camel(item) for item in value]
    return value


def decode_value(value: Any) -> Any:
    """An OTLP/JSON ``AnyValue`` as a Python value (a parsed JSON object: a ``dict``)."""
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [decode_value(v) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return _attributes((value["kvlistValue"] or {}).get("values"))
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def _attributes(items: Any) -> dict[str, Any]:
    """Attributes by key; one whose value no ``AnyValue`` reads (``{"intValue": "abc"}``)
    is a :class:`TraceFormatError` naming it, not a Python error about ``int()``."""
    if not isinstance(items, list):
        return {}
    decoded = {}
    for item in items:
        if isinstance(item, dict) and "key" in item:
            try:
                decoded[str(item["key"])] = decode_value(item.get("value"))
            except (TypeError, ValueError, AttributeError):
                value = shorten(repr(item.get("value")))
                message = f"attribute {str(item['key'])!r}: {value} is not a valid OTLP AnyValue"
                raise TraceFormatError(message) from None
    return decoded


_HEX_ID = re.compile(r"[0-9a-fA-F]{16}|[0-9a-fA-F]{32}")


def _hex_id(value: Any) -> str:
    """Span ids are hex in OTLP/JSON; protobuf's JSON mapping writes base64: accept both."""
    text = value if isinstance(value, str) else str(value or "")
    if _HEX_ID.fullmatch(text):
        return text.lower()
    try:
        return base64.b64decode(text, validate=True).hex() if text else ""
    except (binascii.Error, ValueError):
        return text


def spans_of(document: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for resource in document.get("resourceSpans") or []:
        if not isinstance(resource, Mapping):
            raise TraceFormatError("a resourceSpans entry is not an object")
        for scope in (
            resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or []
        ):
            if not isinstance(scope, Mapping):
                raise TraceFormatError("a scopeSpans entry is not an object")
            for span in scope.get("spans") or []:
                if not isinstance(span, Mapping):
                    raise TraceFormatError("a span is not an object")
                yield span


def log_events(document: Mapping[str, Any]) -> dict[str, list[tuple[str, Any, dict[str, Any]]]]:
    """``span id -> [(event name, body, attributes)]`` of a logs request's records."""
    events: dict[str, list[tuple[str, Any, dict[str, Any]]]] = {}
    for resource in document.get("resourceLogs") or []:
        for scope in as_mapping(resource).get("scopeLogs") or []:
            for record in as_mapping(scope).get("logRecords") or []:
                record = as_mapping(record)
                span = _hex_id(record.get("spanId"))
                fields = _attributes(record.get("attributes"))
                name = str(record.get("eventName") or fields.get("event.name") or "")
                if span:
                    events.setdefault(span, []).append(
                        (name, decode_value(record.get("body")), fields)
                    )
    return events


def _fold_events(attributes: dict[str, Any], events: list[tuple[str, Any, dict[str, Any]]]) -> None:
    """A model call's GenAI log events as its messages: the older conventions' event per
    message (``gen_ai.user.message``, ``gen_ai.choice``: their bodies), or the newer
    ``gen_ai.client.inference.operation.details`` record (the messages its attributes)."""
    inputs, outputs = messages_from_events((name, body) for name, body, _ in events)
    for _, _, fields in events:
        for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
            if fields.get(key) is not None:
                attributes.setdefault(key, fields[key])
    if inputs:
        attributes.setdefault("gen_ai.input.messages", inputs)
    if outputs:
        attributes.setdefault("gen_ai.output.messages", outputs)


LAST_NANOS = 253_402_300_799 * 10**9  # 9999-12-31T23:59:59Z: a timestamp can say no later


def _nanos(span: Mapping[str, Any], key: str, span_id: str) -> float | None:
    value = span.get(key)
    if value is None:
        return None
    try:
        nanos = int(value)
    except (TypeError, ValueError, OverflowError):
        digits = isinstance(value, str) and value.strip().lstrip("+-").isdigit()
        what = "is out of range" if digits else "is not an integer"  # 5,000 digits, say
        raise TraceFormatError(f"'{key}' {what}: {shorten(repr(value))}", span_id) from None
    if not 0 <= nanos <= LAST_NANOS:
        raise TraceFormatError(f"'{key}' is out of range: {shorten(repr(value))}", span_id)
    return nanos / 1e9


def _first(attributes: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = attributes.get(key)
        if value is not None:
            return value
    return None


def _messages(value: Any) -> Any:
    return parse_arguments(value) if isinstance(value, str) else value


BUBBLE_UPS = frozenset({"ParentCommand", "GraphInterrupt", "NodeInterrupt", "GraphBubbleUp"})
"""LangGraph's control flow raised through the spans it leaves (langgraph.errors): a
handoff's ``Command(graph=Command.PARENT)``, an ``interrupt()``; no failure."""


def _failed(span: Mapping[str, Any], attributes: Mapping[str, Any]) -> str | None:
    """Why the span failed: its status message, else the exception it recorded (an
    ``exception`` event, as the SDK's ``record_exception`` writes), else ``error.type``.
    A LangGraph bubble-up recorded as an error (OpenLLMetry's) is none."""
    status = as_mapping(span.get("status"))
    code = status.get("code")
    raised = str(_exception_field(span, "exception.type") or "").rpartition(".")[2]
    if raised in BUBBLE_UPS:
        return None
    if code in (2, "2", "STATUS_CODE_ERROR") or attributes.get("error.type"):
        message = _sdk_error(str(status.get("message") or "").split(TRACEBACK, 1)[0].strip())
        return str(message or _exception(span) or attributes.get("error.type") or "error")
    return None


_SDK_ERROR = re.compile(r"(?s)\{'message': .*\}|(?P<message>[A-Z][^{:]*): (?P<data>\{'.*\})")
"""The SDK's error as written: its repr, or its message then its data's repr. Each part
can match in one way only, so a long status message costs linear time (a message that
must hold a space, written into the pattern, cost a 30 KB one seconds)."""


def _sdk_error(message: str) -> str:
    """The Agents SDK's span error ``{message, data}`` written into a status message, as
    the instrumentations write it (OpenLLMetry: its repr, ``{'message': 'Max turns
    exceeded', 'data': {...}}``; the OTel bridge: ``Max turns exceeded: {'max_turns':
    2}``), read as the SDK's own export of it is (a tool's ``data.error``, else the
    message); any other message as it is."""
    found = _SDK_ERROR.fullmatch(message)
    if found is None or " " not in (found.group("message") or " "):
        return message  # a phrase (``Max turns exceeded``), not an exception's ``KeyError``
    try:
        data = ast.literal_eval(found.group("data") or message)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return message
    error = {"message": found.group("message"), "data": data} if found.group("data") else data
    return (error_text(error, message) if isinstance(error, Mapping) else None) or message


TRACEBACK = "Traceback (most recent call last):"
"""What OpenInference appends to a status message: the error is what comes before it."""


def _exception(span: Mapping[str, Any]) -> str | None:
    """``type: message`` of the span's last ``exception`` event, if it has one."""
    kind, message = (_exception_field(span, k) for k in ("exception.type", "exception.message"))
    return ": ".join(str(x) for x in (kind, message) if x) or None


def _exception_field(span: Mapping[str, Any], key: str) -> Any:
    """A field of the span's last ``exception`` event."""
    events = span.get("events")
    for event in reversed(events if isinstance(events, list) else []):
        if isinstance(event, Mapping) and event.get("name") == "exception":
            return _attributes(event.get("attributes")).get(key)
    return None


def _first_user_text(messages: Any) -> str | None:
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, Mapping) and message.get("role") == "user":
            text, _ = model_output(message)
            if text:
                return text
    return None


class _Span:
    """A span's ids, times and operation; ``attributes`` as read (a convention's own keys
    added as GenAI's), ``recorded`` as the file holds them (what a ``span:*`` shows)."""

    __slots__ = (
        "attributes",
        "end",
        "id",
        "node",
        "operation",
        "parent",
        "raw",
        "recorded",
        "start",
    )

    def __init__(
        self, raw: Mapping[str, Any], events: list[tuple[str, Any, dict[str, Any]]] | None = None
    ) -> None:
        self.raw = raw
        self.id = _hex_id(raw.get("spanId"))
        if not self.id:
            raise TraceFormatError(f"span {raw.get('name')!r} has no 'spanId'")
        self.parent = _hex_id(raw.get("parentSpanId")) or None
        try:
            self.attributes = self.recorded = _attributes(raw.get("attributes"))
        except TraceFormatError as exc:  # located at the span
            raise TraceFormatError(str(exc), self.id) from None
        start = _nanos(raw, "startTimeUnixNano", self.id)
        if start is None:
            raise TraceFormatError("span has no 'startTimeUnixNano'", self.id)
        self.start = start
        self.end = _nanos(raw, "endTimeUnixNano", self.id)
        operation = self.attributes.get("gen_ai.operation.name")
        self.node: str | None = None  # the LangGraph node whose run the span is
        if "traceloop.span.kind" in self.attributes:  # OpenLLMetry's
            self.attributes = dict(self.recorded)
            operation = traceloop.operation(self.attributes, operation)
            self.node = traceloop.node_run(self.attributes, operation)
        elif "logfire.msg_template" in self.attributes:  # Pydantic Logfire's
            self.attributes = dict(self.recorded)
            operation = logfire.agents_operation(self.attributes, operation)
        elif operation is None and "ai.operationId" in self.attributes:
            self.attributes = dict(self.recorded)  # read as GenAI's, kept as written
            operation = vercel_ai.operation(self.attributes)  # the Vercel AI SDK's
        elif operation is None:
            operation = OPENINFERENCE_KINDS.get(str(self.attributes.get("openinference.span.kind")))
            if operation == "chat":  # its messages as GenAI's, where those are absent
                self.attributes = dict(self.recorded)
                for side, messages in chat_messages(self.attributes).items():
                    self.attributes.setdefault(f"gen_ai.{side}.messages", messages)
            elif node := langgraph_node(str(raw.get("name")), self.attributes):
                operation = "invoke_agent"  # a LangGraph node run is an agent's, as imported
                self.attributes = {"agent.name": node, **self.recorded}
                self.node = node
        self.operation = operation
        if events and operation in MODEL_OPERATIONS:
            self.attributes = dict(self.attributes)
            _fold_events(self.attributes, events)


def facts_from_request(document: Mapping[str, Any]) -> Facts:
    events = log_events(document)
    spans = {
        s.id: s
        for s in (_Span(raw, events.get(_hex_id(raw.get("spanId")))) for raw in spans_of(document))
    }
    calls = [s for s in spans.values() if s.operation in MODEL_OPERATIONS]
    for answer in logfire.fold_streamed_answers(calls):  # a streamed call's answer, apart
        del spans[answer]
    facts = Facts(transfer_calls_are_handoffs=True)

    def agent_span_of(span: _Span) -> _Span | None:
        """The agent span the span ran in."""
        seen: set[str] = set()
        parent = span.parent
        while parent in spans and parent not in seen:
            seen.add(parent)
            owner = spans[parent]
            if owner.operation in AGENT_OPERATIONS and _first(owner.attributes, AGENT_NAME_KEYS):
                return owner
            parent = owner.parent
        return None

    owners = {i: agent_span_of(s) for i, s in spans.items()}  # read once: both passes ask
    callers = _callers(spans, owners)
    roots = [s for s in spans.values() if s.parent not in spans]
    _note_cuts(facts, spans, roots)
    ordered = sorted(spans.values(), key=lambda s: s.start)
    asked: list[tuple[ModelCall, Any]] = []
    unanswered: set[int] = set()  # calls whose span holds no answer (and no error)
    for span in ordered:
        owner = callers.get(span.id, owners[span.id])
        agent = None if owner is None else str(_first(owner.attributes, AGENT_NAME_KEYS))
        step = _step(span, agent, facts)
        facts.steps.append(step)
        if isinstance(step, ModelCall):
            asked.append((step, _messages(_first(span.attributes, INPUT_KEYS))))
            if _first(span.attributes, OUTPUT_KEYS) is None and step.error is None:
                unanswered.add(id(step))
    runs = {s.id: step for s, step in zip(ordered, facts.steps, strict=True)}
    for span, step in zip(ordered, facts.steps, strict=True):  # a failed turn: its agent's
        owner = owners[span.id]
        run = None if owner is None else runs[owner.id]
        if isinstance(run, AgentRun) and run.error is None:
            run.error = _agent_failure(span, step)
    asked = _fold_nested_calls(facts, spans, ordered, asked, unanswered)
    _answers_sent_on(facts, asked, unanswered)
    _handoff_targets(facts)
    _runs_from_messages(facts, asked)
    _node_returns(facts, ordered)
    if spans and all(isinstance(step, Other) for step in facts.steps):
        facts.gaps.add(UNREAD_GAP)
    if roots:
        facts.start = min(s.start for s in roots)
        facts.end = max((s.end or s.start) for s in roots)
    if facts.input is None:
        for root in sorted(roots, key=lambda s: s.start):
            facts.input = _first_user_text(_messages(_first(root.attributes, INPUT_KEYS)))
            if facts.input is not None:
                break
    note_input(facts, CONTENT_GAP, UNREAD_GAP)
    return facts


def _agent_name(span: _Span | None) -> Any:
    return None if span is None else _first(span.attributes, AGENT_NAME_KEYS)


def _callers(spans: Mapping[str, _Span], owners: Mapping[str, _Span | None]) -> dict[str, _Span]:
    """The agent each model call in a prebuilt agent's graph is made by. A node run holding
    a graph named as the node is a named agent's run (``create_react_agent(name=X)`` as
    node X of a supervisor's or swarm's graph): the calls of its inner ``agent`` node are
    X's, as the LangGraph importer reads them (its inner nodes are still runs of their
    own). Other calls are their nearest agent run's."""
    named = {
        owner.id
        for span in spans.values()
        if span.operation in AGENT_OPERATIONS
        and (owner := owners[span.id]) is not None
        and owner.node is not None
        and _agent_name(span) == owner.node
    }
    callers: dict[str, _Span] = {}
    for span in spans.values():
        if span.operation not in MODEL_OPERATIONS:
            continue
        run, seen = owners[span.id], set()
        while run is not None and run.id not in named and run.id not in seen:
            seen.add(run.id)
            run = owners[run.id]
        if run is not None and run.id in named:
            callers[span.id] = run
    return callers


def _fold_nested_calls(
    facts: Facts,
    spans: Mapping[str, _Span],
    ordered: list[_Span],
    asked: list[tuple[ModelCall, Any]],
    unanswered: set[int],
) -> list[tuple[ModelCall, Any]]:
    """A model-call span inside another is the same call: the request an instrumented
    client (``openinference-instrumentation-openai``, OpenLLMetry's
    ``opentelemetry-instrumentation-openai``) records inside a framework's call (an Agents
    SDK generation). Read as two, every call and its tokens counted twice. The framework's
    call is kept, what it lacks (tokens, the answer, the model) taken from the client's;
    ``asked`` without the inner calls."""
    steps = dict(zip((s.id for s in ordered), facts.steps, strict=True))
    inner: set[int] = set()
    for span in ordered:
        call = steps[span.id]
        parent = spans.get(span.parent or "")
        if not isinstance(call, ModelCall) or parent is None:
            continue
        outer = steps[parent.id]
        if not isinstance(outer, ModelCall):
            continue
        inner.add(id(call))
        outer.input_tokens = outer.input_tokens or call.input_tokens
        outer.output_tokens = outer.output_tokens or call.output_tokens
        outer.model = outer.model or call.model
        if id(outer) in unanswered and id(call) not in unanswered:
            outer.text, outer.requests = call.text, call.requests
            unanswered.discard(id(outer))
    facts.steps = [s for s in facts.steps if id(s) not in inner]
    return [(call, sent) for call, sent in asked if id(call) not in inner]


def _answers_sent_on(
    facts: Facts, asked: list[tuple[ModelCall, Any]], unanswered: set[int]
) -> None:
    """A model call whose span holds no answer (OpenLLMetry's Agents SDK instrumentation
    writes only the input of a Chat Completions model's calls) answered what a later call
    was sent: the conversation (system prompts aside: an agent handed to has its own) goes
    on with this call's input, then its assistant turn, the answer. One no later call was
    sent (the final answer) stays unknown, warned."""
    for index, (call, sent) in enumerate(asked):
        if id(call) not in unanswered:
            continue
        before = _conversation(sent)
        turn = next(
            (
                after[len(before)]
                for _, later in asked[index + 1 :]
                if before
                and len(after := _conversation(later)) > len(before)
                and after[: len(before)] == before
                and as_mapping(after[len(before)]).get("role") == "assistant"
            ),
            None,
        )
        if turn is None:
            facts.gaps.add(CONTENT_GAP)
        else:
            call.text, call.requests = model_output(turn)


def _conversation(messages: Any) -> list[Any]:
    if not isinstance(messages, list):
        return []
    return [m for m in messages if as_mapping(m).get("role") != "system"]


def _handoff_targets(facts: Facts) -> None:
    """A handoff span that names no agent taking over (OpenLLMetry's Agents SDK
    instrumentation names the span when it starts, before the SDK knows: ``triage →
    unknown.handoff``) hands over to the agent that runs next; none ran: no handoff."""
    runs = sorted((s for s in facts.steps if isinstance(s, AgentRun)), key=lambda r: r.start)
    for step in facts.steps:
        if isinstance(step, Handoff) and not step.target:
            after = (r.name for r in runs if r.start >= step.start and r.name != step.source)
            step.target = next(after, "")
    facts.steps = [s for s in facts.steps if not (isinstance(s, Handoff) and not s.target)]


NODE_OUTPUT_KEYS = ("gen_ai.task.output", "output.value")  # OpenLLMetry's, OpenInference's


def _node_returns(facts: Facts, ordered: list[_Span]) -> None:
    """What LangGraph node runs returned that no model or tool span says: a ``Command``
    whose ``goto`` hands the graph to another node (a routed handoff), and the handoff
    back langgraph-supervisor writes as messages (the transfer they stand for, run by the
    agent handing back; the state repeats them, so once per call id)."""
    back: set[Any] = set()
    for span in ordered:
        if span.node is None:
            continue
        output = _messages(_first(span.recorded, NODE_OUTPUT_KEYS))
        if isinstance(output, Mapping) and "outputs" in output:  # OpenLLMetry's, with kwargs
            output = output["outputs"]
        at = span.end if span.end is not None else span.start
        facts.steps += routed_handoffs(facts.steps, span.node, span.start, at, command_goto(output))
        for agent, tool, call_id in handed_back(output):
            if call_id not in back:
                back.add(call_id)
                facts.steps.append(ToolRun(tool, {}, at, at, agent or span.node, id=call_id))


SPLIT_GAP = (
    "{} of its spans name a parent span the file does not hold: the trace is cut (an "
    "exporter that writes a file per flush, a batch not yet exported): the agent runs those "
    "spans ran in are unknown; join the trace's files into one (cat a.json b.json > "
    "run.json) to read it whole"
)


def _note_cuts(facts: Facts, spans: Mapping[str, _Span], roots: list[_Span]) -> None:
    """Warn of spans whose parent the file lacks (one trace split across files), and of a
    file holding several runs: trees of spans, each under its own root, in several traces
    (a model call made outside any span is a trace of its own, as is OpenLLMetry's
    ``create_agent``: a span alone is no run)."""
    orphans = sum(1 for s in roots if s.parent is not None)
    if orphans:
        facts.gaps.add(SPLIT_GAP.format(orphans))
    parents = {s.parent for s in spans.values()}
    runs = {_hex_id(s.raw.get("traceId")) or None for s in roots if s.id in parents}
    note_traces(facts, runs)


FRAMEWORK_KEYS = frozenset({"gen_ai.operation.name", "openinference.span.kind"})


def _agent_failure(span: _Span, step: Any) -> str | None:
    """A failed span of the agent framework's own that is no step we read (the Agents SDK's
    ``turn`` span, status ERROR from a guardrail's tripwire, through the OTel bridge or
    OpenInference) is the failure of the agent it ran in. A failed span of neither a GenAI
    operation nor an OpenInference kind (an HTTP request retried) is not."""
    if isinstance(step, Other) and FRAMEWORK_KEYS & span.attributes.keys():
        return step.payload.get("error")  # type: ignore[no-any-return]
    return None


def _tool_responses(messages: Any) -> Iterator[tuple[Any, Any]]:
    """``(call id, result)`` of the tool messages a model was sent (chat or GenAI parts)."""
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, Mapping) or message.get("role") != "tool":
            continue
        if isinstance(message.get("parts"), list):
            for part in message["parts"]:
                if isinstance(part, Mapping) and part.get("type") == "tool_call_response":
                    yield part.get("id"), part.get("response")
        else:
            yield message.get("tool_call_id") or message.get("id"), message.get("content")


def _runs_from_messages(facts: Facts, asked: list[tuple[ModelCall, Any]]) -> None:
    """Tool runs no ``execute_tool`` span records (an instrumented client, not a framework):
    a call the model requested whose result a later model call was sent."""
    if any(isinstance(s, ToolRun) for s in facts.steps):
        return  # tool spans say it (the Agents OTel bridge): no second copy
    ran: set[Any] = set()
    requested: dict[Any, tuple[ModelCall, Any]] = {}
    for call, messages in asked:
        for call_id, result in _tool_responses(messages):
            if call_id in ran or call_id not in requested:
                continue
            earlier, request = requested[call_id]
            at = earlier.end if earlier.end is not None else earlier.start
            run = ToolRun(request.name, request.input, at, call.start, earlier.agent, call_id)
            run.result = result
            facts.steps.append(run)
            ran.add(call_id)
        for request in call.requests:
            requested.setdefault(request.id, (call, request))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _step(span: _Span, agent: str | None, facts: Facts) -> Any:
    attributes, operation = span.attributes, span.operation
    name = _first(attributes, AGENT_NAME_KEYS)
    if operation in AGENT_OPERATIONS and name and name != agent:  # not its own run again
        if facts.input is None:  # its first model call may have failed before it said
            facts.input = _first_user_text(_messages(_first(attributes, AGENT_INPUT_KEYS)))
        answer = _first(attributes, AGENT_OUTPUT_KEYS)
        if agent is None and isinstance(answer, str):  # the outermost run's: structured
            facts.output = answer  # output is no text the model wrote, but a tool's arguments
        return AgentRun(str(name), span.start, span.end, _failed(span.raw, attributes))
    if operation in MODEL_OPERATIONS:
        error = _failed(span.raw, attributes)
        text, requests = model_output(_messages(_first(attributes, OUTPUT_KEYS)))
        if facts.input is None:
            facts.input = _first_user_text(_messages(_first(attributes, INPUT_KEYS)))
        return ModelCall(
            _first(attributes, MODEL_KEYS),
            span.start,
            span.end,
            agent,
            _int(_first(attributes, INPUT_TOKENS)),
            _int(_first(attributes, OUTPUT_TOKENS)),
            text if isinstance(text, str) else "",
            requests,
            error=error,
        )
    if operation in TOOL_OPERATIONS and (ends := handoff(str(span.raw.get("name")), attributes)):
        return Handoff(ends[0] or agent, ends[1], span.start)
    if operation in TOOL_OPERATIONS:
        tool = _first(attributes, TOOL_NAME_KEYS) or span.raw.get("name")
        return ToolRun(
            str(tool),
            parse_arguments(_first(attributes, ARGUMENT_KEYS)),
            span.start,
            span.end,
            agent,
            id=attributes.get("gen_ai.tool.call.id") or None,  # else the request's
            result=tool_output(_first(attributes, RESULT_KEYS)),
            error=_failed(span.raw, attributes),
            span_id=span.id,
        )
    if operation in HANDOFF_OPERATIONS:
        target = attributes.get("gen_ai.handoff.to_agent")  # "": the agent that runs next
        source = attributes.get("gen_ai.handoff.from_agent") or agent
        if (isinstance(target, str) and target) or (target is None and source):
            return Handoff(source, target or "", span.start)
    payload = {
        "name": span.raw.get("name"),
        "spanId": span.id,
        "attributes": span.recorded,
    }
    if _failed(span.raw, attributes):
        payload["error"] = _failed(span.raw, attributes)
    return Other(f"span:{operation or 'other'}", payload, span.start, agent)
