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

import asyncio
import operator
import threading
import warnings
from typing import Annotated, Any

from mock_servers import Call, Reply, ToolUse

MODEL = "mock-model"
QUESTION = "What is the weather in Paris and Rome?"
ANSWER = "Paris and Rome are sunny today."
TRIAGE_PROMPT = "You are triage: hand weather questions to the weather agent."
WEATHER_PROMPT = "You are weather: look the weather up with your tools."
SIMPLE_PROMPT = "You are simple: answer directly."
REACT_PROMPT = "You are react: look the weather and its alerts up at once."


PARIS = ToolUse("get_weather", {"city": "Paris"}, "call_paris")
ROME = ToolUse("get_weather", {"city": "Rome"}, "call_rome")
ALERTS = ToolUse("get_alerts", {"city": "Paris"}, "call_alerts")


def _asks(*calls: ToolUse, tokens: tuple[int, int]) -> Reply:
    return Reply(tool_calls=list(calls), input_tokens=tokens[0], output_tokens=tokens[1])


def responder(call: Call) -> Reply:
    """The scripted model: the next step of the conversation for the agent asking."""
    system = call.system or str(call.body.get("instructions") or "")  # Responses: instructions
    assistant_turns = _assistant_turns(call.body)
    if system.startswith("You are simple"):
        return Reply("Hello there, friend.", input_tokens=12, output_tokens=4)
    if system.startswith("You are react"):  # both tools at once: get_alerts raises
        return _asks(PARIS, ALERTS, tokens=(25, 9))
    if system.startswith(("You are supervisor", "You are router")):  # hands off, answers
        target = "forecaster" if system.startswith("You are supervisor") else "weather"
        if f"transfer_to_{target}" not in _asked(call.body):
            return _asks(ToolUse(f"transfer_to_{target}", {}, "call_handoff"), tokens=(20, 5))
        return Reply(ANSWER, input_tokens=50, output_tokens=7)
    if system.startswith("You are forecaster"):  # both cities at once, then says so
        if "get_weather" not in _asked(call.body):
            return _asks(PARIS, ROME, tokens=(30, 10))
        return Reply("Paris and Rome: sunny.", input_tokens=40, output_tokens=6)
    if system.startswith("You are forecast"):  # one city a call (a Send fan-out's)
        city = "Rome" if "Rome" in call.last_user_text else "Paris"
        return Reply(f"{city}: sunny", input_tokens=10, output_tokens=2)
    if system.startswith("You are summary"):
        return Reply(ANSWER, input_tokens=15, output_tokens=3)
    if system.startswith("You are triage"):
        return _asks(ToolUse("transfer_to_weather", {}, "call_handoff"), tokens=(20, 5))
    if assistant_turns == 0:
        return _asks(PARIS, ROME, tokens=(30, 10))
    if assistant_turns == 1:
        return _asks(ALERTS, tokens=(40, 6))
    return Reply(ANSWER, input_tokens=50, output_tokens=7)


def _assistant_turns(body: dict[str, Any]) -> int:
    """The weather agent's model turns so far (triage's handoff is not one): assistant
    messages (Chat Completions), or runs of ``function_call`` items (Responses ``input``)."""
    if "messages" in body:
        return sum(
            1
            for m in body["messages"]
            if m.get("role") == "assistant" and not _is_handoff(m.get("tool_calls") or [])
        )
    turns, previous = 0, None
    for item in body.get("input") or []:
        kind = item.get("type") or "message"
        if kind == "function_call" != previous and not _is_handoff([item]):
            turns += 1
        previous = kind
    return turns


def _asked(body: dict[str, Any]) -> list[str]:
    """The tools the conversation's assistant messages asked for (Chat Completions)."""
    calls = [c for m in body.get("messages", []) for c in m.get("tool_calls") or []]
    return [(c.get("function") or {}).get("name") for c in calls]


def _is_handoff(calls: list[Any]) -> bool:
    names = [(c.get("function") or c).get("name") or "" for c in calls]
    return any(name.startswith("transfer_to_") for name in names)


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


def get_alerts(city: str) -> str:
    """Weather alerts for a city."""
    raise ValueError(f"alerts service down for {city}")


# -- OpenAI Agents SDK -------------------------------------------------------------


