"""OpenAI Agents SDK span export → :class:`Facts`.

The records are what a ``TracingProcessor`` sees and the SDK's backend exporter posts:
``{"data": [trace.export(), span.export(), ...]}``, spans in the order they *ended*.

A ``response`` span (the SDK's default ``OpenAIResponsesModel``) exports only
``response_id`` and ``usage``: the tool calls, handoffs and tokens are still in the
file (``function``/``handoff`` spans, usage), but the model's name, input, answer and
tool-call ids are not. Such a file imports with a :class:`~signal_eval_cli.traces.source.TraceGap`
saying so; :func:`export_span` (what the live harness keeps) adds them back as
``model``, ``input`` and ``output`` (the Responses output items), which the importer reads.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping
from typing import Any

from signal_eval_cli.traces.mapping import (
    AgentRun,
    Facts,
    Handoff,
    ModelCall,
    Other,
    ToolRun,
    model_output,
    note_input,
    note_traces,
    parse_arguments,
)
from signal_eval_cli.traces.source import TraceFormatError

__all__ = ["error_text", "export_span", "facts_from_items", "looks_like", "records"]

RESPONSE_GAP = (
    "the SDK's export of a 'response' span holds no model, input or output (only "
    "response_id and usage): the models, the trace's input and final answer are unknown and "
    "tool calls have no ids; record with signal_eval_cli.traces.openai_agents.export_span to "
    "keep them"
)


def _jsonable(value: Any) -> Any:
    """Pydantic models (Responses items) and TypedDicts as plain JSON values."""
    return json.loads(json.dumps(value, default=lambda o: o.model_dump(mode="json")))


def export_span(span: Any) -> dict[str, Any] | None:
    """``span.export()``, with a ``response`` span's input and output items added."""
    exported = span.export()
    data: Any = getattr(span, "span_data", None)
    if exported and getattr(data, "type", None) == "response":
        response = getattr(data, "response", None)
        body = dict(exported["span_data"])
        body["input"] = _jsonable(data.input)
        body["output"] = _jsonable(response.output) if response is not None else None
        body["model"] = getattr(response, "model", None)
        exported = {**exported, "span_data": body}
    return exported  # type: ignore[no-any-return]


def looks_like(document: Any) -> bool:
    items = records(document)
    return bool(items) and any(
        isinstance(i, Mapping) and i.get("object") in ("trace", "trace.span") for i in items[:5]
    )


def records(document: Any) -> list[Any]:
    """The exported items of a document: ``{"data": [...]}`` or a bare list."""
    if isinstance(document, Mapping) and isinstance(document.get("data"), list):
        return list(document["data"])
    return list(document) if isinstance(document, list) else []


def _seconds(value: Any, span_id: str, what: str) -> float | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TraceFormatError(f"'{what}' must be an ISO 8601 string", span_id)
    try:
        moment = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise TraceFormatError(f"'{what}' is not an ISO 8601 time: {value!r}", span_id) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.timezone.utc)
    return moment.timestamp()


def _first_user_text(messages: Any) -> str | None:
    if isinstance(messages, str):
        return messages
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, Mapping) and message.get("role") == "user":
            content = message.get("content")
            text, _ = model_output({"role": "user", "content": content})
            return text or (content if isinstance(content, str) else None)
    return None


