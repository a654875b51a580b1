"""Record the scripted conversation's traces with each framework's own exporters.

``python tests/record_traces.py`` rewrites ``tests/fixtures/traces/`` (run it after a
framework upgrade, then the tests). No test imports it: tests/test_live_harnesses.py runs
the same agents live and compares their facts with these fixtures. Every recorder runs its
framework against a :class:`MockLLMServer` on 127.0.0.1 (no network).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import agent_script as script
from mock_servers import Fault, MockLLMServer

FIXTURES = Path(__file__).parent / "fixtures" / "traces"


class _Collect:
    """A TracingProcessor keeping what the SDK's backend exporter would post."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def on_trace_start(self, trace: Any) -> None:
        pass

    def on_trace_end(self, trace: Any) -> None:
        self.items.append(trace.export())

    def on_span_start(self, span: Any) -> None:
        pass

    def on_span_end(self, span: Any) -> None:
        from signal_eval_cli.traces.openai_agents import export_span

        exported = export_span(span)
        if exported:
            self.items.append(exported)

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


async def _run_agent(
    base_url: str,
    *,
    streamed: bool,
    simple: bool,
    responses: bool = False,
    max_turns: int | None = None,
    guarded: bool = False,
    output_guarded: bool = False,
) -> str:
    """The run's final output; a run that fails (``max_turns`` passed, the model's error,
    a guardrail's tripwire) is recorded as far as it got, its error in the trace."""
    from agents import Runner
    from agents.exceptions import AgentsException
    from openai import OpenAIError

    agent = script.agents_sdk_agents(
        base_url, simple=simple, responses=responses, guarded=guarded, output_guarded=output_guarded
    )
    question = "Hi" if simple else script.QUESTION
    turns = {} if max_turns is None else {"max_turns": max_turns}
    try:
        if streamed:
            result = Runner.run_streamed(agent, question, **turns)
            async for _ in result.stream_events():
                pass
            return str(result.final_output)
        return str((await Runner.run(agent, question, **turns)).final_output)
    except (AgentsException, OpenAIError) as failed:
        return f"failed: {failed}"


async def record_agents(
    base_url: str,
    *,
    streamed: bool = False,
    simple: bool = False,
    responses: bool = False,
    max_turns: int | None = None,
    guarded: bool = False,
    output_guarded: bool = False,
) -> dict[str, Any]:
    """``{"data": [...]}`` as the Agents SDK's exporter posts it (spans in end order), a
    ``response`` span with its input and output (``export_span``)."""
    from agents import set_trace_processors

    collect = _Collect()
    set_trace_processors([collect])  # type: ignore[list-item]
    await _run_agent(
        base_url,
        streamed=streamed,
        simple=simple,
        responses=responses,
        max_turns=max_turns,
        guarded=guarded,
        output_guarded=output_guarded,
    )
    return {"data": collect.items}


async def record_agents_model_error(server: MockLLMServer) -> dict[str, Any]:
    """The run whose first model call the provider refuses (HTTP 400)."""
    server.fail_next(Fault.status_code(400, "bad request: context too long"))
    return await record_agents(server.openai_base_url)


async def record_otel_openai_model_error(server: MockLLMServer) -> dict[str, Any]:
    """The client loop whose first call the provider refuses (HTTP 400)."""
    server.fail_next(Fault.status_code(400, "bad request: context too long"))
    return await record_otel_openai(server.openai_base_url)


async def record_otel_agents(
    base_url: str,
    *,
    max_turns: int | None = None,
    guarded: bool = False,
    streamed: bool = False,
    console: io.StringIO | None = None,
    output_guarded: bool = False,
) -> dict[str, Any]:
    """OTLP/JSON of the Agents SDK run through the OpenTelemetry GenAI bridge; ``console``:
    what a ``ConsoleSpanExporter`` printed of it, too (each span's ``to_json()``)."""
    from agents import set_trace_processors
    from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from signal_eval_cli.traces.otlp_encode import spans_to_otlp

    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if console is not None:
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=console)))
    set_trace_processors([])
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        await _run_agent(
            base_url,
            streamed=streamed,
            simple=output_guarded,  # the simple agent's answer, blocked
            max_turns=max_turns,
            guarded=guarded,
            output_guarded=output_guarded,
        )
    finally:
        instrumentor.uninstrument()
    return spans_to_otlp(exporter.get_finished_spans())


async def record_otel_agents_console(base_url: str) -> str:
    """The support conversation through the OTel bridge as ``ConsoleSpanExporter`` prints
    it: a span's ``to_json()`` after another, as they end."""
    printed = io.StringIO()
    await record_otel_agents(base_url, console=printed)
    return printed.getvalue()