def agents_sdk_agents(
    base_url: str,
    *,
    simple: bool = False,
    responses: bool = False,
    guarded: bool = False,
    output_guarded: bool = False,
) -> Any:
    """The triage agent (with its weather handoff), or the tool-less ``simple`` agent;
    on Chat Completions, or with ``responses`` on the SDK's default Responses model.
    ``guarded``: triage has an input guardrail whose tripwire always triggers;
    ``output_guarded``: the agent that answers (simple, or weather) has an output guardrail
    whose tripwire triggers on its answer (``Runner.run`` raises: the user never gets it)."""
    from agents import (
        Agent,
        GuardrailFunctionOutput,
        ModelSettings,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        function_tool,
        input_guardrail,
        output_guardrail,
    )
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="sk-mock", max_retries=0)
    kind = OpenAIResponsesModel if responses else OpenAIChatCompletionsModel
    model = kind(model=MODEL, openai_client=client)
    settings = ModelSettings(include_usage=True)  # streamed calls report tokens too

    @output_guardrail
    async def leaks(context: Any, agent: Any, output: Any) -> Any:
        return GuardrailFunctionOutput(output_info={"leak": output}, tripwire_triggered=True)

    checked = [leaks] if output_guarded else []
    if simple:
        return Agent(
            name="simple",
            instructions=SIMPLE_PROMPT,
            model=model,
            model_settings=settings,
            output_guardrails=checked,
        )
    weather = Agent(
        name="weather",
        instructions=WEATHER_PROMPT,
        model=model,
        model_settings=settings,
        tools=[function_tool(get_weather), function_tool(get_alerts)],
        output_guardrails=checked,
    )

    @input_guardrail
    async def off_topic(context: Any, agent: Any, input: Any) -> Any:
        return GuardrailFunctionOutput(output_info={"topic": "weather"}, tripwire_triggered=True)

    return Agent(
        name="triage",
        instructions=TRIAGE_PROMPT,
        model=model,
        model_settings=settings,
        handoffs=[weather],
        input_guardrails=[off_topic] if guarded else [],
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


PUBLISHING = threading.Event()  # a hanging publish node has started


def langgraph_answer_graph(base_url: str, *, publish: str | None = None) -> Any:
    """One ``answer`` node keeping the simple agent's reply in a state field of its own
    (``{"question", "answer"}``, no ``messages``), as many LangGraph apps keep state.
    ``publish``: a ``publish`` node after it that ``"raise"``s (the run stops there) or
    ``"hang"``s (waits for good, as a stuck call does, once it has set ``PUBLISHING``)."""
    from typing import TypedDict

    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict, total=False):
        question: str
        answer: str

    llm = ChatOpenAI(
        model=MODEL, base_url=base_url, api_key="sk-mock", max_retries=0, stream_usage=True
    )

    async def answer(state: State) -> State:
        reply = await llm.ainvoke([SystemMessage(SIMPLE_PROMPT), HumanMessage(state["question"])])
        return {"answer": str(reply.content)}

    async def publishing(state: State) -> State:
        if publish == "hang":
            PUBLISHING.set()
            await asyncio.Event().wait()
        raise RuntimeError("publishing service unavailable")

    graph = StateGraph(State)
    graph.add_node("answer", answer)
    graph.add_edge(START, "answer")
    if publish is not None:
        graph.add_node("publish", publishing)
        graph.add_edge("answer", "publish")
        graph.add_edge("publish", END)
    else:
        graph.add_edge("answer", END)
    return graph.compile()


def langgraph_react_agent(base_url: str) -> Any:
    """LangGraph's prebuilt ``create_react_agent`` (a ``ToolNode`` with its default error
    handling: a tool's ``ValueError`` is raised, not returned), asked for both tools in one
    response: ``get_weather`` and ``get_alerts`` run as parallel tasks, and the run ends
    with ``get_alerts``' exception."""
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    llm = ChatOpenAI(
        model=MODEL, base_url=base_url, api_key="sk-mock", max_retries=0, stream_usage=True
    )
    with warnings.catch_warnings():  # moved to langchain.agents in 1.0, still LangGraph's
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(
            llm, [tool(get_weather), tool(get_alerts)], prompt=REACT_PROMPT, name="react"
        )


