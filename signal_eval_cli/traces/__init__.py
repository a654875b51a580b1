"""Import the traces agent frameworks write, as signals every assertion reads.

``import_trace(path)`` detects the format from the content (the file name only breaks
ties) and returns a :class:`~signal_eval_cli.signals.Trace`. Formats are a registry:
``FORMATS`` maps a name to a reader of the file's :class:`Source`.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from signal_eval_cli.collector import gc_paused
from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.signals import Signal, Trace
from signal_eval_cli.traces.mapping import Facts, to_signals
from signal_eval_cli.traces.source import Source, TraceFormatError, TraceGap

__all__ = [
    "FORMATS",
    "TRACE_SUFFIXES",
    "TraceGap",
    "detect_format",
    "import_trace",
    "read_trace_signals",
    "read_trace_source",
]

TRACE_SUFFIXES = (".jsonl", ".json", ".ndjson")
MALFORMED = (TypeError, AttributeError, KeyError, ValueError, ArithmeticError, RecursionError)
"""What reading a record of an unexpected shape raises: an input error, never a traceback."""


def detect_format(source: Source) -> str:
    """The format name of ``source`` judged by its content."""
    from signal_eval_cli.traces import langgraph, openai_agents, otel_console, otlp

    value, whole = source.first_value
    if otlp.looks_like(value):
        return "otlp"
    if otel_console.looks_like(value):
        return "otel-console"
    if openai_agents.looks_like(value):  # the export, or its first batch of several
        return "openai-agents"
    if not whole and isinstance(value, dict) and value.get("object") in ("trace", "trace.span"):
        return "openai-agents"
    if langgraph.looks_like_events(value):
        return "langgraph-events"
    if langgraph.looks_like_stream(value):
        return "langgraph-stream"
    if langgraph.looks_like_messages(value):
        return "langgraph-messages"
    if langgraph.looks_like_tasks(value) or langgraph.looks_like_debug(value):
        return "langgraph-tasks"
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return "signals"
    if langgraph.looks_like_values(value):
        return "langgraph-values"
    if langgraph.looks_like_updates(value):
        return "langgraph-updates"
    if not whole and langgraph.looks_like_task_updates(v for _, v in source.lines()):
        return "langgraph-updates"  # the functional API's: {task: what it returned}
    if source.path.endswith(".jsonl"):  # the name breaks the tie: our JSONL, whose reader
        return "signals"  # says which line is not a signal
    raise source.problem(
        "unknown trace format: expected signal-eval JSONL, an OpenAI Agents SDK span export, "
        "OTLP/JSON (or ConsoleSpanExporter's spans) or LangGraph astream_events/astream JSONL",
        1,
    )


def _signals(source: Source) -> list[Signal]:
    from signal_eval_cli.signals import signals_from_text

    return signals_from_text(source.text, source.path)


def _agents(source: Source) -> Facts:
    from signal_eval_cli.traces import openai_agents

    value, whole = source.first_value
    if whole:
        return openai_agents.facts_from_items(openai_agents.records(value))
    items: list[Any] = []  # an item a line, or the exporter's batches one after another
    for _, item in source.lines():
        items += openai_agents.records(item) or [item]
    return openai_agents.facts_from_items(items)


def _otlp(source: Source) -> Facts:
    from signal_eval_cli.traces import otlp

    value, whole = source.first_value
    if whole:
        return otlp.facts_from_request(otlp.camel_case(value))
    merged: dict[str, list[Any]] = {"resourceSpans": [], "resourceLogs": []}
    for number, request in source.lines():  # a collector's file exporter: a request a line
        if not otlp.looks_like(request):
            message = "not an OTLP/JSON request (no 'resourceSpans' or 'resourceLogs')"
            raise TraceFormatError(message, number)
        request = otlp.camel_case(request)
        for key, entries in merged.items():
            entries.extend(request.get(key) or [])
    return otlp.facts_from_request(merged)


def _otel_console(source: Source) -> Facts:
    from signal_eval_cli.traces import otel_console, otlp

    value, whole = source.first_value
    spans = [(1, value)] if whole else list(source.lines())
    return otlp.facts_from_request(otel_console.to_request(spans))


def _langgraph(method: str) -> Callable[[Source], Facts]:
    def read(source: Source) -> Facts:
        from signal_eval_cli.traces.langgraph import LangGraphReader

        reader = LangGraphReader()
        feed = getattr(reader, method)
        for number, value in source.lines():
            try:
                feed(value)
            except TraceFormatError as exc:
                raise TraceFormatError(str(exc), number) from None
        reader.close()
        return reader.facts

    return read


FORMATS: dict[str, Callable[[Source], Facts | list[Signal]]] = {
    "signals": _signals,
    "openai-agents": _agents,
    "otlp": _otlp,
    "otel-console": _otel_console,  # the OTel Python SDK's ConsoleSpanExporter
    "langgraph-events": _langgraph("event"),
    "langgraph-stream": _langgraph("stream_item"),
    "langgraph-updates": _langgraph("updates_item"),
    "langgraph-messages": _langgraph("messages_item"),
    "langgraph-values": _langgraph("values_item"),
    "langgraph-tasks": _langgraph("tasks_item"),  # "debug" too
}


def read_trace_signals(path: str | Path, format: str | None = None) -> tuple[list[Signal], Any]:
    """``(signals, input)`` of a trace file in any known format."""
    return read_trace_source(Source.read(path), format)


def read_trace_source(source: Source, format: str | None = None) -> tuple[list[Signal], Any]:
    """:func:`read_trace_signals` of a file already read (``validate``: a pipe is read
    once)."""
    path = source.path
    name = format or detect_format(source)
    reader = FORMATS.get(name)
    if reader is None:
        raise InputError(f"unknown trace format '{name}' (known: {', '.join(FORMATS)})")
    with gc_paused():  # mapping makes no cycles; see collector
        try:
            read = reader(source)
        except TraceFormatError as exc:
            raise source.problem(str(exc), exc.where) from None
        except MALFORMED as exc:  # a field of a wrong type, a number out of range, too deep
            message = f"not a valid {name} trace: {type(exc).__name__}: {exc}"
            raise source.problem(message, 0) from None
        del source  # with it the parsed document: mapping the facts needs only them
        if isinstance(read, list):  # our own JSONL: the input is what harness:start says
            start = next((s.payload for s in read if s.name == "harness:start"), None)
            return read, start.get("input") if isinstance(start, dict) else None
        try:
            signals = to_signals(read)
        except MALFORMED as exc:  # an id of a wrong type, found as calls are linked
            message = f"not a valid {name} trace: {type(exc).__name__}: {exc}"
            raise InputError([Problem(str(path), 0, 0, message)]) from None
        for gap in sorted(read.gaps):
            warnings.warn(f"{path}: {gap}", TraceGap, stacklevel=2)
        return signals, read.input


def import_trace(path: str | Path, format: str | None = None) -> Trace:
    """The trace at ``path`` (format from its content unless given) as a :class:`Trace`."""
    signals, input = read_trace_signals(path, format)
    return Trace(signals, input)