async def record_otel_agents_flushes(base_url: str) -> list[dict[str, Any]]:
    """The simple agent's run through the OTel bridge as an exporter that writes a file
    per flush writes it: a ``BatchSpanProcessor`` of two spans a batch, each batch its own
    OTLP/JSON request (children first: the first holds the model call, the last the root)."""
    from agents import set_trace_processors
    from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    from signal_eval_cli.traces.otlp_encode import spans_to_otlp

    class Flushes(SpanExporter):
        def __init__(self) -> None:
            self.files: list[dict[str, Any]] = []

        def export(self, spans: Any) -> SpanExportResult:
            self.files.append(spans_to_otlp(spans))
            return SpanExportResult.SUCCESS

    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    exporter = Flushes()
    provider = TracerProvider()
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_export_batch_size=2, schedule_delay_millis=60_000)
    )
    set_trace_processors([])
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        await _run_agent(base_url, streamed=False, simple=True)
    finally:
        instrumentor.uninstrument()
        provider.force_flush()
    return exporter.files


@contextlib.contextmanager
def openai_v2_recording() -> Iterator[tuple[Any, Any, Any]]:
    """``(tracer provider, span exporter, log exporter)`` in memory, the OpenAI client
    instrumented by ``opentelemetry-instrumentation-openai-v2`` into them until the end."""
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    try:
        yield tracer_provider, spans, logs
    finally:
        instrumentor.uninstrument()


async def record_otel_openai(base_url: str, *, stream: bool = False) -> dict[str, Any]:
    """OTLP/JSON of the OpenAI client tool loop under ``opentelemetry-instrumentation-openai-v2``,
    its message log events folded into the spans (``spans_to_otlp(spans, events)``)."""
    from openai import OpenAIError

    from signal_eval_cli.traces.otlp_encode import spans_to_otlp

    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    # a refused call: recorded as far as it got, its error in the trace
    with openai_v2_recording() as (_, spans, logs), contextlib.suppress(OpenAIError):
        await script.openai_tool_loop(base_url, script.QUESTION, stream=stream)
    events = [
        (r.log_record.span_id, r.log_record.event_name, r.log_record.body)
        for r in logs.get_finished_logs()
    ]
    return spans_to_otlp(spans.get_finished_spans(), events)


def _dumps(value: Any) -> str:
    from langchain_core.load import dumpd

    return json.dumps(dumpd(value))


async def _langgraph_lines(base_url: str, mode: str, simple: bool) -> list[str]:
    graph = script.langgraph_graph(base_url, simple=simple)
    state = {"messages": [("user", "Hi" if simple else script.QUESTION)]}
    if mode == "events":
        return [_dumps(e) async for e in graph.astream_events(state, version="v2")]
    if mode in ("chat", "debug"):  # no "updates": tokens and custom events, as chat UIs
        modes = ["messages", "custom"] if mode == "chat" else ["debug"]  # stream; or debug
        return [_dumps(list(item)) async for item in graph.astream(state, stream_mode=modes)]
    if mode in ("updates", "values", "messages", "tasks"):  # one mode, as most code streams
        stream = graph.astream(state, stream_mode=mode)  # messages: (message, metadata)
        return [_dumps(list(i) if isinstance(i, tuple) else i) async for i in stream]
    stream = graph.astream(state, stream_mode=["values", "updates", "messages"])
    return [_dumps(list(item)) async for item in stream]


async def record_langgraph(base_url: str, mode: str = "events", *, simple: bool = False) -> str:
    """JSONL of ``astream_events(version="v2")``, of multi-mode ``astream`` (``stream``;
    ``chat``: ``["messages", "custom"]``; ``debug``: ``["debug"]``), or of one-mode ``astream`` (``updates``,
    ``values``, ``messages``, ``tasks``)."""
    return "\n".join(await _langgraph_lines(base_url, mode, simple)) + "\n"


async def record_langgraph_answer(base_url: str) -> str:
    """``astream_events`` JSONL of a graph whose state has no messages."""
    graph = script.langgraph_answer_graph(base_url)
    events = graph.astream_events({"question": "Hi"}, version="v2")
    return "\n".join([_dumps(e) async for e in events]) + "\n"


async def record_langgraph_lookup(base_url: str) -> str:
    """``astream_events`` JSONL of a graph whose node calls a tool itself."""
    graph = script.langgraph_lookup_graph(base_url)
    events = graph.astream_events({"question": "Hi"}, version="v2")
    return "\n".join([_dumps(e) async for e in events]) + "\n"


