"""Trace shapes real users record beyond the scripted support conversation (fixtures
recorded by tests/record_traces.py): LangGraph's prebuilt react agent whose tool raises,
in ``astream_events`` and in a multi-mode ``astream`` with subgraphs, and a run paused
by ``interrupt()`` then resumed on the same thread.
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from trace_facts import LOOP_FACTS, SUPPORT_FACTS, facts

from signal_eval_cli import EvalContext, Trace, evaluate_assertion, import_trace
from signal_eval_cli.errors import InputError
from signal_eval_cli.traces import TraceGap, detect_format, otlp
from signal_eval_cli.traces.source import Source

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
RAISED = "ValueError('alerts service down for Paris')"


def passes(trace: Trace, assertion: dict[str, Any]) -> bool:
    return evaluate_assertion(assertion, EvalContext(trace)).passed


def quietly(path: Path) -> Trace:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceGap)
        return import_trace(path)


def strictly(path: Path) -> Trace:
    """Imported with every warning an error but the redaction the Agents SDK 0.24's runs
    carry (test_a_tool_error_the_agents_sdk_redacted_reads_as_failed_and_says_why)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", ".*the Agents SDK redacted the error", TraceGap)
        return import_trace(path)


def test_a_react_agents_tool_that_raised_is_a_failed_call_and_its_nodes_error() -> None:
    """``on_tool_error`` is the call's result: the tool ran and failed. The exception ends
    the stream inside the ``tools`` node, which has the tool's error (no gap: it is known),
    not 'never finished'; the parallel call beside it kept its result."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = import_trace(FIXTURES / "langgraph_react_tool_error_events.jsonl")
    results = {s.payload["id"]: s.payload for s in trace.matching("tool:result")}
    assert results["call_alerts"]["error"] == RAISED
    assert results["call_paris"] == {
        "id": "call_paris",
        "name": "get_weather",
        "result": "Paris: sunny",
    }
    (call,) = [s for s in trace.matching("tool:call") if s.payload["name"] == "get_alerts"]
    assert call.payload["input"] == {"city": "Paris"} and call.agent == "tools"
    (turn,) = trace.matching("provider:start")
    assert call.parent == turn.id  # requested by the model's one response
    (error,) = trace.matching("agent:error")
    assert error.payload == {"agent": "tools", "error": RAISED}
    assert passes(trace, {"type": "tool.failed", "name": "get_alerts"})
    assert not passes(trace, {"type": "tool.failed", "name": "get_weather"})
    assert passes(trace, {"type": "tool.parallel", "tools": ["get_weather", "get_alerts"]})
    assert not passes(trace, {"type": "agent.completed", "agentId": "tools"})
    assert passes(trace, {"type": "agent.completed", "agentId": "agent"})


def test_a_returned_tool_error_is_one_failed_call_not_two() -> None:
    """Under ``handle_tool_errors=True`` the tool's ``on_tool_error`` and the error message
    its node returns are the same call: one result, the message's text."""
    trace = import_trace(FIXTURES / "langgraph_events.jsonl")
    alerts = [s for s in trace.matching("tool:result") if s.payload["name"] == "get_alerts"]
    assert len(alerts) == 1 and alerts[0].payload["result"].startswith("Error: ValueError")
    assert not list(trace.matching("agent:error"))


def test_a_node_running_beside_the_one_a_tool_raised_in_was_stopped(tmp_path: Path) -> None:
    """Two parallel ``tools`` tasks, one raising: the other, cut off with it, was stopped
    by that error; it did not raise it."""
    lines = (FIXTURES / "langgraph_react_tool_error_events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    paris = next(
        e for e in events if e["event"] == "on_chain_end" and e["name"] == "tools"
    )  # the get_weather task's end: without it, that task is still running
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events if e is not paris) + "\n")
    trace = quietly(path)
    errors = sorted(s.payload["error"] for s in trace.matching("agent:error"))
    assert errors == [RAISED, f"stopped: node 'tools' raised {RAISED}"]


@pytest.mark.parametrize(
    "name", ["langgraph_react_tool_error_stream.jsonl", "langgraph_react_tool_error_updates.jsonl"]
)
def test_a_stream_cut_with_tool_calls_unanswered_fails_the_node_running_them(name: str) -> None:
    """``astream(stream_mode=["updates", "messages"], subgraphs=True)``, or ``"updates"``
    alone, records no error: the stream stops after the ``tools`` task of get_weather
    returned and before get_alerts' result. That is no success: ``tools``, which ran the
    calls, failed; the agent that asked returned its message (an update is written when a
    node ends): it completed (it read as failed). The gaps say so and that no input is in
    the file (no "values" mode)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = import_trace(FIXTURES / name)
    said = " ".join(str(w.message) for w in caught)
    assert "tool calls (get_alerts) the model asked for and no result" in said
    assert "holds no input" in said
    (error,) = trace.matching("agent:error")
    assert (
        error.payload["agent"] == "tools"
        and "(get_alerts) it ran were never answered" in error.payload["error"]
    )
    assert passes(trace, {"type": "agent.completed", "agentId": "agent"})
    assert not passes(trace, {"type": "agent.completed", "agentId": "tools"})
    assert passes(
        trace,
        {
            "type": "tool.calledWith",
            "name": "get_weather",
            "args": {"city": "Paris"},
            "status": "ok",
        },
    )
    assert trace.input is None


def test_a_stream_cut_before_any_tool_returned_fails_no_node_it_cannot_name(
    tmp_path: Path,
) -> None:
    """The same ``"updates"`` stream cut before any tool task returned: the node that was
    running the calls is not in the stream, and the node that asked had finished. No agent
    is taken as failed; the gap says the run stopped there."""
    lines = (FIXTURES / "langgraph_react_tool_error_updates.jsonl").read_text().splitlines()
    path = tmp_path / "t.jsonl"
    path.write_text(lines[0] + "\n")
    with pytest.warns(TraceGap, match=r"get_weather, get_alerts\) .* a node the stream does"):
        trace = import_trace(path)
    assert not list(trace.matching("agent:error"))
    assert passes(trace, {"type": "agent.completed", "agentId": "agent"})


@pytest.mark.parametrize(
    "name",
    [
        "langgraph_updates.jsonl",
        "langgraph_messages.jsonl",
        "langgraph_values.jsonl",
        "langgraph_subgraph_stream.jsonl",
    ],
)
def test_a_stream_whose_tool_calls_were_all_answered_is_no_failure(name: str) -> None:
    """The support conversation streamed whole: every call answered, nothing failed."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = import_trace(FIXTURES / name)
    assert not any("no result" in str(w.message) for w in caught)
    assert not list(trace.matching("agent:error")) and trace.count("tool:result") == 3


