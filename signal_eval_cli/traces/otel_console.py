"""The OpenTelemetry Python SDK's ``ConsoleSpanExporter`` output → an OTLP/JSON request.

``ConsoleSpanExporter`` (the exporter tutorials start with, and ``opentelemetry-instrument
--traces_exporter console``) prints each finished span as ``span.to_json()``: ``{"name",
"context": {"trace_id", "span_id"}, "parent_id", "start_time", "end_time", "status":
{"status_code", "description"}, "attributes": {...}, "events", "resource"}``, ids as
``0x``-hex, times as ISO 8601 (to the microsecond), attributes as plain JSON values, one
document after another. :func:`to_request` writes the OTLP spans they stand for, so the OTLP
importer reads them with every convention it knows.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping
from typing import Any

from signal_eval_cli.traces.mapping import as_mapping
from signal_eval_cli.traces.otlp_encode import any_value
from signal_eval_cli.traces.source import TraceFormatError

__all__ = ["looks_like", "to_request"]

STATUS_CODES = {"UNSET": 0, "OK": 1, "ERROR": 2}


def looks_like(value: Any) -> bool:
    """One span as ``ReadableSpan.to_json()`` writes it."""
    return (
        isinstance(value, Mapping)
        and "span_id" in as_mapping(value.get("context"))
        and "start_time" in value
    )


def to_request(spans: list[tuple[int, Any]]) -> dict[str, Any]:
    """``ExportTraceServiceRequest`` of ``(line, span)`` pairs, grouped by resource;
    raises :class:`TraceFormatError` at a document that is no span."""
    resources: dict[str, tuple[Any, list[dict[str, Any]]]] = {}
    for line, span in spans:
        if not looks_like(span):
            raise TraceFormatError("not a span as ConsoleSpanExporter writes it", line)
        resource = as_mapping(span.get("resource")).get("attributes")
        key = json.dumps(resource, sort_keys=True, default=str)
        resources.setdefault(key, (resource, []))[1].append(_span(span))
    return {
        "resourceSpans": [
            {"resource": {"attributes": _attributes(attributes)}, "scopeSpans": [{"spans": group}]}
            for attributes, group in resources.values()
        ]
    }


def _span(span: Mapping[str, Any]) -> dict[str, Any]:
    context = as_mapping(span.get("context"))
    span_id = str(context.get("span_id"))  # as written: an error names it, found at its line
    status = as_mapping(span.get("status"))
    out: dict[str, Any] = {
        "traceId": _hex(context.get("trace_id")),
        "spanId": _hex(span_id),
        "parentSpanId": _hex(span.get("parent_id")),
        "name": span.get("name"),
        "startTimeUnixNano": _nanos(span.get("start_time"), span_id),
        "endTimeUnixNano": _nanos(span.get("end_time"), span_id),
        "attributes": _attributes(span.get("attributes")),
        "status": {
            "code": STATUS_CODES.get(str(status.get("status_code")), 0),
            "message": status.get("description") or "",
        },
        "events": [
            {
                "name": as_mapping(e).get("name"),
                "timeUnixNano": _nanos(as_mapping(e).get("timestamp"), span_id),
                "attributes": _attributes(as_mapping(e).get("attributes")),
            }
            for e in _list(span.get("events"))
        ],
    }
    return out


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _hex(value: Any) -> str:
    return str(value).removeprefix("0x") if value else ""


def _nanos(value: Any, span_id: str) -> str | None:
    """An ISO 8601 time as OTLP's nanoseconds since the epoch (None: not ended)."""
    if value is None:
        return None
    try:
        moment = _dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise TraceFormatError(f"not an ISO 8601 time: {value!r}", span_id) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.timezone.utc)
    whole = moment.replace(microsecond=0).timestamp()
    return str(int(whole) * 10**9 + moment.microsecond * 1000)


def _attributes(attributes: Any) -> list[dict[str, Any]]:
    return [{"key": str(k), "value": any_value(v)} for k, v in as_mapping(attributes).items()]