async def record_langgraph_agent_node(base_url: str) -> str:
    """``astream_events`` JSONL of a graph whose node is a prebuilt react agent."""
    graph = script.langgraph_agent_node_graph(base_url)
    events = graph.astream_events({"messages": [("user", "Hi")]}, version="v2")
    return "\n".join([_dumps(e) async for e in events]) + "\n"


async def record_langgraph_goto(base_url: str, mode: str) -> str:
    """JSONL of the graph whose ``router`` hands off by ``Command(goto=...)``:
    ``astream_events`` (``mode="events"``), else one-mode ``astream``."""
    graph = script.langgraph_goto_graph(base_url)
    state = {"messages": [("user", "Hi")]}
    if mode == "events":
        return (
            "\n".join([_dumps(e) async for e in graph.astream_events(state, version="v2")]) + "\n"
        )
    stream = graph.astream(state, stream_mode=mode)
    return "\n".join([_dumps(i) async for i in stream]) + "\n"


async def record_langgraph_parallel(base_url: str) -> str:
    """``astream(stream_mode="messages")`` JSONL of two nodes one step runs in parallel."""
    graph = script.langgraph_parallel_graph(base_url)
    stream = graph.astream({"messages": [("user", script.QUESTION)]}, stream_mode="messages")
    return "\n".join([_dumps(list(i)) async for i in stream]) + "\n"


async def record_langgraph_functional(base_url: str, modes: list[str] | str | None = None) -> str:
    """JSONL of the functional API's entrypoint: ``astream_events``, else ``astream`` in
    ``modes`` (several, or one: ``"updates"``, ``{task: what it returned}`` a line)."""
    workflow = script.langgraph_functional(base_url)
    config = {"configurable": {"thread_id": "functional-1"}}
    if modes is None:
        events = workflow.astream_events(script.QUESTION, config, version="v2")
        return "\n".join([_dumps(e) async for e in events]) + "\n"
    stream = workflow.astream(script.QUESTION, config, stream_mode=modes)
    items = [i if isinstance(modes, str) else list(i) async for i in stream]
    return "\n".join(_dumps(i) for i in items) + "\n"


async def record_langgraph_swarm(base_url: str, mode: str) -> str:
    """``astream`` JSONL of langgraph-swarm's triage → weather (needs ``langgraph-swarm``):
    ``"updates"`` alone, or ``"stream"``: ``["values", "updates", "messages"]``."""
    graph = script.langgraph_swarm_graph(base_url)
    config = {"configurable": {"thread_id": "swarm-1"}}
    state = {"messages": [("user", script.QUESTION)]}
    if mode == "updates":
        updates = graph.astream(state, config, stream_mode="updates")
        return "\n".join([_dumps(i) async for i in updates]) + "\n"
    modes = ["values", "updates", "messages"]
    stream = graph.astream(state, config, stream_mode=modes)
    return "\n".join([_dumps(list(i)) async for i in stream]) + "\n"


async def record_langgraph_fanout(base_url: str, mode: str) -> str:
    """``astream`` JSONL in one mode (``messages``, ``tasks``) of the ``Send`` fan-out."""
    graph = script.langgraph_fanout_graph(base_url)
    state = {"messages": [("user", script.QUESTION)], "cities": ["Paris", "Rome"]}
    stream = graph.astream(state, stream_mode=mode)
    return "\n".join([_dumps(list(i) if isinstance(i, tuple) else i) async for i in stream]) + "\n"


async def record_langgraph_failing(base_url: str) -> str:
    """``astream_events`` JSONL of a graph whose second node raises, up to the raise."""
    graph = script.langgraph_answer_graph(base_url, publish="raise")
    lines = []
    try:
        async for event in graph.astream_events({"question": "Hi"}, version="v2"):
            lines.append(_dumps(event))
    except RuntimeError:
        pass  # what a user's recorder keeps: the events up to the exception
    return "\n".join(lines) + "\n"


async def record_langgraph_subgraph(base_url: str, *, events: bool = True) -> str:
    """JSONL of a graph handing off by ``Command`` to a subgraph: ``astream_events``,
    else multi-mode ``astream`` with ``subgraphs=True`` (``[namespace, mode, chunk]``)."""
    graph = script.langgraph_subgraph_graph(base_url)
    state = {"messages": [("user", script.QUESTION)]}
    if events:
        return (
            "\n".join([_dumps(e) async for e in graph.astream_events(state, version="v2")]) + "\n"
        )
    modes = ["values", "updates", "messages"]
    stream = graph.astream(state, stream_mode=modes, subgraphs=True)
    return "\n".join([_dumps(list(item)) async for item in stream]) + "\n"