def facts_from_items(items: list[Any]) -> Facts:
    """Facts of every exported item; raises :class:`TraceFormatError` at a bad span."""
    spans: dict[str, Mapping[str, Any]] = {}
    for position, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise TraceFormatError(f"item {position} is not an object")
        if item.get("object") == "trace":
            continue
        span_id = item.get("id")
        if not isinstance(span_id, str) or not span_id:
            raise TraceFormatError(f"item {position} has no span 'id'")
        if not isinstance(item.get("span_data"), Mapping):
            raise TraceFormatError("span has no 'span_data' object", span_id)
        spans[span_id] = item
    facts = Facts()
    note_traces(facts, {s.get("trace_id") for s in spans.values()})
    names = {i: s["span_data"].get("name") for i, s in spans.items()}
    kinds = {i: s["span_data"].get("type") for i, s in spans.items()}

    def agent_span_of(span: Mapping[str, Any]) -> str | None:
        """The id of the agent span the span ran in."""
        seen: set[str] = set()
        parent = span.get("parent_id")
        while isinstance(parent, str) and parent in spans and parent not in seen:
            seen.add(parent)
            if kinds[parent] == "agent":
                return parent
            parent = spans[parent].get("parent_id")
        return None

    owners = {i: agent_span_of(s) for i, s in spans.items()}  # read once: both passes ask
    ordered = sorted(
        spans.items(), key=lambda kv: _seconds(kv[1].get("started_at"), kv[0], "started_at") or 0.0
    )
    bounds: list[float] = []
    for span_id, span in ordered:
        start = _seconds(span.get("started_at"), span_id, "started_at")
        end = _seconds(span.get("ended_at"), span_id, "ended_at")
        if start is None:
            raise TraceFormatError("span has no 'started_at'", span_id)
        bounds += [start, end if end is not None else start]
        owner = owners[span_id]
        agent = None if owner is None else str(names[owner])
        facts.steps.append(_step(span_id, span, start, end, agent, facts))
    runs = {i: step for (i, _), step in zip(ordered, facts.steps, strict=True)}
    for span_id, span in ordered:  # a turn's error (a guardrail's tripwire) is its agent's
        within = owners[span_id]
        run = runs.get(within) if within is not None else None
        if kinds[span_id] not in _OWN_ERRORS and isinstance(run, AgentRun) and run.error is None:
            run.error = _failure(span, "agent failed")
    if bounds:
        facts.start, facts.end = min(bounds), max(bounds)
    note_input(facts, RESPONSE_GAP)
    return facts


# Spans whose error is their own step's (a failed tool, model call or agent; a handoff's
# ``Multiple handoffs requested``, which the SDK notes and goes on past): any other span's
# error (a ``turn`` span's guardrail tripwire) is the failure of the agent it ran in.
_OWN_ERRORS = frozenset({"agent", "function", "generation", "response", "handoff"})


def _failure(span: Mapping[str, Any], failed: str) -> str | None:
    return error_text(span.get("error"), failed)


def error_text(error: Any, failed: str) -> str | None:
    """Why a span failed, from the SDK's ``error: {message, data}`` (a tool's own error
    is ``data.error``; an agent's is the message: ``Max turns exceeded``, a guardrail's
    tripwire); None when it did not."""
    if error is None:
        return None
    if not isinstance(error, Mapping):
        return str(error) or failed
    detail = error.get("data")
    cause = detail.get("error") if isinstance(detail, Mapping) else None
    return str(cause or error.get("message") or failed)


def _tokens(usage: Any, key: str) -> int | None:
    value = usage.get(key) if isinstance(usage, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _step(
    span_id: str,
    span: Mapping[str, Any],
    start: float,
    end: float | None,
    agent: str | None,
    facts: Facts,
) -> Any:
    data = span["span_data"]
    kind = data.get("type")
    if kind == "agent":
        return AgentRun(str(data.get("name")), start, end, _failure(span, "agent failed"))
    if kind in ("generation", "response"):
        if kind == "response" and "output" not in data:
            facts.gaps.add(RESPONSE_GAP)
        text, requests = model_output(data.get("output"))
        if facts.input is None:
            facts.input = _first_user_text(data.get("input"))
        usage = data.get("usage")
        return ModelCall(
            data.get("model"),
            start,
            end,
            agent,
            _tokens(usage, "input_tokens"),
            _tokens(usage, "output_tokens"),
            text,
            requests,
            error=_failure(span, "model call failed"),
        )
    if kind == "function":
        return ToolRun(
            str(data.get("name")),
            parse_arguments(data.get("input")),
            start,
            end,
            agent,
            result=data.get("output"),
            error=_failure(span, "tool failed"),
            span_id=span_id,
        )
    if kind == "handoff":
        target = data.get("to_agent")
        if not isinstance(target, str):
            raise TraceFormatError("handoff span has no 'to_agent'", span_id)
        return Handoff(data.get("from_agent"), target, start)
    payload = {k: v for k, v in data.items() if k != "type"}
    payload["spanId"] = span_id
    if span.get("error") is not None:
        payload["error"] = span["error"]
    return Other(f"span:{kind}", payload, start, agent)
