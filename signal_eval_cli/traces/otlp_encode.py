"""OpenTelemetry SDK spans → OTLP/JSON (``ExportTraceServiceRequest``), without protobuf.

The live OTel harness feeds the importer through this, and users can write files the
importer reads with it: hex ids, int64 as strings, attributes as ``AnyValue``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["any_value", "messages_from_events", "spans_to_otlp"]

INPUT_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def messages_from_events(events: Iterable[tuple[str, Any]]) -> tuple[list[Any], list[Any]]:
    """``(input, output)`` messages of a model call from its GenAI log events
    (``gen_ai.*.message``, ``gen_ai.choice``), as ``opentelemetry-instrumentation-openai-v2``
    emits them (with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``)."""
    inputs: list[Any] = []
    outputs: list[Any] = []
    for name, body in events:
        fields = body if isinstance(body, Mapping) else {}
        if name == "gen_ai.choice":
            outputs.append({"role": "assistant", **(fields.get("message") or {})})
        elif name in INPUT_EVENTS:
            message = {"role": INPUT_EVENTS[name], **fields}
            if "id" in message and message["role"] == "tool":
                message["tool_call_id"] = message.pop("id")
            inputs.append(message)
    return inputs, outputs


def any_value(value: Any) -> dict[str, Any]:
    """One attribute value as OTLP/JSON ``AnyValue``."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (bytes, bytearray)):
        return {"bytesValue": bytes(value).hex()}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": _attributes(value)}}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _attributes(attributes: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [{"key": str(k), "value": any_value(v)} for k, v in (attributes or {}).items()]


def _span(span: Any, events: Mapping[int, list[tuple[str, Any]]]) -> dict[str, Any]:
    context = span.get_span_context()
    attributes = dict(span.attributes or {})
    if events.get(context.span_id):  # log events fold into the span as the new conventions do
        inputs, outputs = messages_from_events(events[context.span_id])
        attributes.setdefault("gen_ai.input.messages", json.dumps(inputs))
        attributes.setdefault("gen_ai.output.messages", json.dumps(outputs))
    out: dict[str, Any] = {
        "traceId": f"{context.trace_id:032x}",
        "spanId": f"{context.span_id:016x}",
        "name": span.name,
        "kind": int(getattr(span.kind, "value", 0)) + 1,  # SDK INTERNAL=0; OTLP INTERNAL=1
        "startTimeUnixNano": str(span.start_time or 0),
        "endTimeUnixNano": str(span.end_time or span.start_time or 0),
        "attributes": _attributes(attributes),
        "status": {"code": int(span.status.status_code.value)},
    }
    if span.parent is not None:
        out["parentSpanId"] = f"{span.parent.span_id:016x}"
    if span.status.description:
        out["status"]["message"] = span.status.description
    if span.events:
        out["events"] = [
            {
                "timeUnixNano": str(e.timestamp),
                "name": e.name,
                "attributes": _attributes(e.attributes),
            }
            for e in span.events
        ]
    return out


def spans_to_otlp(
    spans: Iterable[Any], events: Iterable[tuple[int, str, Any]] = ()
) -> dict[str, Any]:
    """Group finished SDK spans by resource and scope, as the OTLP exporter does.

    ``events``: ``(span id, event name, body)`` of GenAI log events; a span's become its
    ``gen_ai.input.messages``/``gen_ai.output.messages`` (an OTLP trace holds no logs)."""
    by_span: dict[int, list[tuple[str, Any]]] = defaultdict(list)
    for span_id, name, body in events:
        by_span[span_id].append((name, body))
    scopes: dict[int, dict[tuple[str, str], list[Any]]] = defaultdict(dict)
    resources: dict[int, Any] = {}
    for span in spans:
        resource = span.resource
        scope = span.instrumentation_scope
        key = (scope.name, scope.version or "") if scope is not None else ("", "")
        resources[id(resource)] = resource
        scopes[id(resource)].setdefault(key, []).append(span)
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes(resources[rid].attributes)},
                "scopeSpans": [
                    {
                        "scope": {"name": name, "version": version},
                        "spans": [_span(s, by_span) for s in group],
                    }
                    for (name, version), group in by_scope.items()
                ],
            }
            for rid, by_scope in scopes.items()
        ]
    }