async def record_langgraph_react(
    base_url: str, *, events: bool = True, tasks: bool = False, updates: bool = False
) -> str:
    """JSONL of the prebuilt react agent whose tool raises, up to the raise:
    ``astream_events``, else ``astream(stream_mode=["updates", "messages"],
    subgraphs=True)`` (``[namespace, mode, chunk]``, no ``values``: no input), or with
    ``tasks`` ``astream(stream_mode=["tasks", "values"])``, with ``updates``
    ``astream(stream_mode="updates")``."""
    graph = script.langgraph_react_agent(base_url)
    state = {"messages": [("user", script.QUESTION)]}
    if events:
        stream = graph.astream_events(state, version="v2")
    elif tasks:
        stream = graph.astream(state, stream_mode=["tasks", "values"])
    elif updates:
        stream = graph.astream(state, stream_mode="updates")
    else:
        stream = graph.astream(state, stream_mode=["updates", "messages"], subgraphs=True)
    lines = []
    try:
        async for item in stream:
            lines.append(_dumps(list(item) if isinstance(item, tuple) else item))
    except ValueError:
        pass  # what a user's recorder keeps: the stream up to the exception
    return "\n".join(lines) + "\n"


async def record_langgraph_interrupt(base_url: str, *, events: bool = True) -> str:
    """JSONL of two streams on one thread: the run up to its ``interrupt()``, then its
    ``Command(resume="yes")``: ``astream_events``, else ``astream(stream_mode="updates")``."""
    from langgraph.types import Command

    graph = script.langgraph_interrupt_graph(base_url)
    config = {"configurable": {"thread_id": "support-1"}}
    lines = []
    for input in ({"messages": [("user", "Hi")]}, Command(resume="yes")):
        if events:
            stream = graph.astream_events(input, config, version="v2")
        else:
            stream = graph.astream(input, config, stream_mode="updates")
        lines += [_dumps(item) async for item in stream]
    return "\n".join(lines) + "\n"


async def record_langgraph_paused(base_url: str) -> str:
    """``astream(stream_mode="updates")`` JSONL of the support graph compiled with
    ``interrupt_before=["tools"]``: it pauses (``__interrupt__``) with tool calls asked."""
    from langgraph.checkpoint.memory import InMemorySaver

    graph = script.langgraph_graph(base_url).builder.compile(
        checkpointer=InMemorySaver(), interrupt_before=["tools"]
    )
    config = {"configurable": {"thread_id": "support-2"}}
    state = {"messages": [("user", script.QUESTION)]}
    stream = graph.astream(state, config, stream_mode="updates")
    return "\n".join([_dumps(item) async for item in stream]) + "\n"


async def record_langgraph_supervisor(base_url: str, mode: str) -> str:
    """JSONL of the supervisor over one react agent: ``astream(stream_mode="updates")``, or
    ``"tasks"`` with ``subgraphs=True`` (``[namespace, task]``). Needs
    ``langgraph-supervisor``, which the tests do not install."""
    graph = script.langgraph_supervisor_graph(base_url)
    state = {"messages": [("user", script.QUESTION)]}
    stream = graph.astream(state, stream_mode=mode, subgraphs=mode == "tasks")
    return "\n".join([_dumps(list(i) if isinstance(i, tuple) else i) async for i in stream]) + "\n"


