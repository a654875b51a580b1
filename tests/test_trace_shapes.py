"""Trace shapes real users record beyond the scripted support conversation (fixtures
recorded by tests/record_traces.py): LangGraph's prebuilt react agent whose tool raises,
in ``astream_events`` and in a multi-mode ``astream`` with subgraphs, and a run paused
by ``interrupt()`` then resumed on the same thread.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from signal_eval_cli import EvalContext, Trace, evaluate_assertion, import_trace
from signal_eval_cli.traces import TraceGap

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
RAISED = "ValueError('alerts service down for Paris')"


def passes(trace: Trace, assertion: dict[str, Any]) -> bool:
    return evaluate_assertion(assertion, EvalContext(trace)).passed


def quietly(path: Path) -> Trace:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceGap)
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


def test_a_stream_cut_with_tool_calls_unanswered_fails_the_agent_that_asked() -> None:
    """``astream(stream_mode=["updates", "messages"], subgraphs=True)`` records no error:
    the stream stops after the model asked for get_alerts, whose result never came. That
    is no success: the agent that asked failed, and the gaps say so and that no input is
    in the file (no "values" mode)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = import_trace(FIXTURES / "langgraph_react_tool_error_stream.jsonl")
    said = " ".join(str(w.message) for w in caught)
    assert "tool calls (get_alerts) the model asked for and no result" in said
    assert 'without "values" holds no input' in said
    (error,) = trace.matching("agent:error")
    assert (
        error.payload["agent"] == "agent"
        and "(get_alerts) were never answered" in error.payload["error"]
    )
    assert not passes(trace, {"type": "agent.completed", "agentId": "agent"})
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
