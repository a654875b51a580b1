"""Record agents under third-party OpenTelemetry instrumentations.

``tests/fixtures/traces/otel_openai_openinference.json`` (Arize's OpenInference) and
``otel_openai_openllmetry_streamed.json`` (Traceloop's OpenLLMetry): the OpenAI client tool
loop; ``otel_openinference_agents.json`` and ``otel_openinference_agents_streamed.json``: the
support conversation on the OpenAI Agents SDK under OpenInference;
``otel_openinference_langgraph.json``: the same on LangGraph under OpenInference's LangChain
instrumentation; ``otel_openinference_agents_max_turns.json``: the Agents SDK run stopped by
``max_turns=2``; ``otel_pydantic_ai_*.json``: Pydantic AI's weather agent stopped by a refused
model call and by a request limit; ``otel_openinference_agents_guardrail_error.json``: the Agents
SDK run stopped by triage's tripwire; ``otel_*_langgraph_react_tool_error.json[l]``: LangGraph's
prebuilt react agent whose tool raises, under OpenInference and under OpenLLMetry (the latter as
a Collector's file exporter writes it: a line per request). This script wrote them,
each encoded as the OpenTelemetry SDK's own OTLP exporter encodes spans, turned
into JSON by protobuf (base64 ids, enum names): the shape a user gets from
``MessageToJson(encode_spans(spans))``; ``otel_openai_collector_*.jsonl``: the OpenAI
client tool loop's spans and GenAI log records in one Collector file (record_collector_logs;
``..._inference_details`` with opentelemetry-instrumentation-openai-v2 2.4b0, run on its
own). No test imports it, and the test environment does
not install these instrumentations (they pin their own OpenTelemetry); run it from a
virtualenv with ``openai openai-agents opentelemetry-sdk opentelemetry-exporter-otlp-proto-common
openinference-instrumentation-openai openinference-instrumentation-openai-agents
openinference-instrumentation-langchain langgraph langchain-openai
opentelemetry-instrumentation-openai-agents
opentelemetry-instrumentation-openai opentelemetry-instrumentation-langchain pydantic-ai-slim[openai]``
and the repository on ``PYTHONPATH``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import agent_script as script
from mock_servers import MockLLMServer

FIXTURES = Path(__file__).parent / "fixtures" / "traces"


async def _loop(url: str, stream: bool) -> str:
    return await script.openai_tool_loop(url, script.QUESTION, stream=stream)


async def _agents(
    url: str, stream: bool, max_turns: int = 10, guarded: bool = False, output: bool = False
) -> str:
    """``output``: the simple agent whose output guardrail blocks its answer."""
    from agents import Runner
    from agents.exceptions import (
        InputGuardrailTripwireTriggered,
        MaxTurnsExceeded,
        OutputGuardrailTripwireTriggered,
    )

    agent = script.agents_sdk_agents(url, simple=output, guarded=guarded, output_guarded=output)
    question = "Hi" if output else script.QUESTION
    try:
        if stream:
            result = Runner.run_streamed(agent, question, max_turns=max_turns)
            async for _ in result.stream_events():
                pass
            return str(result.final_output)
        return str((await Runner.run(agent, question, max_turns=max_turns)).final_output)
    except (
        MaxTurnsExceeded,
        InputGuardrailTripwireTriggered,
        OutputGuardrailTripwireTriggered,
    ) as failed:  # as far as it got
        return f"failed: {failed}"


async def _langgraph(url: str, stream: bool) -> str:
    graph = script.langgraph_graph(url)
    state = await graph.ainvoke({"messages": [("user", script.QUESTION)]})
    return str(state["messages"][-1].content)


async def _react(url: str, stream: bool) -> str:
    """The prebuilt react agent, whose get_alerts raises (the run ends with it)."""
    try:
        await script.langgraph_react_agent(url).ainvoke({"messages": [("user", script.QUESTION)]})
    except ValueError as failed:
        return f"failed: {failed}"
    return "answered"


async def _router(url: str, stream: bool) -> str:
    """The react agent whose tool is a transfer: a handoff it asks for and runs."""
    state = await script.langgraph_router_agent(url).ainvoke({"messages": [("user", "Hi")]})
    return str(state["messages"][-1].content)


async def _supervisor(url: str, stream: bool) -> str:
    """langgraph-supervisor over a ``forecaster`` react agent that answers at once: a
    handoff there and back."""
    graph = script.langgraph_supervisor_graph(url, tools=False)  # small: no tool calls
    state = await graph.ainvoke({"messages": [("user", script.QUESTION)]})
    return str(state["messages"][-1].content)


async def _subgraph(url: str, stream: bool) -> str:
    """The support conversation whose triage hands off by a transfer and a ``Command``
    to ``research``, a subgraph of weather ⇄ tools."""
    graph = script.langgraph_subgraph_graph(url)
    state = await graph.ainvoke({"messages": [("user", script.QUESTION)]})
    return str(state["messages"][-1].content)


async def _goto(url: str, stream: bool) -> str:
    """The graph whose ``router`` hands off by ``Command(goto="simple")``."""
    state = await script.langgraph_goto_graph(url).ainvoke({"messages": [("user", "Hi")]})
    return str(state["messages"][-1].content)


async def _interrupted(url: str, stream: bool) -> str:
    """The graph whose ``approve`` node asks a human (``interrupt()``): it pauses there."""
    graph = script.langgraph_interrupt_graph(url)
    config = {"configurable": {"thread_id": "1"}}
    state = await graph.ainvoke({"messages": [("user", "Hi")]}, config)
    return str(state["messages"][-1].content)


def record(
    instrumentation: str,
    stream: bool,
    out: Path,
    max_turns: int = 10,
    *,
    guarded: bool = False,
    output_guarded: bool = False,
    react: bool = False,
    lines: bool = False,
    interrupted: bool = False,
    router: bool = False,
    graph: Any = None,
    unread: tuple[str, ...] = (),
    proto_names: bool = False,
    client: bool = False,
) -> None:
    """``guarded``: the Agents SDK triage with its tripwire guardrail (``output_guarded``:
    the simple agent whose output guardrail blocks its answer); ``react``: LangGraph's
    prebuilt react agent (OpenInference's or OpenLLMetry's LangChain instrumentation);
    ``interrupted``: the graph paused by ``interrupt()`` (OpenLLMetry's); ``router``: the
    react agent whose tool is ``transfer_to_weather`` (OpenInference's); ``graph``: another
    LangGraph run (``_supervisor``, ``_goto``) under either LangChain instrumentation;
    ``client``: the OpenAI client instrumented too, by the same vendor's instrumentation
    (its call spans inside the framework's); ``proto_names``: protobuf's JSON with the proto field names (``resource_spans``,
    ``string_value``: ``preserving_proto_field_name=True``), compact; ``unread``: attributes dropped from every span but a tool's (copies of the graph's state
    no importer reads, which make a file of a few model calls 100s of KB); ``lines``: written as an OTel Collector's file exporter writes what an SDK sent it span
    by span (one ``ExportTraceServiceRequest`` per line, hex ids, children first), else
    as protobuf's JSON of the SDK's OTLP request (compact when ``react``: < 50 KB)."""
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    agent: Any = _loop
    if instrumentation == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor
    elif instrumentation == "openinference-agents":
        from openinference.instrumentation.openai_agents import (
            OpenAIAgentsInstrumentor as OpenAIInstrumentor,
        )

        agent = _agents
    elif (
        instrumentation == "openllmetry-agents"
    ):  # Traceloop's opentelemetry-instrumentation-openai-agents
        from opentelemetry.instrumentation.openai_agents import (
            OpenAIAgentsInstrumentor as OpenAIInstrumentor,
        )

        agent = _agents
    elif instrumentation == "openllmetry-langchain":
        from opentelemetry.instrumentation.langchain import (
            LangchainInstrumentor as OpenAIInstrumentor,
        )

        agent = graph or (_interrupted if interrupted else _react)
    elif instrumentation == "openinference-langchain":
        from openinference.instrumentation.langchain import (
            LangChainInstrumentor as OpenAIInstrumentor,
        )

        agent = graph or (_router if router else _react if react else _langgraph)
    else:  # OpenLLMetry
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    tracer = provider.get_tracer("app")
    clients: list[Any] = []
    if client and instrumentation.startswith("openinference"):
        from openinference.instrumentation.openai import OpenAIInstrumentor as ClientInstrumentor
    elif client:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as ClientInstrumentor
    if client:
        clients.append(ClientInstrumentor())
        clients[0].instrument(tracer_provider=provider)

    async def run(url: str) -> str:
        if agent is _agents:  # the framework's own span is the root
            return await _agents(url, stream, max_turns, guarded, output_guarded)
        if agent is not _loop:
            return await agent(url, stream)
        with tracer.start_as_current_span("weather-agent"):
            return await agent(url, stream)

    try:
        with MockLLMServer(responder=script.responder) as server:
            asyncio.run(run(server.openai_base_url))
    finally:
        instrumentor.uninstrument()
        for instrumented in clients:
            instrumented.uninstrument()
    finished = spans.get_finished_spans()
    compact = {"separators": (",", ":")}
    if lines:
        from signal_eval_cli.traces.otlp_encode import spans_to_otlp

        requests = [_without(spans_to_otlp([span]), unread) for span in finished]
        text = "".join(json.dumps(request, **compact) + "\n" for request in requests)
    elif proto_names:
        text = MessageToJson(encode_spans(finished), indent=None, preserving_proto_field_name=True)
    elif unread:
        text = json.dumps(_without(json.loads(MessageToJson(encode_spans(finished))), unread))
    else:
        text = MessageToJson(encode_spans(finished), indent=None if react else 2)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out}")


def _without(request: dict[str, Any], unread: tuple[str, ...]) -> dict[str, Any]:
    """``request`` with the ``unread`` attributes of its spans dropped, but a tool's."""
    for resource in request["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                if "TOOL" in json.dumps(span["attributes"]):
                    continue
                span["attributes"] = [a for a in span["attributes"] if a["key"] not in unread]
    return request


def _forecaster(call: Any) -> Any:
    """The model of the ``structured`` run: get_weather, then ``recheck`` (which asks for a
    retry) twice, then the answer as the ``final_result`` tool's arguments."""
    from mock_servers import Reply, ToolUse

    turn = script._assistant_turns(call.body)
    steps = [
        ToolUse("get_weather", {"city": "Paris"}, "call_paris"),
        ToolUse("recheck", {"city": "Paris"}, "call_recheck"),
        ToolUse("recheck", {"city": "Rome"}, "call_recheck_2"),
        ToolUse("final_result", {"city": "Paris", "forecast": "sunny"}, "call_final"),
    ]
    return Reply(tool_calls=[steps[min(turn, 3)]], input_tokens=30 + turn, output_tokens=5)


def recheck(city: str) -> str:
    """Check a city's weather again (Paris: asks the model to retry)."""
    from pydantic_ai import ModelRetry

    if city == "Paris":
        raise ModelRetry("try another city")
    return f"{city}: sunny"


def record_pydantic_ai(out: Path, fault: str) -> None:
    """The weather agent on Pydantic AI, its own instrumentation (``InstrumentationSettings``),
    stopped by ``fault``: ``refused`` (the first model call gets HTTP 400) or ``limit`` (a
    ``UsageLimits(request_limit=1)`` the second call would pass); or, ``structured``, run to
    its ``output_type`` answer (a ``Forecast``) past a tool's ``ModelRetry``. Written as
    spans_to_otlp writes it (Pydantic AI sends the messages in span attributes)."""
    from mock_servers import Fault
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic import BaseModel
    from pydantic_ai import Agent, UsageLimits
    from pydantic_ai.exceptions import AgentRunError
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from signal_eval_cli.traces.otlp_encode import spans_to_otlp

    class Forecast(BaseModel):
        city: str
        forecast: str

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    structured = fault == "structured"
    with MockLLMServer(responder=_forecaster if structured else script.responder) as server:
        if fault == "refused":
            server.fail_next(Fault.status_code(400, "bad request: context too long"))
        client = OpenAIProvider(base_url=server.openai_base_url, api_key="sk-mock")
        agent: Any = Agent(
            OpenAIChatModel(script.MODEL, provider=client),
            name="weather",
            instructions=script.WEATHER_PROMPT,
            tools=[script.get_weather, recheck if structured else script.get_alerts],
            output_type=Forecast if structured else str,
        )
        agent.instrument = InstrumentationSettings(tracer_provider=provider)
        limits = UsageLimits(request_limit=1) if fault == "limit" else None
        with contextlib.suppress(AgentRunError):  # recorded as far as it got
            agent.run_sync(script.QUESTION, usage_limits=limits)
    out.write_text(json.dumps(spans_to_otlp(spans.get_finished_spans()), indent=1))
    print(f"wrote {out}")


def record_logfire(
    out: Path, stream: bool, refused: bool = False, agents: dict[str, Any] | None = None
) -> None:
    """The OpenAI client tool loop under Pydantic Logfire's ``instrument_openai()`` (its own
    virtualenv: ``logfire[openai]``, which pins its own OpenTelemetry), streamed or not, or
    its first call refused (HTTP 400); with ``agents``, the Agents SDK's agents so built
    (``agents_sdk_agents``'s options) under ``instrument_openai_agents()``. Written as
    spans_to_otlp writes it, without the attributes no importer reads (the tools' schemas,
    Logfire's JSON schema, code locations, the request copied again), which make a file of
    three calls 60 KB."""
    import logfire
    from mock_servers import Fault
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from signal_eval_cli.traces.otlp_encode import spans_to_otlp

    spans = InMemorySpanExporter()
    processor = SimpleSpanProcessor(spans)
    logfire.configure(send_to_logfire=False, console=False, additional_span_processors=[processor])
    if agents is not None:
        logfire.instrument_openai_agents()
    else:
        logfire.instrument_openai()

    async def run(url: str) -> Any:
        if agents is None:
            return await _loop(url, stream)
        from agents import Runner

        question = "Hi" if agents.get("simple") else script.QUESTION
        return await Runner.run(script.agents_sdk_agents(url, **agents), question)

    with MockLLMServer(responder=script.responder) as server, logfire.span("weather-agent"):
        if refused:
            server.fail_next(Fault.status_code(400, "bad request: context too long"))
        with contextlib.suppress(Exception):  # recorded as far as it got
            asyncio.run(run(server.openai_base_url))
    unread = ("gen_ai.tool.definitions", "logfire.json_schema", "code.filepath", "code.lineno")
    copies = ("code.function", "request_data", "model_config", "model_settings", "events")
    request = _without(spans_to_otlp(spans.get_finished_spans()), (*unread, *copies))
    out.write_text(json.dumps(request))
    print(f"wrote {out}")


def record_collector_logs(
    out: Path, latest: bool, content: str = "EVENT_ONLY", stream: bool = False
) -> None:
    """The OpenAI client tool loop under ``opentelemetry-instrumentation-openai-v2``, its
    spans and its GenAI log records as a Collector writes both pipelines to one file (a
    request a line, as the SDK's OTLP exporters encode them): 2.3b0's event per message
    (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``), or with ``latest`` 2.4b0's
    one ``gen_ai.client.inference.operation.details`` record per call
    (``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``, ``EVENT_ONLY``; it
    imports with opentelemetry-util-genai 1.1b0, not 1.2b0 or 1.3b0); with ``content``
    ``SPAN_ONLY`` the messages are the spans' ``gen_ai.input.messages`` and
    ``gen_ai.output.messages`` attributes, and there are no logs."""
    import os

    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from record_traces import openai_v2_recording

    if latest:
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = content if latest else "true"
    with openai_v2_recording() as (provider, spans, logs):
        root = provider.get_tracer("app").start_as_current_span("weather-agent")
        with MockLLMServer(responder=script.responder) as server, root:
            asyncio.run(_loop(server.openai_base_url, stream))
    requests = [encode_spans(spans.get_finished_spans())]
    if logs.get_finished_logs():
        requests.append(encode_logs(logs.get_finished_logs()))
    out.write_text("".join(MessageToJson(r, indent=None) + "\n" for r in requests))
    print(f"wrote {out}")


if __name__ == "__main__":
    record("openinference", False, FIXTURES / "otel_openai_openinference.json")
    record("openllmetry", True, FIXTURES / "otel_openai_openllmetry_streamed.json")
    record("openinference-agents", False, FIXTURES / "otel_openinference_agents.json")
    record("openinference-agents", True, FIXTURES / "otel_openinference_agents_streamed.json")
    record("openinference-langchain", False, FIXTURES / "otel_openinference_langgraph.json")
    out = FIXTURES / "otel_openinference_agents_max_turns.json"
    record("openinference-agents", False, out, max_turns=2)
    out = FIXTURES / "otel_openinference_agents_guardrail_error.json"
    record("openinference-agents", False, out, guarded=True)
    out = FIXTURES / "otel_openinference_agents_output_guardrail_error.json"
    record("openinference-agents", False, out, output_guarded=True)
    out = FIXTURES / "otel_openinference_langgraph_react_tool_error.json"
    record("openinference-langchain", False, out, react=True)
    out = FIXTURES / "otel_openllmetry_langgraph_react_tool_error.jsonl"
    record("openllmetry-langchain", False, out, lines=True)
    record_collector_logs(FIXTURES / "otel_openai_collector_events.jsonl", latest=False)
    out = FIXTURES / "otel_openllmetry_langgraph_interrupt.json"
    record("openllmetry-langchain", False, out, interrupted=True)
    out = FIXTURES / "otel_openinference_langgraph_transfer_tool.json"
    record("openinference-langchain", False, out, react=True, router=True)
    for name, run in (("supervisor", _supervisor), ("goto", _goto)):  # states: unread
        out = FIXTURES / f"otel_openllmetry_langgraph_{name}.jsonl"
        unread = ("traceloop.entity.input", "traceloop.entity.output", "gen_ai.task.input")
        record("openllmetry-langchain", False, out, lines=True, graph=run, unread=unread)
        out = FIXTURES / f"otel_openinference_langgraph_{name}.json"
        unread = ("input.value", "input.mime_type")
        record("openinference-langchain", False, out, react=True, graph=run, unread=unread)
    out = FIXTURES / "otel_openinference_langgraph_subgraph.json"
    unread = ("input.value", "input.mime_type")
    record("openinference-langchain", False, out, react=True, graph=_subgraph, unread=unread)
    out = FIXTURES / "otel_openllmetry_agents.json"  # on the Chat Completions model
    record("openllmetry-agents", False, out)
    for vendor in ("openinference", "openllmetry"):  # and the OpenAI client instrumented
        out = FIXTURES / f"otel_{vendor}_agents_and_client.json"
        record(f"{vendor}-agents", False, out, react=True, client=True)
    out = FIXTURES / "otel_openinference_agents_proto_names.json"
    record("openinference-agents", False, out, proto_names=True)
    record_pydantic_ai(FIXTURES / "otel_pydantic_ai_refused.json", "refused")
    record_pydantic_ai(FIXTURES / "otel_pydantic_ai_structured.json", "structured")
    record_pydantic_ai(FIXTURES / "otel_pydantic_ai_request_limit.json", "limit")
    out = FIXTURES / "otel_openai_v2_latest_spans_streamed.jsonl"  # 2.4b0, util-genai 1.1b0
    record_collector_logs(out, latest=True, content="SPAN_ONLY", stream=True)
    # in a virtualenv of logfire[openai] (5.4) and openai alone: its OpenTelemetry pins
    record_logfire(FIXTURES / "otel_logfire_openai.json", stream=False)
    record_logfire(FIXTURES / "otel_logfire_openai_streamed.json", stream=True)
    record_logfire(FIXTURES / "otel_logfire_openai_model_error.json", stream=False, refused=True)
    out = FIXTURES / "otel_logfire_agents.json"  # and openai-agents (0.24)
    record_logfire(out, stream=False, agents={})
    out = FIXTURES / "otel_logfire_agents_responses.json"  # on the SDK's Responses model
    record_logfire(out, stream=False, agents={"responses": True})
    out = FIXTURES / "otel_logfire_agents_output_guardrail_error.json"
    record_logfire(out, stream=False, agents={"simple": True, "output_guarded": True})