async def _record_all(server: MockLLMServer) -> dict[str, str]:
    url = server.openai_base_url
    return {
        "agents_support.json": json.dumps(await record_agents(url), indent=1),
        "agents_support_streamed.json": json.dumps(
            await record_agents(url, streamed=True), indent=1
        ),
        "agents_simple.json": json.dumps(await record_agents(url, simple=True), indent=1),
        "agents_responses.json": json.dumps(await record_agents(url, responses=True), indent=1),
        "agents_responses_streamed.json": json.dumps(
            await record_agents(url, streamed=True, responses=True), indent=1
        ),
        "langgraph_events.jsonl": await record_langgraph(url, "events"),
        "langgraph_stream.jsonl": await record_langgraph(url, "stream"),
        "langgraph_updates.jsonl": await record_langgraph(url, "updates"),
        "langgraph_values.jsonl": await record_langgraph(url, "values"),
        "langgraph_messages.jsonl": await record_langgraph(url, "messages"),
        "langgraph_tasks.jsonl": await record_langgraph(url, "tasks"),
        "langgraph_stream_chat.jsonl": await record_langgraph(url, "chat"),
        "langgraph_stream_debug.jsonl": await record_langgraph(url, "debug"),
        "langgraph_simple_events.jsonl": await record_langgraph(url, "events", simple=True),
        "langgraph_simple_answer_events.jsonl": await record_langgraph_answer(url),
        "langgraph_subgraph_events.jsonl": await record_langgraph_subgraph(url),
        "langgraph_node_error_events.jsonl": await record_langgraph_failing(url),
        "langgraph_subgraph_stream.jsonl": await record_langgraph_subgraph(url, events=False),
        "langgraph_react_tool_error_events.jsonl": await record_langgraph_react(url),
        "langgraph_react_tool_error_stream.jsonl": await record_langgraph_react(url, events=False),
        "langgraph_react_tool_error_tasks.jsonl": await record_langgraph_react(
            url, events=False, tasks=True
        ),
        "langgraph_react_tool_error_updates.jsonl": await record_langgraph_react(
            url, events=False, updates=True
        ),
        "langgraph_simple_interrupt_events.jsonl": await record_langgraph_interrupt(url),
        "langgraph_simple_interrupt_updates.jsonl": await record_langgraph_interrupt(
            url, events=False
        ),
        "langgraph_paused_before_tools_updates.jsonl": await record_langgraph_paused(url),
        "langgraph_tool_in_node_events.jsonl": await record_langgraph_lookup(url),
        "langgraph_agent_node_events.jsonl": await record_langgraph_agent_node(url),
        "langgraph_fanout_messages.jsonl": await record_langgraph_fanout(url, "messages"),
        "langgraph_parallel_messages.jsonl": await record_langgraph_parallel(url),
        "langgraph_functional_events.jsonl": await record_langgraph_functional(url),
        "langgraph_functional_stream.jsonl": await record_langgraph_functional(
            url, ["updates", "messages"]
        ),
        "langgraph_functional_updates.jsonl": await record_langgraph_functional(url, "updates"),
        "langgraph_goto_events.jsonl": await record_langgraph_goto(url, "events"),
        "langgraph_goto_updates.jsonl": await record_langgraph_goto(url, "updates"),
        "langgraph_fanout_tasks.jsonl": await record_langgraph_fanout(url, "tasks"),
        "langgraph_supervisor_updates.jsonl": await record_langgraph_supervisor(url, "updates"),
        "langgraph_swarm_updates.jsonl": await record_langgraph_swarm(url, "updates"),
        "langgraph_swarm_stream.jsonl": await record_langgraph_swarm(url, "stream"),
        "langgraph_supervisor_subgraph_tasks.jsonl": await record_langgraph_supervisor(
            url, "tasks"
        ),
        "agents_max_turns.json": json.dumps(await record_agents(url, max_turns=2), indent=1),
        "agents_model_error.json": json.dumps(await record_agents_model_error(server), indent=1),
        "agents_guardrail_error.json": json.dumps(await record_agents(url, guarded=True), indent=1),
        "agents_guardrail_streamed_error.json": json.dumps(
            await record_agents(url, guarded=True, streamed=True), indent=1
        ),
        "agents_output_guardrail_error.json": json.dumps(
            await record_agents(url, simple=True, output_guarded=True), indent=1
        ),
        "otel_agents_bridge.json": json.dumps(await record_otel_agents(url), indent=1),
        "otel_agents_bridge_max_turns.json": json.dumps(
            await record_otel_agents(url, max_turns=2), indent=1
        ),
        "otel_agents_bridge_streamed.json": json.dumps(
            await record_otel_agents(url, streamed=True), indent=1
        ),
        "otel_agents_bridge_guardrail_error.json": json.dumps(
            await record_otel_agents(url, guarded=True), indent=1
        ),
        "otel_agents_bridge_output_guardrail_error.json": json.dumps(
            await record_otel_agents(url, output_guarded=True), indent=1
        ),
        **{
            f"otel_agents_bridge_simple_flush{n}.json": json.dumps(flush, indent=1)
            for n, flush in enumerate(await record_otel_agents_flushes(url), 1)
        },
        "otel_agents_bridge_console.json": await record_otel_agents_console(url),
        "otel_openai.json": json.dumps(await record_otel_openai(url), indent=1),
        "otel_openai_model_error.json": json.dumps(
            await record_otel_openai_model_error(server), indent=1
        ),
        "otel_openai_streamed.json": json.dumps(
            await record_otel_openai(url, stream=True), indent=1
        ),
    }


def main() -> None:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    with MockLLMServer(responder=script.responder) as server:
        writes = asyncio.run(_record_all(server))
    for name, text in writes.items():
        (FIXTURES / name).write_text(text, encoding="utf-8")
        print(f"wrote {FIXTURES / name}")


if __name__ == "__main__":
    main()