def langgraph_lookup_graph(base_url: str) -> Any:
    """A ``lookup`` node that calls get_weather itself (no model asked for it) and keeps the
    result in a state field, then an ``answer`` node: a tool run no ToolMessage returns."""
    from typing import TypedDict

    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict, total=False):
        question: str
        weather: str
        answer: str

    llm = ChatOpenAI(
        model=MODEL, base_url=base_url, api_key="sk-mock", max_retries=0, stream_usage=True
    )
    weather_tool = tool(get_weather)

    async def lookup(state: State) -> State:
        return {"weather": str(await weather_tool.ainvoke({"city": "Paris"}))}

    async def answer(state: State) -> State:
        reply = await llm.ainvoke([SystemMessage(SIMPLE_PROMPT), HumanMessage(state["question"])])
        return {"answer": str(reply.content)}

    graph = StateGraph(State)
    graph.add_node("lookup", lookup)
    graph.add_node("answer", answer)
    graph.add_edge(START, "lookup")
    graph.add_edge("lookup", "answer")
    graph.add_edge("answer", END)
    return graph.compile()


def langgraph_interrupt_graph(base_url: str) -> Any:
    """``answer`` then ``approve``, which asks a human (``interrupt``) before it goes on;
    with a checkpointer, so a ``Command(resume=...)`` on the same thread finishes it."""
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.types import interrupt

    llm = ChatOpenAI(
        model=MODEL, base_url=base_url, api_key="sk-mock", max_retries=0, stream_usage=True
    )

    async def answer(state):  # type: ignore[no-untyped-def]  # LangGraph reads no annotation here
        return {"messages": [await llm.ainvoke([SystemMessage(SIMPLE_PROMPT), *state["messages"]])]}

    def approve(state):  # type: ignore[no-untyped-def]
        verdict = interrupt({"question": "publish?", "draft": state["messages"][-1].content})
        return {"messages": [HumanMessage(f"approved: {verdict}")]}

    graph = StateGraph(MessagesState)
    graph.add_node("answer", answer)
    graph.add_node("approve", approve)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", "approve")
    graph.add_edge("approve", END)
    return graph.compile(checkpointer=InMemorySaver())


def langgraph_subgraph_graph(base_url: str) -> Any:
    """The support conversation as many graphs are built: triage hands off by returning
    a ``Command`` (serialized as its repr: the messages it adds are not in its output),
    and weather ⇄ tools run in a subgraph, whose state the parent's ``research`` node
    returns whole (every message again, tool results under ids ``add_messages`` gave)."""
    from langchain_core.messages import ToolMessage
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.types import Command

    full = langgraph_graph(base_url)  # its nodes, rewired
    nodes = full.builder.nodes

    async def triage(state):  # type: ignore[no-untyped-def]  # LangGraph reads no annotation here
        update = await nodes["triage"].runnable.ainvoke(state)
        assert isinstance(update["messages"][-1], ToolMessage)
        return Command(goto="research", update=update)

    research = StateGraph(MessagesState)
    research.add_node("weather", nodes["weather"].runnable)
    research.add_node("tools", nodes["tools"].runnable)
    research.add_edge(START, "weather")
    research.add_conditional_edges(
        "weather", lambda s: "tools" if s["messages"][-1].tool_calls else END, ["tools", END]
    )
    research.add_edge("tools", "weather")
    graph = StateGraph(MessagesState)
    graph.add_node("triage", triage, destinations=("research",))
    graph.add_node("research", research.compile())
    graph.add_edge(START, "triage")
    graph.add_edge("research", END)
    return graph.compile()


def langgraph_supervisor_graph(base_url: str, *, tools: bool = True) -> Any:
    """langgraph-supervisor's ``create_supervisor`` over one prebuilt react agent,
    ``forecaster`` (get_weather for two cities in one response; without ``tools``, it
    answers at once, as ``simple`` does): the supervisor hands off by a tool that returns
    ``Command(graph=Command.PARENT)``, and the agent hands back by messages the library
    writes itself (``"Transferring back to supervisor"``)."""
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from langgraph_supervisor import create_supervisor

    llm = ChatOpenAI(
        model=MODEL, base_url=base_url, api_key="sk-mock", max_retries=0, stream_usage=True
    )
    with warnings.catch_warnings():  # moved to langchain.agents in 1.0, still LangGraph's
        warnings.simplefilter("ignore", DeprecationWarning)
        forecaster = create_react_agent(
            llm,
            [tool(get_weather)] if tools else [],
            prompt="You are forecaster." if tools else SIMPLE_PROMPT,
            name="forecaster",
        )
        return create_supervisor([forecaster], model=llm, prompt="You are supervisor.").compile()


