"""Pydantic Logfire's OpenAI instrumentation (``logfire.instrument_openai()``).

Its model-call spans carry the GenAI attributes the OTLP importer reads
(``gen_ai.input.messages``, ``gen_ai.output.messages``, usage), but a streamed call is two
records: the request's span (``Chat Completion with {request_data[model]!r}``), which ends
when the stream is handed back and holds only the input, and, once the stream has been read
to its end, a log written as a span of no duration beside it (``logfire.span_type: log``,
``streaming response from ... took ...s``) holding the answer and its usage. Read alone,
each streamed call was two, one of which answered nothing and counted no token.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["fold_streamed_answers"]


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