@pytest.mark.parametrize(
    "name", ["langgraph_simple_interrupt_events.jsonl", "langgraph_simple_interrupt_updates.jsonl"]
)
def test_an_interrupt_is_kept_and_the_resumed_run_is_one_trace(name: str) -> None:
    """``interrupt()`` pauses the graph (no failure): kept as ``langgraph:interrupt`` with
    what it asked; the ``Command(resume=...)`` stream on the same thread goes on in the
    same trace: approve ran twice (paused, then resumed), and nothing failed."""
    trace = quietly(FIXTURES / name)
    (paused,) = trace.matching("langgraph:interrupt")
    assert "publish?" in json.dumps(paused.payload)
    agents = [s.payload["agent"] for s in trace.matching("agent:activated")]
    assert agents[0] == "answer" and agents.count("approve") >= 1
    names = [s.name for s in trace]
    assert names.index("langgraph:interrupt") > names.index("provider:end")
    assert not list(trace.matching("agent:error"))
    assert trace.output == "Hello there, friend."


def test_a_span_kept_as_recorded_shows_the_attributes_the_file_holds(tmp_path: Path) -> None:
    """The AI SDK's ``ai.generateText`` with no ``functionId`` is no agent run: kept as
    ``span:other``, its attributes are the file's, not the GenAI keys read from them."""
    document = json.loads((FIXTURES / "otel_vercel_ai.json").read_text())
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for span in spans:
        span["attributes"] = [
            a for a in span["attributes"] if a["key"] != "ai.telemetry.functionId"
        ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    trace = quietly(path)
    (kept,) = [s for s in trace.matching("span:*") if s.payload["name"] == "ai.generateText"]
    written = next(s for s in spans if s["name"] == "ai.generateText")["attributes"]
    assert sorted(kept.payload["attributes"]) == sorted(a["key"] for a in written)
    assert not any(k.startswith("gen_ai.") for k in kept.payload["attributes"])
    assert trace.count("provider:end") == 3  # its model calls are read all the same


def test_openinferences_guardrail_tripwire_fails_the_agent_it_guards() -> None:
    """OpenInference's Agents SDK instrumentation: the tripwire's error is on the ``turn``
    CHAIN span (status ERROR), the agent it ran in failed (it read as completed)."""
    trace = quietly(FIXTURES / "otel_openinference_agents_guardrail_error.json")
    (error,) = trace.matching("agent:error")
    assert error.payload["agent"] == "triage" and "tripwire" in error.payload["error"]
    assert not passes(trace, {"type": "agent.completed", "agentId": "triage"})
    assert not list(trace.matching("provider:*"))


REACT_OTEL = [
    "otel_openinference_langgraph_react_tool_error.json",
    "otel_openllmetry_langgraph_react_tool_error.jsonl",
]


@pytest.mark.parametrize("name", REACT_OTEL)
def test_the_react_agent_under_otel_gives_the_langgraph_facts(name: str) -> None:
    """OpenInference's and OpenLLMetry's LangChain instrumentations of the react agent whose
    tool raises: node runs are agents, the tools' arguments and results are what the model
    asked and saw (OpenLLMetry writes LangChain's callback arguments and ToolMessage around
    them), the raised tool is a failed call whose error is the exception, without the
    traceback OpenInference appends."""
    trace = quietly(FIXTURES / name)
    recorded = import_trace(FIXTURES / "langgraph_react_tool_error_events.jsonl")
    calls = [(c.name, c.input, c.id, c.status) for c in trace.tool_calls]
    assert calls == [(c.name, c.input, c.id, c.status) for c in recorded.tool_calls]
    results = {s.payload["id"]: s.payload for s in trace.matching("tool:result")}
    assert results["call_paris"]["result"] == "Paris: sunny"
    assert "alerts service down for Paris" in results["call_alerts"]["error"]
    assert "Traceback" not in json.dumps([s.payload for s in trace])
    errors = {s.payload["agent"]: s.payload["error"] for s in trace.matching("agent:error")}
    assert errors.pop("tools") == results["call_alerts"]["error"]
    assert errors in ({}, {"react": results["call_alerts"]["error"]})  # OpenLLMetry's agent
    agents = [s.payload["agent"] for s in trace.matching("agent:activated")]
    assert [a for a in agents if a != "react"] == ["agent", "tools", "tools"]
    assert agents.count("react") <= 1  # its workflow span is the same run, not another
    (turn,) = trace.matching("provider:end")
    assert turn.agent == "agent" and turn.payload["usage"] == {"inputTokens": 25, "outputTokens": 9}
    right = {"type": "tool.calledWith", "name": "get_alerts", "args": {"city": "Paris"}}
    assert passes(trace, {**right, "status": "error"})
    assert not passes(trace, {**right, "args": {"city": "Rome"}})


def test_collector_lines_in_any_order_give_the_same_trace(tmp_path: Path) -> None:
    """A collector's file exporter writes one request per line as spans arrive (children
    before parents); lines in another order (files concatenated) are the same trace."""
    path = FIXTURES / "otel_openllmetry_langgraph_react_tool_error.jsonl"
    lines = path.read_text().splitlines()
    shuffled = tmp_path / "t.jsonl"
    shuffled.write_text("\n".join(reversed(lines)) + "\n")
    ours, theirs = quietly(path), quietly(shuffled)
    assert [(s.name, s.payload, s.agent) for s in ours] == [
        (s.name, s.payload, s.agent) for s in theirs
    ]


@pytest.mark.parametrize("name", ["agents_responses.json", "agents_responses_streamed.json"])
def test_a_responses_model_call_names_its_model(name: str) -> None:
    """The SDK's default Responses model: ``export_span`` keeps the response's model (the
    SDK's own export has none, warned of: every call read as model null)."""
    trace = import_trace(FIXTURES / name)
    assert {s.payload["model"] for s in trace.matching("provider:*")} == {"mock-model"}


def test_a_stream_of_messages_without_updates_gives_the_runs_facts() -> None:
    """``astream(stream_mode=["messages", "custom"])``, as chat UIs stream: its model calls
    (chunks merged) and tool results are in its ``messages`` items (it read as nothing at
    all); no input (no "values"), warned."""
    with pytest.warns(TraceGap, match='without "values" holds no input'):
        trace = import_trace(FIXTURES / "langgraph_stream_chat.jsonl")
    assert facts(trace) == {**SUPPORT_FACTS, "input": None}
    full = import_trace(FIXTURES / "langgraph_stream.jsonl")
    same = ("agent:activated", "agent:handoff", "tool:call", "tool:result", "text:delta")
    assert [(s.name, s.payload, s.agent) for s in trace if s.name in same] == [
        (s.name, s.payload, s.agent) for s in full if s.name in same
    ]


def test_a_subgraph_cut_inside_names_the_node_it_stopped_in(tmp_path: Path) -> None:
    """A stream cut inside a subgraph's node: that node never finished (warned), and the
    subgraph's node around it did not finish because of it, as its error says (both had
    read 'never finished: the stream ends inside it', as if two nodes had failed)."""
    lines = (FIXTURES / "langgraph_subgraph_events.jsonl").read_text().splitlines()
    cut = next(i for i, line in enumerate(lines) if '"on_tool_start"' in line)
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines[: cut + 1]) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = import_trace(path)
    assert [str(w.message).count("the stream ends inside node") for w in caught] == [1]
    assert "node 'tools'" in str(caught[0].message)
    errors = {s.payload["agent"]: s.payload["error"] for s in trace.matching("agent:error")}
    assert errors == {
        "tools": "node 'tools' never finished: the stream ends inside it",
        "research": "node 'research' never finished: node 'tools' inside it did not",
    }
    assert passes(trace, {"type": "agent.completed", "agentId": "weather"})