def langgraph_swarm_graph(base_url: str) -> Any:
    """langgraph-swarm's ``create_swarm`` of two prebuilt react agents: ``triage``, whose
    one tool hands off to ``weather`` (``create_handoff_tool``: a ``Command`` to the parent
    graph), and ``weather`` with get_weather and get_alerts (which raises: its
    ``ToolNode(handle_tool_errors=True)`` sends the error back to the model), which then
    answers."""
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import ToolNode, create_react_agent
    from langgraph_swarm import create_handoff_tool, create_swarm

    llm = ChatOpenAI(
        model=MODEL, base_url=base_url, api_key="sk-mock", max_retries=0, stream_usage=True
    )
    with warnings.catch_warnings():  # moved to langchain.agents in 1.0, still LangGraph's
        warnings.simplefilter("ignore", DeprecationWarning)
        triage = create_react_agent(
            llm, [create_handoff_tool(agent_name="weather")], prompt=TRIAGE_PROMPT, name="triage"
        )
        tools = ToolNode([tool(get_weather), tool(get_alerts)], handle_tool_errors=True)
        weather = create_react_agent(llm, tools, prompt=WEATHER_PROMPT, name="weather")
    swarm = create_swarm([triage, weather], default_active_agent="triage")
    return swarm.compile(checkpointer=InMemorySaver())


def langgraph_router_agent(base_url: str) -> Any:
    """A prebuilt react agent, ``router``, whose one tool is ``transfer_to_weather`` (a
    plain tool: it says so and the agent answers): a handoff asked and run as a tool."""
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    @tool
    def transfer_to_weather() -> str:
        """Hand the conversation to the weather agent."""
        return "Transferred to weather"

    llm = ChatOpenAI(
        model=MODEL, base_url=base_url, api_key="sk-mock", max_retries=0, stream_usage=True
    )
    with warnings.catch_warnings():  # moved to langchain.agents in 1.0, still LangGraph's
        warnings.simplefilter("ignore", DeprecationWarning)
        return create_react_agent(
            llm, [transfer_to_weather], prompt="You are router.", name="router"
        )


def langgraph_agent_node_graph(base_url: str) -> Any:
    """A prebuilt react agent named ``simple`` (no tools) as the one node, ``simple``, of
    a parent graph, as supervisors and swarms hold their agents."""
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import create_react_agent

    llm = ChatOpenAI(
        model=MODEL, base_url=base_url, api_key="sk-mock", max_retries=0, stream_usage=True
    )
    with warnings.catch_warnings():  # moved to langchain.agents in 1.0, still LangGraph's
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_react_agent(llm, [], prompt=SIMPLE_PROMPT, name="simple")
    graph = StateGraph(MessagesState)
    graph.add_node("simple", agent)
    graph.add_edge(START, "simple")
    graph.add_edge("simple", END)
    return graph.compile()


def langgraph_goto_graph(base_url: str) -> Any:
    """A ``router`` node that hands the graph to ``simple`` by returning ``Command(goto=...)``
    (no transfer tool, no model: a rule's routing, as LangGraph's multi-agent networks hand
    off), then ``simple`` answers."""
    from typing import Literal

    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.types import Command

    simple = langgraph_graph(base_url, simple=True).builder.nodes["simple"].runnable

    def router(state: MessagesState) -> Command[Literal["simple"]]:
        return Command(goto="simple")

    graph = StateGraph(MessagesState)
    graph.add_node("router", router)
    graph.add_node("simple", simple)
    graph.add_edge(START, "router")
    graph.add_edge("simple", END)
    return graph.compile()


def langgraph_parallel_graph(base_url: str) -> Any:
    """``paris`` and ``rome``, both started by START's edges (one step, run in parallel),
    each asking the model about its city, then ``summary`` answers from their messages."""
    from typing import TypedDict

    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict, total=False):
        messages: Annotated[list[Any], operator.add]

    llm = ChatOpenAI(
        model=MODEL, base_url=base_url, api_key="sk-mock", max_retries=0, stream_usage=True
    )

    def forecast(city: str) -> Any:
        async def node(state: State) -> State:
            ask = [SystemMessage("You are forecast."), HumanMessage(f"Weather in {city}?")]
            return {"messages": [await llm.ainvoke(ask)]}

        return node

    async def summary(state: State) -> State:
        return {
            "messages": [await llm.ainvoke([SystemMessage("You are summary."), *state["messages"]])]
        }

    graph = StateGraph(State)
    graph.add_node("paris", forecast("Paris"))
    graph.add_node("rome", forecast("Rome"))
    graph.add_node("summary", summary)
    graph.add_edge(START, "paris")
    graph.add_edge(START, "rome")
    graph.add_edge(["paris", "rome"], "summary")
    graph.add_edge("summary", END)
    return graph.compile()


