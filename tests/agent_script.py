"""One scripted support conversation, run by real frameworks against the loopback mock.

The mock answers by who is asking (the system prompt names the agent) and how far the
conversation got (assistant turns already in the request), so every framework sees
the same model: triage hands off to ``weather``, which calls ``get_weather`` twice in
one response (Paris, Rome), then ``get_alerts`` (which raises), then answers.
``simple`` answers at once, with no tools.

The builders import their framework lazily: this module is imported by tests that
may run without any framework.
"""

from __future__ import annotations

from typing import Any

from mock_servers import Call, Reply, ToolUse

MODEL = "mock-model"
QUESTION = "What is the weather in Paris and Rome?"
ANSWER = "Paris and Rome are sunny today."
TRIAGE_PROMPT = "You are triage: hand weather questions to the weather agent."
WEATHER_PROMPT = "You are weather: look the weather up with your tools."
SIMPLE_PROMPT = "You are simple: answer directly."


def responder(call: Call) -> Reply:
    """The scripted model: the next step of the conversation for the agent asking."""
    system = call.system or str(call.body.get("instructions") or "")  # Responses: instructions
    assistant_turns = _assistant_turns(call.body)
    if system.startswith("You are simple"):
        return Reply("Hello there, friend.", input_tokens=12, output_tokens=4)
    if system.startswith("You are triage"):
        return Reply(
            tool_calls=[ToolUse("transfer_to_weather", {}, "call_handoff")],
            input_tokens=20,
            output_tokens=5,
        )
    if assistant_turns <= 1:
        return Reply(
            tool_calls=[
                ToolUse("get_weather", {"city": "Paris"}, "call_paris"),
                ToolUse("get_weather", {"city": "Rome"}, "call_rome"),
            ],
            input_tokens=30,
            output_tokens=10,
        )
    if assistant_turns == 2:
        return Reply(
            tool_calls=[ToolUse("get_alerts", {"city": "Paris"}, "call_alerts")],
            input_tokens=40,
            output_tokens=6,
        )
    return Reply(ANSWER, input_tokens=50, output_tokens=7)


def _assistant_turns(body: dict[str, Any]) -> int:
    """Model turns already in the conversation: assistant messages (Chat Completions), or
    assistant messages and runs of ``function_call`` items (a Responses ``input``)."""
    if "messages" in body:
        return sum(1 for m in body["messages"] if m.get("role") == "assistant")
    turns, previous = 0, None
    for item in body.get("input") or []:
        kind = item.get("type") or "message"
        if item.get("role") == "assistant" or (kind == "function_call" != previous):
            turns += 1
        previous = kind
    return turns


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


def get_alerts(city: str) -> str:
    """Weather alerts for a city."""
    raise ValueError(f"alerts service down for {city}")


# -- OpenAI Agents SDK -------------------------------------------------------------


def agents_sdk_agents(base_url: str, *, simple: bool = False, responses: bool = False) -> Any:
    """The triage agent (with its weather handoff), or the tool-less ``simple`` agent;
    on Chat Completions, or with ``responses`` on the SDK's default Responses model."""
    from agents import (
        Agent,
        ModelSettings,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        function_tool,
    )
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="sk-mock", max_retries=0)
    kind = OpenAIResponsesModel if responses else OpenAIChatCompletionsModel
    model = kind(model=MODEL, openai_client=client)
    settings = ModelSettings(include_usage=True)  # streamed calls report tokens too
    if simple:
        return Agent(
            name="simple", instructions=SIMPLE_PROMPT, model=model, model_settings=settings
        )
    weather = Agent(
        name="weather",
        instructions=WEATHER_PROMPT,
        model=model,
        model_settings=settings,
        tools=[function_tool(get_weather), function_tool(get_alerts)],
    )
    return Agent(
        name="triage",
        instructions=TRIAGE_PROMPT,
        model=model,
        model_settings=settings,
        handoffs=[weather],
    )


# -- LangGraph ---------------------------------------------------------------------


def langgraph_graph(base_url: str, *, simple: bool = False) -> Any:
    """triage → (transfer_to_weather) → weather ⇄ tools, with ``handle_tool_errors``."""
    from langchain_core.messages import SystemMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    llm = ChatOpenAI(
        model=MODEL, base_url=base_url, api_key="sk-mock", max_retries=0, stream_usage=True
    )
    graph = StateGraph(MessagesState)
    if simple:

        async def simple_node(state):  # type: ignore[no-untyped-def]  # LangGraph reads no annotation here
            reply = await llm.ainvoke([SystemMessage(SIMPLE_PROMPT), *state["messages"]])
            return {"messages": [reply]}

        graph.add_node("simple", simple_node)
        graph.add_edge(START, "simple")
        graph.add_edge("simple", END)
        return graph.compile()

    tools = [tool(get_weather), tool(get_alerts)]

    @tool
    def transfer_to_weather() -> str:
        """Hand the conversation to the weather agent."""
        return "transferred"

    triage_llm = llm.bind_tools([transfer_to_weather])
    weather_llm = llm.bind_tools(tools)

    async def triage(state):  # type: ignore[no-untyped-def]  # LangGraph reads no annotation here
        reply = await triage_llm.ainvoke([SystemMessage(TRIAGE_PROMPT), *state["messages"]])
        handed = [
            ToolMessage("Transferred to weather", tool_call_id=c["id"], name=c["name"])
            for c in reply.tool_calls
        ]
        return {"messages": [reply, *handed]}

    async def weather(state):  # type: ignore[no-untyped-def]  # LangGraph reads no annotation here
        reply = await weather_llm.ainvoke([SystemMessage(WEATHER_PROMPT), *state["messages"]])
        return {"messages": [reply]}

    def after_weather(state):  # type: ignore[no-untyped-def]
        last = state["messages"][-1]
        return "tools" if getattr(last, "tool_calls", None) else END

    graph.add_node("triage", triage)
    graph.add_node("weather", weather)
    graph.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    graph.add_edge(START, "triage")
    graph.add_edge("triage", "weather")
    graph.add_conditional_edges("weather", after_weather, ["tools", END])
    graph.add_edge("tools", "weather")
    return graph.compile()