def test_model_calls_without_usage_are_warned_of(tmp_path: Path) -> None:
    """A model streamed without usage (ChatOpenAI without ``stream_usage``) has no
    ``usage_metadata``: its calls count 0 tokens, said, not silent."""
    lines = (FIXTURES / "langgraph_events.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    for event in events:  # every message of the file, wherever it is
        text = json.dumps(event)
        event.clear()
        event.update(json.loads(text.replace('"usage_metadata"', '"no_usage"')))
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    with pytest.warns(TraceGap, match="4 of its model calls carry no token usage"):
        trace = import_trace(path)
    assert trace.metrics.input_tokens == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import_trace(FIXTURES / "langgraph_events.jsonl")


def test_an_agents_sdk_stream_without_usage_is_warned_of(tmp_path: Path) -> None:
    """The Agents SDK's streamed Chat Completions without ``include_usage`` write zeros."""
    document = json.loads((FIXTURES / "agents_support_streamed.json").read_text())
    for item in document["data"]:
        usage = item.get("span_data", {}).get("usage")
        if isinstance(usage, dict):
            usage.update(input_tokens=0, output_tokens=0)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    with pytest.warns(TraceGap, match="4 of its model calls carry no token usage"):
        import_trace(path)


def test_a_stream_of_debug_items_gives_the_runs_facts() -> None:
    """``astream(stream_mode=["debug"])``: each task's start and result are the node runs,
    their input and what they returned (it read as nothing but langgraph:debug)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = import_trace(FIXTURES / "langgraph_stream_debug.jsonl")
    assert facts(trace) == SUPPORT_FACTS
    full = import_trace(FIXTURES / "langgraph_stream.jsonl")
    same = ("agent:activated", "agent:handoff", "tool:call", "tool:result", "provider:end")
    assert [(s.name, s.payload, s.agent) for s in trace if s.name in same] == [
        (s.name, s.payload, s.agent) for s in full if s.name in same
    ]


def test_a_tasks_stream_gives_the_node_that_raised_and_its_tool_call() -> None:
    """``["tasks", "values"]``: a task's result carries the node's error; a ToolNode task
    of one call (the react agent's) names the call that raised. The last state comes
    before the failed task: the run still ends after it, with no answer (the graph raised)."""
    trace = import_trace(FIXTURES / "langgraph_react_tool_error_tasks.jsonl")
    (error,) = trace.matching("agent:error")
    assert error.payload == {"agent": "tools", "error": RAISED}
    assert passes(trace, {"type": "tool.failed", "name": "get_alerts"})
    ok = {"type": "tool.calledWith", "name": "get_weather", "args": {"city": "Paris"}}
    assert passes(trace, {**ok, "status": "ok"})
    assert trace.input == "What is the weather in Paris and Rome?"
    assert [s.name for s in trace][-2:] == ["text:complete", "harness:end"]
    assert trace.output == ""


def test_a_task_that_never_got_its_result_is_where_the_stream_was_cut(tmp_path: Path) -> None:
    lines = (FIXTURES / "langgraph_react_tool_error_tasks.jsonl").read_text().splitlines()
    failed = next(i for i, line in enumerate(lines) if '"error": {' in line)
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines[:failed] + lines[failed + 1 :]) + "\n")
    with pytest.warns(TraceGap, match="the stream ends inside node 'tools'"):
        trace = import_trace(path)
    (error,) = trace.matching("agent:error")
    assert error.payload == {
        "agent": "tools",
        "error": "node 'tools' never finished: the stream ends inside it",
    }


def test_one_mode_debug_is_read_as_its_tasks_not_refused(tmp_path: Path) -> None:
    """``astream(stream_mode="debug")`` lines (``{step, type, payload}``) were refused as
    signals without a name; ``"tasks"`` lines (which have a ``name``) read as signals."""
    lines = (FIXTURES / "langgraph_stream_debug.jsonl").read_text().splitlines()
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(json.loads(line)[1]) for line in lines) + "\n")
    trace = import_trace(path)
    assert facts(trace) == SUPPORT_FACTS
    assert facts(import_trace(FIXTURES / "langgraph_tasks.jsonl")) == SUPPORT_FACTS


def test_an_agents_sdk_file_of_several_runs_says_so(tmp_path: Path) -> None:
    """A processor that keeps every run in one file: the runs are read as one, warned."""
    first = json.loads((FIXTURES / "agents_simple.json").read_text())["data"]
    second = json.loads((FIXTURES / "agents_support.json").read_text())["data"]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in first + second))
    with pytest.warns(TraceGap, match="it holds 2 traces"):
        trace = import_trace(path)
    assert trace.count("agent:activated") == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import_trace(FIXTURES / "agents_support.json")
        import_trace(FIXTURES / "otel_openai.json")  # a trace per call made outside a span


def test_a_pydantic_ai_structured_answer_is_the_runs_output() -> None:
    """Pydantic AI's ``output_type`` answer is the ``final_result`` tool's arguments, not
    text the model wrote: the agent run's ``final_result`` is the output (it read as empty).
    A tool's ``ModelRetry`` is a failed call; the run went on and completed."""
    trace = import_trace(FIXTURES / "otel_pydantic_ai_structured.json")
    assert json.loads(trace.output) == {"city": "Paris", "forecast": "sunny"}
    assert passes(trace, {"type": "output.contains", "text": "sunny"})
    statuses = [(c.name, c.input["city"], c.status) for c in trace.tool_calls]
    assert statuses == [
        ("get_weather", "Paris", "ok"),
        ("recheck", "Paris", "error"),
        ("recheck", "Rome", "ok"),
    ]
    assert passes(trace, {"type": "agent.completed", "agentId": "weather"})


@pytest.mark.parametrize(
    ("name", "own_name"),
    [
        ("otel_agents_bridge.json", "agents_support.json"),
        ("otel_agents_bridge_max_turns.json", "agents_max_turns.json"),
        ("otel_agents_bridge_streamed.json", "agents_support_streamed.json"),
    ],
)
def test_the_otel_bridges_tool_turns_name_their_calls(name: str, own_name: str) -> None:
    """The Agents SDK's OTel bridge writes a turn that called tools as the message's Python
    repr in a text part (in a streamed run every turn as its Responses object's repr, the
    final answer too): it read as that text, no tool calls, and each tool call got its
    span's id. The turn's calls and their ids are those of the SDK's own export, and the
    answer its text."""
    trace = quietly(FIXTURES / name)
    own = quietly(FIXTURES / own_name)
    asked = [c for s in trace.matching("provider:end") for c in s.payload.get("toolCalls", [])]
    assert asked == [
        c for s in own.matching("provider:end") for c in s.payload.get("toolCalls", [])
    ]
    assert [c.id for c in trace.tool_calls] == [c.id for c in own.tool_calls]
    outputs = [str(s.payload.get("output")) for s in trace.matching("provider:end")]
    assert not any("{'" in output for output in outputs)
    assert facts(trace) == facts(own)


def test_a_graph_paused_before_its_tools_is_no_failure() -> None:
    """``interrupt_before=["tools"]``: the stream ends with tool calls asked and no result,
    and an ``__interrupt__``: a pause, kept as such; no agent failed, no cut warned of."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = import_trace(FIXTURES / "langgraph_paused_before_tools_updates.jsonl")
    assert not any("no result" in str(w.message) for w in caught)
    assert trace.count("langgraph:interrupt") == 1
    assert not list(trace.matching("agent:error"))


def test_a_stream_that_would_not_show_an_interrupt_fails_no_agent(tmp_path: Path) -> None:
    """Without "updates" (nor events) a pause before the tools and a cut look the same: the
    unanswered calls are warned of, no agent is taken as failed."""
    lines = (FIXTURES / "langgraph_react_tool_error_stream.jsonl").read_text().splitlines()
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(x for x in lines if json.loads(x)[1] == "messages") + "\n")
    with pytest.warns(TraceGap, match=r"tool calls \(get_alerts\) .* or the graph paused"):
        trace = import_trace(path)
    assert not list(trace.matching("agent:error"))
    assert trace.count("tool:call") == 1  # get_weather's, from its ToolMessage


def test_a_tool_a_node_calls_itself_is_a_tool_call() -> None:
    """A node that calls a tool itself and keeps the result in a state field returns no
    ToolMessage: its ``on_tool_end`` is the call (it was dropped); ToolNode's results,
    which messages return, still count once (test_a_returned_tool_error_is_one...)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = import_trace(FIXTURES / "langgraph_tool_in_node_events.jsonl")
    (call,) = trace.tool_calls
    assert (call.name, call.input, call.status) == ("get_weather", {"city": "Paris"}, "ok")
    assert [s.agent for s in trace.matching("tool:*")] == ["lookup", "lookup"]
    (result,) = trace.matching("tool:result")
    assert result.payload["result"] == "Paris: sunny" and result.payload["id"]
    assert passes(
        trace,
        {
            "type": "signal.trajectory",
            "mode": "strict",
            "patterns": [
                {"pattern": "agent:activated", "payload": {"agent": "lookup"}},
                {"pattern": "tool:call", "payload": {"name": "get_weather"}},
                {"pattern": "agent:activated", "payload": {"agent": "answer"}},
            ],
        },
    )


FLUSHES = [FIXTURES / f"otel_agents_bridge_simple_flush{n}.json" for n in (1, 2, 3)]


def test_an_otlp_trace_split_across_flush_files_reads_whole_once_joined(tmp_path: Path) -> None:
    """A ``BatchSpanProcessor`` whose exporter writes a file per flush: the first file holds
    the model call, whose agent run is in the next. Alone it read as a call of no agent, in
    silence; it now warns that the trace is cut. The files joined by ``cat`` (documents one
    after another, ``}{`` where a file has no final newline) were refused as not JSON; they
    read as one trace: the call is the agent's."""
    with pytest.warns(TraceGap, match="1 of its spans name a parent span the file does not"):
        alone = import_trace(FLUSHES[0])
    assert [s.agent for s in alone.matching("provider:end")] == [None]
    joined = tmp_path / "run.json"
    joined.write_text("".join(p.read_text() for p in FLUSHES))
    assert "}{" in joined.read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = import_trace(joined)
    assert [s.agent for s in trace.matching("provider:end")] == ["simple"]
    assert passes(trace, {"type": "agent.completed", "agentId": "simple"})
    assert trace.input == "Hi" and trace.output == "Hello there, friend."


def test_an_otlp_file_of_several_runs_says_so(tmp_path: Path) -> None:
    """Two runs' requests in one collector file: read as one run, warned (as the Agents
    SDK's are); lone model calls, each a trace of its own, and OpenLLMetry's one-span
    ``create_agent`` trace are no runs."""
    runs = ["otel_agents_bridge.json", "otel_agents_bridge_guardrail_error.json"]
    path = tmp_path / "t.jsonl"
    path.write_text(
        "".join(json.dumps(json.loads((FIXTURES / r).read_text())) + "\n" for r in runs)
    )
    with pytest.warns(TraceGap, match="it holds 2 traces"):
        import_trace(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import_trace(FIXTURES / "otel_openai.json")
        quietly(FIXTURES / "otel_openllmetry_langgraph_react_tool_error.jsonl")


def test_an_agents_sdk_file_of_the_exporters_batches_reads_as_one(tmp_path: Path) -> None:
    """The SDK's exporter posts ``{"data": [...]}`` in batches; their bodies one after
    another in a file are the run whole (they were taken as its items)."""
    items = json.loads((FIXTURES / "agents_support.json").read_text())["data"]
    path = tmp_path / "t.json"
    batches = [{"data": items[i : i + 6]} for i in range(0, len(items), 6)]
    path.write_text("\n".join(json.dumps(batch, indent=1) for batch in batches))
    assert len(batches) == 3
    assert facts(import_trace(path)) == facts(import_trace(FIXTURES / "agents_support.json"))


@pytest.mark.parametrize(
    "name",
    [
        "agents_guardrail_error.json",
        "otel_agents_bridge_guardrail_error.json",
        "otel_openinference_agents_guardrail_error.json",
    ],
)
def test_a_run_stopped_before_its_first_model_call_says_its_input_is_unknown(name: str) -> None:
    """An input guardrail's tripwire stops the run before any model call: no span of the
    SDK's export, the OTel bridge or OpenInference holds the input (they put it on model
    calls). The trace's input was None in silence, and a case drafted from it had none."""
    with pytest.warns(TraceGap, match="none of its spans holds the run's input"):
        trace = import_trace(FIXTURES / name)
    assert trace.input is None


SUPERVISED = [("supervisor", "forecaster"), ("forecaster", "supervisor")]


@pytest.mark.parametrize(
    "name", ["langgraph_supervisor_updates.jsonl", "langgraph_supervisor_subgraph_tasks.jsonl"]
)
def test_a_supervisors_handoffs_and_calls_are_its_agents(name: str) -> None:
    """langgraph-supervisor over a prebuilt react agent. The agent hands back by an AI
    message the library writes (``"Transferring back to supervisor"``, no model's): it read
    as a model call of no tokens (warned as unmetered), now it is the handoff back only.
    Streamed with ``subgraphs=True``, the calls of each agent's inner ``agent`` node are
    the agent's whose name their message carries (the supervisor's transfer read as
    ``agent`` → forecaster), and the supervisor's transfer task, ended by the
    ``Command(graph=PARENT)`` it returns, was taken as cut: its node 'never finished'."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = import_trace(FIXTURES / name)
    assert not [w for w in caught if "no token usage" in str(w.message)]
    assert not [w for w in caught if "never finished" in str(w.message)]
    assert [(p["from"], p["to"]) for p in trace.payloads("agent:handoff")] == SUPERVISED
    assert not list(trace.matching("agent:error"))
    ends = list(trace.matching("provider:end"))
    assert "Transferring back" not in json.dumps([s.payload for s in ends])
    assert ends[0].agent == ends[-1].agent == "supervisor" and ends[1].agent == "forecaster"
    assert trace.output == "Paris and Rome are sunny today."
    handoff = {"type": "agent.handoff", "from": "supervisor", "to": "forecaster"}
    assert passes(trace, handoff)
    assert passes(trace, {"type": "agent.completed", "agentId": "forecaster"})


def test_a_supervisor_streamed_with_subgraphs_shows_its_agents_tool_calls() -> None:
    """``subgraphs=True`` shows what the agent did inside (the parent graph gets only its
    last message): both get_weather calls of one turn, and every model call's tokens."""
    trace = import_trace(FIXTURES / "langgraph_supervisor_subgraph_tasks.jsonl")
    assert [(c.name, c.input, c.status) for c in trace.tool_calls] == [
        ("get_weather", {"city": "Paris"}, "ok"),
        ("get_weather", {"city": "Rome"}, "ok"),
    ]
    assert (trace.metrics.input_tokens, trace.metrics.output_tokens) == (140, 28)
    assert passes(trace, {"type": "tool.parallel", "tools": ["get_weather", "get_weather"]})


@pytest.mark.parametrize(
    "name",
    ["otel_openai_collector_events.jsonl", "otel_openai_collector_inference_details.jsonl"],
)
def test_genai_log_records_beside_the_spans_are_the_calls_messages(
    name: str, tmp_path: Path
) -> None:
    """opentelemetry-instrumentation-openai-v2 sends the messages as log records, which a
    Collector writing its logs pipeline to the trace's file puts beside the spans: 2.3b0's
    event per message, 2.4b0's one ``gen_ai.client.inference.operation.details`` per call
    (the messages its attributes). The file was refused ("no 'resourceSpans'" at the logs
    line); the records are now the calls' messages, as spans_to_otlp folds them live."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = import_trace(FIXTURES / name)
    assert facts(trace) == LOOP_FACTS
    spans_only = tmp_path / "t.jsonl"
    spans_only.write_text((FIXTURES / name).read_text().splitlines()[0] + "\n")
    with pytest.warns(TraceGap, match="carry no messages"):
        import_trace(spans_only)


def test_a_prebuilt_agent_as_a_node_is_one_run_of_it() -> None:
    """``create_react_agent(name="simple")`` as node ``simple`` (as supervisors and swarms
    hold their agents): its graph, named as the node, starts inside the node's run. That
    read as a second activation of ``simple`` (a strict trajectory saw it twice, where
    ``"updates"`` shows one run); the call its inner ``agent`` node makes is ``simple``'s."""
    trace = import_trace(FIXTURES / "langgraph_agent_node_events.jsonl")
    assert [a for a, _ in trace.activations] == ["simple", "agent"]
    assert [s.agent for s in trace.matching("provider:end")] == ["simple"]
    assert trace.output == "Hello there, friend." and trace.input == "Hi"


def test_a_send_fan_outs_parallel_tasks_stream_as_their_own_calls() -> None:
    """``Send`` fan-out: two ``forecast`` tasks in one step stream their chunks
    interleaved. Each change of message id closed the call being merged, so the two
    calls read as ten (eight of no tokens, warned) under one activation; each task is a
    run of its own and its chunks one call."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = import_trace(FIXTURES / "langgraph_fanout_messages.jsonl")
    assert not [w for w in caught if "no token usage" in str(w.message)]
    assert [a for a, _ in trace.activations] == ["forecast", "forecast", "summary"]
    answers = sorted(str(s.payload.get("output")) for s in trace.matching("provider:end"))
    assert answers == ["Paris and Rome are sunny today.", "Paris: sunny", "Rome: sunny"]
    assert (trace.metrics.input_tokens, trace.metrics.output_tokens) == (35, 7)


def test_a_tasks_stream_takes_its_input_from_the_graphs_state_not_a_send() -> None:
    """The first task a ``"tasks"`` stream shows is a ``Send``'s (``triggers:
    ["__pregel_push"]``): its input, ``{"city": "Paris"}``, was taken for the run's. The
    input is the first state a node was given: the user's question."""
    trace = import_trace(FIXTURES / "langgraph_fanout_tasks.jsonl")
    assert trace.input == "What is the weather in Paris and Rome?"
    assert [a for a, _ in trace.activations] == ["forecast", "forecast", "summary"]


def test_langgraphs_control_flow_raised_through_otel_spans_is_no_failure() -> None:
    """OpenLLMetry records LangGraph's bubble-ups as errors: ``interrupt()``'s
    GraphInterrupt (as a handoff's ``Command(graph=PARENT)`` its ParentCommand) left the
    paused node and the graph failed (agent:error with the interrupt's repr). A pause is
    no failure: nothing failed, the node before it completed."""
    trace = quietly(FIXTURES / "otel_openllmetry_langgraph_interrupt.json")
    assert not list(trace.matching("agent:error"))
    assert not [s for s in trace if "error" in s.payload]
    assert passes(trace, {"type": "agent.completed", "agentId": "answer"})
    assert "approve" in [a for a, _ in trace.activations]


def test_a_transfer_run_as_a_tool_without_a_call_id_is_one_handoff() -> None:
    """OpenInference's span of a LangChain tool names no call id: the ``transfer_to_weather``
    the model asked for and the tool run of it read as two handoffs (from ``agent`` and
    from ``tools``). The run is the request's, the latest of its name: one handoff, from
    the agent whose model asked."""
    trace = quietly(FIXTURES / "otel_openinference_langgraph_transfer_tool.json")
    assert [(p["from"], p["to"]) for p in trace.payloads("agent:handoff")] == [("agent", "weather")]
    assert not trace.tool_calls  # a transfer is a handoff, no tool call


def test_a_command_goto_without_a_transfer_tool_is_a_handoff() -> None:
    """A node that routes by returning ``Command(goto="simple")`` (no transfer tool: a
    multi-agent network's handoff) hands the graph to ``simple``: ``astream_events`` keeps
    the Command (its repr) as the node's output; it read as two activations, no handoff.
    ``"updates"``, whose first line is ``{"router": null}`` (a Command updates nothing), was
    refused as signal-eval JSONL; it reads as the two runs (it shows no goto)."""
    trace = import_trace(FIXTURES / "langgraph_goto_events.jsonl")
    assert [(p["from"], p["to"]) for p in trace.payloads("agent:handoff")] == [("router", "simple")]
    assert passes(trace, {"type": "agent.handoff", "from": "router", "to": "simple"})
    assert [a for a, _ in trace.activations] == ["router", "simple"]
    assert trace.output == "Hello there, friend." and trace.input == "Hi"
    with pytest.warns(TraceGap, match="holds no input"):
        updates = import_trace(FIXTURES / "langgraph_goto_updates.jsonl")
    assert [a for a, _ in updates.activations] == ["router", "simple"]
    assert updates.output == "Hello there, friend."
    subgraph = import_trace(FIXTURES / "langgraph_subgraph_events.jsonl")
    assert [p["to"] for p in subgraph.payloads("agent:handoff")] == ["weather"]  # its triage's
    # model asked for a transfer: that is its handoff, not its Command's goto='research' too


SUPERVISOR_OTEL = [
    "otel_openllmetry_langgraph_supervisor.jsonl",
    "otel_openinference_langgraph_supervisor.json",
]


@pytest.mark.parametrize("name", SUPERVISOR_OTEL)
def test_a_supervisor_under_otel_gives_its_agents_calls_and_both_handoffs(name: str) -> None:
    """langgraph-supervisor under OpenLLMetry's and OpenInference's LangChain
    instrumentations (recorded without the graph's state copies no importer reads). The
    model calls of each prebuilt agent's inner ``agent`` node read as node ``agent``'s,
    and so did the supervisor's transfer (``agent`` → forecaster); the handoff back, which
    the library writes as messages the agent's node returns, was not read at all. A node
    run holding a graph named as the node is that named agent's run: its inner nodes' calls
    are the agent's (as the LangGraph importer reads them); its returned handoff back is."""
    trace = quietly(FIXTURES / name)
    assert [(p["from"], p["to"]) for p in trace.payloads("agent:handoff")] == SUPERVISED
    calls = [(s.agent, s.payload["usage"]["inputTokens"]) for s in trace.matching("provider:end")]
    assert calls == [("supervisor", 20), ("forecaster", 12), ("supervisor", 50)]
    assert passes(trace, {"type": "agent.handoff", "from": "forecaster", "to": "supervisor"})
    assert not list(trace.matching("agent:error")) and not trace.tool_calls
    assert trace.output == "Paris and Rome are sunny today."
    assert trace.input == "What is the weather in Paris and Rome?"


@pytest.mark.parametrize(
    "name", ["otel_openllmetry_langgraph_goto.jsonl", "otel_openinference_langgraph_goto.json"]
)
def test_a_command_goto_under_otel_is_a_handoff(name: str) -> None:
    """The ``router`` node's ``Command(goto="simple")`` is its span's output (OpenLLMetry's
    ``gen_ai.task.output``, OpenInference's ``output.value``, both the Command's fields as
    JSON): it read as no handoff; the model call is ``simple``'s, not the graph's."""
    trace = quietly(FIXTURES / name)
    assert [(p["from"], p["to"]) for p in trace.payloads("agent:handoff")] == [("router", "simple")]
    assert [s.agent for s in trace.matching("provider:end")] == ["simple"]
    assert trace.output == "Hello there, friend."


def test_protobufs_json_with_proto_field_names_is_otlp() -> None:
    """``MessageToJson(request, preserving_proto_field_name=True)`` (and ``MessageToDict``)
    writes protobuf's own field names: ``resource_spans``, ``start_time_unix_nano``,
    ``string_value``. The file was refused as of no known format; it reads as the
    lowerCamelCase OTLP/JSON of the same run does."""
    trace = strictly(FIXTURES / "otel_openinference_agents_proto_names.json")
    assert facts(trace) == SUPPORT_FACTS
    assert facts(trace) == facts(import_trace(FIXTURES / "otel_openinference_agents.json"))
    assert [a for a, _ in trace.activations] == ["triage", "weather"]


def test_the_spans_a_console_span_exporter_printed_are_the_run(tmp_path: Path) -> None:
    """The OTel SDK's ``ConsoleSpanExporter`` prints each span's ``to_json()`` (``0x`` ids,
    ISO times, plain attribute values), one after another: the file was refused as of no
    known format. Its spans read as the OTLP export of the same run does (here the Agents
    SDK's OTel bridge). Something else in the file is an error at its line."""
    path = FIXTURES / "otel_agents_bridge_console.json"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = import_trace(path)
    assert facts(trace) == SUPPORT_FACTS
    otlp = import_trace(FIXTURES / "otel_agents_bridge.json")
    assert trace.activations and [a for a, _ in trace.activations] == [
        a for a, _ in otlp.activations
    ]
    assert [s.agent for s in trace.matching("provider:end")] == [
        s.agent for s in otlp.matching("provider:end")
    ]
    latency = trace.metrics.latency_ms
    assert latency is not None and 0 < latency < 60_000  # ISO times read to the microsecond
    broken = tmp_path / "t.json"
    broken.write_text(path.read_text() + '{"name": "not a span"}\n')
    with pytest.raises(InputError, match=r"t\.json:\d+:1: not a span as ConsoleSpanExporter"):
        import_trace(broken)
    text = path.read_text()
    end = text.index('"end_time": "') + len('"end_time": "')
    broken.write_text(text[:end] + "yesterday" + text[text.index('"', end) :])
    line = text.count("\n", 0, text.index('"span_id"', text.rindex('"name"', 0, end))) + 1
    with pytest.raises(InputError, match=rf"t\.json:{line}:\d+: not an ISO 8601 time: 'yesterday'"):
        import_trace(broken)


def test_parallel_nodes_streamed_as_messages_are_a_call_each() -> None:
    """Two nodes START's edges run in one step (``paris``, ``rome``) stream their chunks
    interleaved: each change of node closed the call being merged, so their two calls
    read as four, two of no tokens (warned). The step's calls are merged per message id
    until the step ends: one call each, with its tokens."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = import_trace(FIXTURES / "langgraph_parallel_messages.jsonl")
    assert not [w for w in caught if "no token usage" in str(w.message)]
    calls = [(s.agent, s.payload.get("output")) for s in trace.matching("provider:end")]
    assert calls == [
        ("paris", "Paris: sunny"),
        ("rome", "Rome: sunny"),
        ("summary", "Paris and Rome are sunny today."),
    ]
    assert (trace.metrics.input_tokens, trace.metrics.output_tokens) == (35, 7)


def test_the_functional_apis_entrypoint_and_tasks_are_read() -> None:
    """``@entrypoint`` given the question as a string, its ``@task``s: in ``astream_events``
    the input read as None (it looked for a state's messages); it is the string given. In
    ``astream(stream_mode=["updates", "messages"])`` the ``answer`` task returns the
    model's text, no message, so its model call, only in the ``"messages"`` items, was
    dropped (the output was empty); it is read there, at the task's run."""
    trace = import_trace(FIXTURES / "langgraph_functional_events.jsonl")
    assert trace.input == "What is the weather in Paris and Rome?"
    assert trace.output == "Hello there, friend."
    assert sorted((c.name, c.input["city"]) for c in trace.tool_calls) == [
        ("get_weather", "Paris"),
        ("get_weather", "Rome"),
    ]
    with pytest.warns(TraceGap, match="holds no input"):
        stream = import_trace(FIXTURES / "langgraph_functional_stream.jsonl")
    (call,) = stream.matching("provider:end")
    assert call.agent == "answer" and call.payload["usage"] == {
        "inputTokens": 12,
        "outputTokens": 4,
    }
    assert stream.output == "Hello there, friend."
    names = [(s.name, s.agent) for s in stream if s.name in ("agent:activated", "provider:end")]
    assert names.index(("provider:end", "answer")) == names.index(("agent:activated", "answer")) + 1


def test_the_functional_apis_updates_alone_are_detected_and_read(tmp_path: Path) -> None:
    """``astream(stream_mode="updates")`` of an ``@entrypoint``: ``{task: what it
    returned}`` a line, the entrypoint's last, so no line is a state update. It was
    refused as of no known format (``--format langgraph-updates`` read it); it is detected,
    each task a run, and the text the entrypoint returned is the answer."""
    renamed = tmp_path / "trace.txt"
    renamed.write_bytes((FIXTURES / "langgraph_functional_updates.jsonl").read_bytes())
    assert detect_format(Source.read(renamed)) == "langgraph-updates"
    with pytest.warns(TraceGap, match="holds no input"):
        trace = import_trace(renamed)
    assert [a for a, _ in trace.activations] == ["lookup", "lookup", "answer", "workflow"]
    assert trace.output == "Hello there, friend."
    # what is no such stream is not taken for one: a one-key state's values repeat the
    # key, a run of one name, objects only (a graph's updates of no messages), or a line
    # of two keys
    for lines in (
        ['{"count": 1}', '{"count": 2}'],
        ['{"a": "x"}', '{"b": "y"}', '{"a": "z"}'],
        ['{"a": {"k": 1}}', '{"b": {"k": 2}}'],
        ['{"a": "x"}', '{"b": "y", "c": 1}'],
    ):
        other = tmp_path / "other.txt"
        other.write_text("\n".join(lines) + "\n")
        with pytest.raises(InputError, match="unknown trace format"):
            detect_format(Source.read(other))


def test_openllmetrys_agents_sdk_calls_answered_what_the_next_call_was_sent() -> None:
    """Traceloop's ``opentelemetry-instrumentation-openai-agents`` on a Chat Completions
    model writes only each call's input (no answer, no usage), and its handoff span names
    no target (``triage → unknown.handoff``, named when it starts). The handoff read as
    nothing, and the tool calls as no model's (their span ids as ids). A call's answer is
    the assistant turn the next call was sent after its input; the handoff goes to the
    agent that runs next. The final answer and the tokens stay unknown: warned."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = import_trace(FIXTURES / "otel_openllmetry_agents.json")
    said = " ".join(str(w.message) for w in caught)
    assert "carry no messages" in said and "no token usage" in said
    assert [(p["from"], p["to"]) for p in trace.payloads("agent:handoff")] == [
        ("triage", "weather")
    ]
    own = import_trace(FIXTURES / "agents_support.json")
    assert [(c.id, c.name, c.input) for c in trace.tool_calls] == [
        (c.id, c.name, c.input) for c in own.tool_calls
    ]
    asked = [c for s in trace.matching("provider:end") for c in s.payload.get("toolCalls", [])]
    assert [c["id"] for c in asked] == ["call_paris", "call_rome", "call_alerts"]
    assert passes(trace, {"type": "tool.failed", "name": "get_alerts"})
    assert trace.input == "What is the weather in Paris and Rome?" and trace.output == ""


@pytest.mark.parametrize(
    ("name", "errors"),
    [
        ("otel_agents_bridge_max_turns.json", {"weather": "Max turns exceeded"}),
        ("otel_openinference_agents_max_turns.json", {"weather": "Max turns exceeded"}),
        ("otel_agents_bridge.json", {"get_alerts": "alerts service down for Paris"}),
        (
            "otel_openllmetry_agents.json",
            {"get_alerts": "Tool execution failed. Error details are redacted."},
        ),
    ],
)
def test_an_agents_sdk_error_in_a_status_message_reads_as_the_sdks_own(
    name: str, errors: dict[str, str]
) -> None:
    """The instrumentations write the SDK's span error ``{message, data}`` into the status
    message: the OTel bridge as ``Max turns exceeded: {'max_turns': 2}``, OpenLLMetry as
    its repr. It read as that text; it is what the SDK's own export says (the message, a
    tool's ``data.error``), so one assertion on the error holds whatever recorded the run."""
    trace = quietly(FIXTURES / name)
    failed = {s.payload["agent"]: s.payload["error"] for s in trace.matching("agent:error")}
    failed |= {
        s.payload["name"]: s.payload["error"]
        for s in trace.matching("tool:result")
        if "error" in s.payload
    }
    assert failed == errors
    if "max_turns" in name:
        own = quietly(FIXTURES / "agents_max_turns.json")
        assert [s.payload for s in own.matching("agent:error")] == [
            s.payload for s in trace.matching("agent:error")
        ]


@pytest.mark.parametrize("name", ["agents_support_redacted.json", "otel_openinference_agents.json"])
def test_a_tool_error_the_agents_sdk_redacted_reads_as_failed_and_says_why(name: str) -> None:
    """The Agents SDK 0.24 records a tool that raised under its default
    failure_error_function with its error redacted, in its own export (recorded by
    record_traces.record_agents with 0.24.0) and so in every instrumentation of it: the
    call is failed, with the SDK's text as its error and what the model was told as its
    result, and the import says why the error says nothing and what keeps it."""
    gap = r"redacted the error of get_alerts .* give the tool a failure_error_function"
    with pytest.warns(TraceGap, match=gap):
        trace = import_trace(FIXTURES / name)
    assert facts(trace)["calls"] == SUPPORT_FACTS["calls"]
    (failed,) = [p for p in trace.payloads("tool:result") if "error" in p]
    assert failed["error"] == "Tool execution failed. Error details are redacted."
    assert failed["result"] == "An error occurred while running the tool. Please try again."
    if name.startswith("agents_"):
        assert facts(trace) == facts(quietly(FIXTURES / "agents_support.json")) == SUPPORT_FACTS
        with warnings.catch_warnings():  # 0.20 recorded the tool's own error: nothing to say
            warnings.simplefilter("error", TraceGap)
            import_trace(FIXTURES / "agents_support.json")


@pytest.mark.parametrize(
    ("message", "read"),
    [
        ("Max turns exceeded: {'max_turns': 2}", "Max turns exceeded"),
        ("KeyError: {'a': 1}", "KeyError: {'a': 1}"),  # an exception's text, as it is
        ("A" + " word" * 20_000, "A" + " word" * 20_000),  # 100 KB, no colon: was 12 s
        ("A" + " word" * 20_000 + ": {'x'", "A" + " word" * 20_000 + ": {'x'"),
    ],
)
def test_a_status_message_is_read_in_linear_time(message: str, read: str) -> None:
    """A hostile trace's long status message took the SDK-error pattern quadratic time (a
    30 KB one, seconds); every part of it now matches in one way only."""
    started = time.process_time()
    assert otlp._sdk_error(message) == read
    assert time.process_time() - started < 0.5


def test_a_node_that_asked_a_transfer_and_returned_a_command_hands_off_once() -> None:
    """OpenInference's LangChain instrumentation of the subgraph conversation: ``triage``'s
    model asks ``transfer_to_weather`` and the node returns ``Command(goto="research")``,
    the subgraph weather runs in. Its Command's goto read as a second handoff (triage →
    research); as in ``astream_events``, the transfer is the node's handoff."""
    trace = quietly(FIXTURES / "otel_openinference_langgraph_subgraph.json")
    assert facts(trace) == SUPPORT_FACTS
    assert facts(trace) == facts(import_trace(FIXTURES / "langgraph_subgraph_events.jsonl"))


@pytest.mark.parametrize(
    "name", ["otel_openinference_agents_and_client.json", "otel_openllmetry_agents_and_client.json"]
)
def test_a_clients_call_span_inside_a_frameworks_is_one_call(name: str) -> None:
    """The Agents SDK instrumented and the OpenAI client too (OpenInference's, OpenLLMetry's
    pair): each model call is a framework span with the client's request span inside it.
    Read as two, the run's 4 calls read as 8 and their tokens twice (280/56); one is one
    call. OpenLLMetry's framework span on Chat Completions holds neither answer nor usage
    (test_openllmetrys_agents_sdk_calls...): the client's span inside it gives both."""
    trace = strictly(FIXTURES / name)
    assert facts(trace) == SUPPORT_FACTS
    assert trace.count("provider:end") == 4
    assert [s.agent for s in trace.matching("provider:end")] == ["triage"] + ["weather"] * 3
