"""Entry points the live-harness tests name: the scripted agents, built against the mock
whose URL the test puts in ``SIGNAL_EVAL_MOCK_URL``."""

from __future__ import annotations

import asyncio
import operator
import os
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

sys.path.insert(0, str(Path(__file__).parent))

import agent_script as script


def _url() -> str:
    return os.environ["SIGNAL_EVAL_MOCK_URL"]


def triage() -> Any:
    """The Agents SDK triage agent (for ``factory: openai-agents``)."""
    return script.agents_sdk_agents(_url())


def triage_responses() -> Any:
    """The same agents on the SDK's default Responses model."""
    return script.agents_sdk_agents(_url(), responses=True)


def simple_agent() -> Any:
    return script.agents_sdk_agents(_url(), simple=True)


def guarded_triage() -> Any:
    """The triage agent whose input guardrail's tripwire always triggers."""
    return script.agents_sdk_agents(_url(), guarded=True)


def output_guarded_agent() -> Any:
    """The simple agent whose output guardrail's tripwire triggers on its answer."""
    return script.agents_sdk_agents(_url(), simple=True, output_guarded=True)


def failing_graph() -> Any:
    """The answer graph whose ``publish`` node raises after the model answered."""
    return script.langgraph_answer_graph(_url(), publish="raise")


def hanging_graph() -> Any:
    """The answer graph whose ``publish`` node waits for good after the model answered."""
    return script.langgraph_answer_graph(_url(), publish="hang")


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def parallel_failing_graph() -> Any:
    """Two nodes from the start: ``publish`` raises once ``index`` has started, and
    ``index``, which would wait for ever, is cancelled by LangGraph."""
    from langgraph.graph import END, START, StateGraph

    started = asyncio.Event()

    async def index(state: Log) -> Log:
        started.set()
        await asyncio.Event().wait()
        return {"log": ["indexed"]}

    async def publish(state: Log) -> Log:
        await started.wait()
        raise RuntimeError("publishing service unavailable")

    graph = StateGraph(Log)
    for name, node in (("index", index), ("publish", publish)):
        graph.add_node(name, node)
        graph.add_edge(START, name)
        graph.add_edge(name, END)
    return graph.compile()


def graph() -> Any:
    """The LangGraph support graph (for ``factory: langgraph``)."""
    return script.langgraph_graph(_url())


async def bridged_agent(question: str) -> str:
    """The Agents SDK agent run under the OpenTelemetry GenAI bridge (``factory: otel``)."""
    from agents import Runner
    from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument()
    try:
        result = await Runner.run(triage(), question)
    finally:
        instrumentor.uninstrument()
    return str(result.final_output)


async def openai_loop(question: str) -> str:
    """A tool loop on the OpenAI client under ``opentelemetry-instrumentation-openai-v2``
    (message content as log events), streamed (``factory: otel``)."""
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument()
    try:
        return await script.openai_tool_loop(_url(), question, stream=True)
    finally:
        instrumentor.uninstrument()


def react_agent() -> Any:
    """The prebuilt react agent whose ``get_alerts`` raises (ToolNode's default handling)."""
    return script.langgraph_react_agent(_url())
