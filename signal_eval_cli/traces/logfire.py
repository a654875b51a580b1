"""Pydantic Logfire's instrumentations of the OpenAI client and of the Agents SDK.

``logfire.instrument_openai_agents()`` writes each Agents SDK span's data (its export's
``span_data``) as attributes of a span whose ``logfire.msg_template`` says what it is
(``Agent run: {name!r}``, ``Chat completion with ...``, ``Function: {name}``,
``Handoff: ...``), with no GenAI operation but on Responses calls: :func:`agents_operation`
says which operation a span is and adds the GenAI attributes the OTLP importer reads.

``logfire.instrument_openai()``:

Its model-call spans carry the GenAI attributes the OTLP importer reads
(``gen_ai.input.messages``, ``gen_ai.output.messages``, usage), but a streamed call is two
records: the request's span (``Chat Completion with {request_data[model]!r}``), which ends
when the stream is handed back and holds only the input, and, once the stream has been read
to its end, a log written as a span of no duration beside it (``logfire.span_type: log``,
``streaming response from ... took ...s``) holding the answer and its usage. Read alone,
each streamed call was two, one of which answered nothing and counted no token.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from signal_eval_cli.traces.openai_agents import error_text

__all__ = ["agents_operation", "fold_streamed_answers"]

_AGENT_SPANS = {  # the start of logfire.msg_template -> the span's GenAI operation
    "Agent run: ": "invoke_agent",
    "Chat completion with ": "chat",  # the SDK's generation span (Chat Completions)
    "Responses API with ": "chat",
    "Function: ": "execute_tool",
    "Handoff: ": "handoff",
}
# operation -> [(a GenAI attribute, the span data's fields it is read from, in order)]
_ADDED: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "invoke_agent": [("gen_ai.agent.name", ("name",))],
    "chat": [
        ("gen_ai.input.messages", ("input", "raw_input")),
        ("gen_ai.output.messages", ("output", "response")),
    ],
    "execute_tool": [
        ("gen_ai.tool.name", ("name",)),
        ("gen_ai.tool.call.arguments", ("input",)),
        ("gen_ai.tool.call.result", ("output",)),
    ],
    "handoff": [
        ("gen_ai.handoff.from_agent", ("from_agent",)),
        ("gen_ai.handoff.to_agent", ("to_agent",)),
    ],
}


def agents_operation(attributes: dict[str, Any], operation: Any) -> Any:
    """The GenAI operation of a span ``logfire.instrument_openai_agents()`` wrote (else
    ``operation`` as it was), its span data's fields added as GenAI attributes; the SDK's
    span error (the ``error`` attribute, ``{message, data}`` as JSON) as ``error.type``, as
    the SDK's export reads it. Another span of the SDK's (a ``turn``, a guardrail) is
    marked as the framework's, so its failure (a tripwire) fails the agent it ran in."""
    template = str(attributes.get("logfire.msg_template") or "")
    kind = next((o for start, o in _AGENT_SPANS.items() if template.startswith(start)), None)
    framework = "sdk_span_type" in attributes or template.startswith("Guardrail")
    if kind is None and framework:
        attributes.setdefault("gen_ai.operation.name", "unknown")
    for key, fields in _ADDED.get(kind or "", []):
        value = next((attributes[f] for f in fields if attributes.get(f) is not None), None)
        if value is not None:
            attributes.setdefault(key, value)
    error = attributes.get("error")
    if (kind is not None or framework) and isinstance(error, str) and error.startswith("{"):
        try:
            attributes.setdefault("error.type", error_text(json.loads(error), "error"))
        except ValueError:
            attributes.setdefault("error.type", error)
    return kind or operation


class Call(Protocol):
    id: str
    parent: str | None
    start: float
    end: float | None
    attributes: dict[str, Any]


def fold_streamed_answers(calls: Sequence[Call]) -> set[str]:
    """Each streamed answer's log folded into the request it answers: the latest earlier
    model-call span beside it (same parent), sent the same messages, with no answer yet.
    The request then ends when the stream did, with the answer and usage of the log; the
    ids of the logs so folded are returned (they are no calls of their own)."""
    waiting: dict[tuple[Any, Any], list[Call]] = {}
    folded: set[str] = set()
    for call in sorted(calls, key=lambda c: c.start):
        attributes = call.attributes
        kind = attributes.get("logfire.span_type")
        sent = (call.parent, attributes.get("gen_ai.input.messages"))
        if kind == "span" and "gen_ai.output.messages" not in attributes:
            waiting.setdefault(sent, []).append(call)
        elif kind == "log" and waiting.get(sent):
            request = waiting[sent].pop()
            request.attributes = {**attributes, **request.attributes}
            request.end = max(request.end or request.start, call.start)
            folded.add(call.id)
    return folded