def langgraph_functional(base_url: str) -> Any:
    """The functional API: an ``@entrypoint`` (given the question as a string) that runs the
    ``lookup`` task for two cities at once (each calls get_weather), then the ``answer``
    task, which asks the model, and returns its text."""
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.func import entrypoint, task

    llm = ChatOpenAI(
        model=MODEL, base_url=base_url, api_key="sk-mock", max_retries=0, stream_usage=True
    )
    weather = tool(get_weather)

    @task
    async def lookup(city: str) -> str:
        return str(await weather.ainvoke({"city": city}))

    @task
    async def answer(question: str) -> str:
        reply = await llm.ainvoke([SystemMessage(SIMPLE_PROMPT), HumanMessage(question)])
        return str(reply.content)

    @entrypoint(checkpointer=InMemorySaver())
    async def workflow(question: str) -> str:
        await asyncio.gather(lookup("Paris"), lookup("Rome"))
        return str(await answer(question))

    return workflow


def langgraph_fanout_graph(base_url: str) -> Any:
    """``Send`` fan-out: ``forecast`` runs once per city of the state, in parallel (each
    asks the model about its city), then ``summary`` answers from their messages."""
    from typing import TypedDict

    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    class State(TypedDict, total=False):
        messages: Annotated[list[Any], operator.add]
        cities: list[str]

    llm = ChatOpenAI(
        model=MODEL, base_url=base_url, api_key="sk-mock", max_retries=0, stream_usage=True
    )

    async def forecast(sent):  # type: ignore[no-untyped-def]  # LangGraph reads no annotation here
        ask = [SystemMessage("You are forecast."), HumanMessage(f"Weather in {sent['city']}?")]
        return {"messages": [await llm.ainvoke(ask)]}

    async def summary(state):  # type: ignore[no-untyped-def]
        ask = [SystemMessage("You are summary."), *state["messages"]]
        return {"messages": [await llm.ainvoke(ask)]}

    def fan_out(state):  # type: ignore[no-untyped-def]
        return [Send("forecast", {"city": city}) for city in state["cities"]]

    graph = StateGraph(State)
    graph.add_node("forecast", forecast)
    graph.add_node("summary", summary)
    graph.add_conditional_edges(START, fan_out, ["forecast"])
    graph.add_edge("forecast", "summary")
    graph.add_edge("summary", END)
    return graph.compile()


# -- a hand-written tool loop on the OpenAI client (opentelemetry-instrumentation-openai-v2) --

LOOP_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
    for name in ("get_weather", "get_alerts")
]


async def _loop_turn(client: Any, messages: list[Any], stream: bool) -> tuple[str, list[Any]]:
    """One model call: its text and tool calls ``{id, name, arguments}`` (streamed or not)."""
    request = {"model": MODEL, "messages": messages, "tools": LOOP_TOOLS}
    if not stream:
        message = (await client.chat.completions.create(**request)).choices[0].message
        calls = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
            for c in message.tool_calls or []
        ]
        return message.content or "", calls
    chunks = await client.chat.completions.create(
        **request, stream=True, stream_options={"include_usage": True}
    )
    text, parts = "", {}
    async for chunk in chunks:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for delta in choice.delta.tool_calls or []:
                call = parts.setdefault(delta.index, {"id": None, "name": "", "arguments": ""})
                call["id"] = delta.id or call["id"]
                call["name"] += delta.function.name or ""
                call["arguments"] += delta.function.arguments or ""
    return text, [parts[i] for i in sorted(parts)]


async def openai_tool_loop(base_url: str, question: str, *, stream: bool = False) -> str:
    """The weather agent as a plain loop over ``chat.completions`` (a raising tool's error
    goes back to the model as the tool's text): two parallel calls, one more, an answer."""
    import json

    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="sk-mock", max_retries=0)
    messages: list[Any] = [
        {"role": "system", "content": WEATHER_PROMPT},
        {"role": "user", "content": question},
    ]
    while True:
        text, calls = await _loop_turn(client, messages, stream)
        if not calls:
            return text
        requested = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in calls
        ]
        messages.append({"role": "assistant", "content": None, "tool_calls": requested})
        tools = {"get_weather": get_weather, "get_alerts": get_alerts}
        for call in calls:
            try:
                result = tools[call["name"]](**json.loads(call["arguments"]))
            except ValueError as exc:
                result = f"error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
