"""Importing the traces real frameworks wrote (fixtures recorded by tests/record_traces.py).

Every fixture is the same scripted conversation (tests/agent_script.py): triage hands off
to weather, which calls get_weather twice in one response, then get_alerts (which
raises), then answers. Assertions that state those facts pass; a wrong version of each
(wrong argument, reversed order, wrong agent, one token off) fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from trace_facts import LOOP_FACTS, SIMPLE_FACTS, SUPPORT_FACTS, facts

from signal_eval_cli import EvalContext, Trace, evaluate_assertion, import_trace
from signal_eval_cli.errors import InputError
from signal_eval_cli.traces import TraceGap, read_trace_signals
from signal_eval_cli.traces.source import Source

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "traces"
CLI = [sys.executable, "-m", "signal_eval_cli.cli"]

SUPPORT = {
    "agents_support.json": "openai-agents",
    "agents_support_streamed.json": "openai-agents",
    "agents_responses.json": "openai-agents",  # the SDK's default Responses model
    "agents_responses_streamed.json": "openai-agents",
    "otel_agents_bridge.json": "otlp",
    "otel_openinference_agents.json": "otlp",  # OpenInference's Agents SDK instrumentation
    "otel_openinference_agents_streamed.json": "otlp",  # (no messages: output.value read)
    "otel_openinference_langgraph.json": "otlp",  # its LangChain one, on LangGraph
    "langgraph_events.jsonl": "langgraph-events",
    "langgraph_stream.jsonl": "langgraph-stream",
    # triage hands off by a Command, weather ⇄ tools in a subgraph (its state repeats them)
    "langgraph_subgraph_events.jsonl": "langgraph-events",
    "langgraph_subgraph_stream.jsonl": "langgraph-stream",
    "langgraph_tasks.jsonl": "langgraph-tasks",  # astream(stream_mode="tasks")
    # langgraph-swarm (0.1): two prebuilt react agents, triage's handoff tool a Command
    "langgraph_swarm_stream.jsonl": "langgraph-stream",
    "otel_logfire_agents.json": "otlp",  # Logfire's instrument_openai_agents() (5.4)
    "otel_logfire_agents_responses.json": "otlp",  # on the Responses model
}
SIMPLE = ["agents_simple.json", "langgraph_simple_events.jsonl"]


def cli(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [*CLI, *map(str, args)], cwd=cwd, capture_output=True, text=True, env=env, timeout=120
    )


def passes(trace: Trace, assertion: dict[str, Any]) -> bool:
    return evaluate_assertion(assertion, EvalContext(trace)).passed


@pytest.mark.parametrize("name", sorted(SUPPORT))
def test_support_trace_facts(name: str) -> None:
    assert facts(import_trace(FIXTURES / name)) == SUPPORT_FACTS


@pytest.mark.parametrize("name", SIMPLE)
def test_trace_without_tools(name: str) -> None:
    trace = import_trace(FIXTURES / name)
    assert facts(trace) == SIMPLE_FACTS
    assert trace.count("tool:*") == 0 and trace.count("agent:activated") == 1


@pytest.mark.parametrize("name", sorted(SUPPORT))
@pytest.mark.parametrize(
    ("right", "wrong"),
    [
        (
            {"type": "tool.calledWith", "name": "get_weather", "args": {"city": "Rome"}},
            {"type": "tool.calledWith", "name": "get_weather", "args": {"city": "Berlin"}},
        ),
        (
            {"type": "tool.sequence", "tools": ["get_weather", "get_alerts"]},
            {"type": "tool.sequence", "tools": ["get_alerts", "get_weather"]},
        ),
        (
            {"type": "agent.activated", "agentId": "weather"},
            {"type": "agent.activated", "agentId": "billing"},
        ),
        (
            {"type": "metric.tokens.max", "value": 168},
            {"type": "metric.tokens.max", "value": 167},
        ),
        (
            {"type": "metric.tokens.min", "value": 168},
            {"type": "metric.tokens.min", "value": 169},
        ),
        (
            {"type": "output.contains", "text": "sunny"},
            {"type": "output.contains", "text": "rainy"},
        ),
        (
            {
                "type": "signal.trajectory",
                "patterns": [
                    {"pattern": "agent:activated", "payload": {"agent": "triage"}},
                    {"pattern": "agent:handoff", "payload": {"from": "triage", "to": "weather"}},
                    {"pattern": "tool:call", "payload": {"name": "get_alerts"}},
                    "text:complete",
                ],
            },
            {
                "type": "signal.trajectory",
                "patterns": [
                    {"pattern": "tool:call", "payload": {"name": "get_alerts"}},
                    {"pattern": "agent:handoff", "payload": {"from": "triage", "to": "weather"}},
                ],
            },
        ),
    ],
    ids=["calledWith", "sequence", "activated", "tokens-max", "tokens-min", "output", "trajectory"],
)
def test_assertions_hold_on_imports_and_wrong_ones_fail(
    name: str, right: dict[str, Any], wrong: dict[str, Any]
) -> None:
    trace = import_trace(FIXTURES / name)
    assert passes(trace, right)
    assert not passes(trace, wrong)


@pytest.mark.parametrize("name", sorted(SUPPORT))
def test_format_is_detected_from_content_not_name(name: str, tmp_path: Path) -> None:
    from signal_eval_cli.traces import detect_format

    renamed = tmp_path / "trace.txt"
    renamed.write_bytes((FIXTURES / name).read_bytes())
    assert detect_format(Source.read(renamed)) == SUPPORT[name]
    assert facts(import_trace(renamed)) == SUPPORT_FACTS


@pytest.mark.parametrize("name", sorted(SUPPORT))
def test_parallel_calls_share_the_model_turn_in_emitted_order(name: str) -> None:
    trace = import_trace(FIXTURES / name)
    calls = list(trace.matching("tool:call"))
    paris, rome, alerts = calls
    assert (paris.payload["input"], rome.payload["input"]) == ({"city": "Paris"}, {"city": "Rome"})
    assert paris.parent is not None and paris.parent == rome.parent != alerts.parent
    assert trace.by_id(paris.parent).name == "provider:start"  # type: ignore[union-attr]


@pytest.mark.parametrize("name", sorted(SUPPORT))
def test_failed_tool_result_carries_its_error_and_ok_ones_none(name: str) -> None:
    trace = import_trace(FIXTURES / name)
    results = {p["id"]: p for p in trace.payloads("tool:result")}
    by_name = {c.name: results[c.id] for c in trace.tool_calls}
    assert isinstance(by_name["get_alerts"]["error"], str) and by_name["get_alerts"]["error"]
    assert "error" not in by_name["get_weather"]
    assert by_name["get_weather"]["result"] in ("Paris: sunny", "Rome: sunny")


@pytest.mark.parametrize("name", sorted(SUPPORT))
def test_signals_are_in_start_order_with_agent_sources(name: str) -> None:
    trace = import_trace(FIXTURES / name)
    names = [s.name for s in trace]
    assert names[0] == "harness:start" and names[-2:] == ["text:complete", "harness:end"]
    subgraph = "research"  # the parent graph's node running weather ⇄ tools as a subgraph
    assert [a for a, _ in trace.activations if a != subgraph][:2] == ["triage", "weather"]
    assert {s.agent for s in trace.matching("provider:*")} == {"triage", "weather"}
    assert {s.agent for s in trace.matching("tool:call")} <= {"weather", "tools"}
    assert len({s.id for s in trace}) == len(trace)


def test_langgraph_both_stream_shapes_give_the_same_signals() -> None:
    events = import_trace(FIXTURES / "langgraph_events.jsonl")
    stream = import_trace(FIXTURES / "langgraph_stream.jsonl")
    assert [(s.name, s.payload, s.agent) for s in events] == [
        (s.name, s.payload, s.agent) for s in stream
    ]


def test_langgraph_messages_without_ids_are_told_apart_by_content_not_address() -> None:
    """A tool result has no message id: it is known by its call id. The reader once keyed
    it by the ``id()`` of its dict, so a later result whose dict reused a freed address
    was dropped (the same object stands for that here)."""
    from signal_eval_cli.traces.langgraph import LangGraphReader
    from signal_eval_cli.traces.mapping import ToolRun

    reader = LangGraphReader()
    raw = {"type": "tool", "content": "Paris: sunny", "tool_call_id": "call_paris"}
    end = {
        "event": "on_chain_end",
        "name": "tools",
        "parent_ids": ["graph"],
        "metadata": {"langgraph_node": "tools"},
        "data": {"output": {"messages": [raw]}},
    }
    reader.event(end)
    raw.update(content="Rome: sunny", tool_call_id="call_rome")
    reader.event(end)
    reader.event(end)  # the same result again: kept once
    runs = [s for s in reader.facts.steps if isinstance(s, ToolRun)]
    assert [(r.id, r.result) for r in runs] == [
        ("call_paris", "Paris: sunny"),
        ("call_rome", "Rome: sunny"),
    ]


def test_streamed_langgraph_text_becomes_deltas() -> None:
    trace = import_trace(FIXTURES / "langgraph_events.jsonl")
    deltas = list(trace.matching("text:delta"))
    assert "".join(d.payload["content"] for d in deltas) == SUPPORT_FACTS["output"]
    assert {d.parent for d in deltas} == {
        trace.rfind("provider:start") and trace[trace.rfind("provider:start")].id
    }  # type: ignore[index]


@pytest.mark.parametrize(
    ("name", "format", "gap", "lacking"),
    [
        ("langgraph_updates.jsonl", "langgraph-updates", "holds no input", {"input": None}),
        ("langgraph_messages.jsonl", "langgraph-messages", "holds no input", {"input": None}),
        (
            "langgraph_values.jsonl",
            "langgraph-values",
            "does not say which node ran",
            {"handoffs": [(None, "weather")]},
        ),
    ],
)
def test_one_mode_langgraph_streams_give_the_facts_their_shape_holds(
    name: str, format: str, gap: str, lacking: dict[str, Any], tmp_path: Path
) -> None:
    """``astream`` in one mode, as most code streams (recorded by tests/record_traces.py):
    detected from the content, the same tool calls, errors, tokens and answer as the
    multi-mode stream, and what the shape lacks warned of, never guessed."""
    from signal_eval_cli.traces import detect_format

    renamed = tmp_path / "trace.jsonl"
    renamed.write_bytes((FIXTURES / name).read_bytes())
    assert detect_format(Source.read(renamed)) == format
    with pytest.warns(TraceGap, match=gap):
        trace = import_trace(renamed)
    assert facts(trace) == {**SUPPORT_FACTS, **lacking}
    if format == "langgraph-values":
        assert trace.activations == [] and {s.agent for s in trace} == {None}
    else:  # all the multi-mode stream says but its input (updates: and its deltas)
        full = import_trace(FIXTURES / "langgraph_stream.jsonl")
        deltas = format == "langgraph-messages"
        kept = [(s.name, s.payload, s.agent) for s in full if deltas or s.name != "text:delta"]
        assert [(s.name, s.payload, s.agent) for s in trace][1:] == kept[1:]


def test_a_langgraph_swarms_updates_give_its_agents_calls_and_handoff() -> None:
    """langgraph-swarm's agents are prebuilt react agents as nodes: the model calls are
    the agent's whose node ran them, and triage's handoff tool is one handoff to weather."""
    with pytest.warns(TraceGap, match="holds no input"):
        trace = import_trace(FIXTURES / "langgraph_swarm_updates.jsonl")
    assert facts(trace) == {**SUPPORT_FACTS, "input": None}
    calls = [s.agent for s in trace.matching("provider:end")]
    assert calls == ["triage", "weather", "weather", "weather"]
    assert [a for a, _ in trace.activations] == ["triage", "weather"]


def test_one_mode_streams_under_a_subgraph_namespace_are_read(tmp_path: Path) -> None:
    """``astream(..., subgraphs=True)`` in one mode writes ``[namespace, chunk]``."""
    lines = (FIXTURES / "langgraph_updates.jsonl").read_text(encoding="utf-8").splitlines()
    nested = tmp_path / "nested.jsonl"
    nested.write_text(
        "".join(json.dumps([["outer:1"], json.loads(line)]) + "\n" for line in lines),
        encoding="utf-8",
    )
    with pytest.warns(TraceGap):
        trace = import_trace(nested)
    assert facts(trace) == {**SUPPORT_FACTS, "input": None}


def test_langgraph_messages_written_as_text_are_warned_of_not_lost_silently(
    tmp_path: Path,
) -> None:
    """``json.dumps(chunk, default=str)`` turns each message into its repr: nothing in it
    can be trusted as a model or tool call, so the import says so."""
    text = tmp_path / "text.jsonl"
    lines = [
        {"triage": {"messages": ["content='' additional_kwargs={} tool_calls=[...]"]}},
        {"weather": {"messages": ["content='Paris and Rome are sunny today.'"]}},
    ]
    text.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        trace = import_trace(text)
    gaps = sorted(str(w.message).split(": ", 1)[1][:40] for w in warned)
    assert gaps == [
        'astream(stream_mode="updates") holds no ',
        "its messages were written as text (json.",
    ]
    assert [a for a, _ in trace.activations] == ["triage", "weather"]
    assert trace.tool_calls == [] and trace.output == ""


def test_a_jsonl_line_of_objects_without_messages_is_not_taken_for_updates(
    tmp_path: Path,
) -> None:
    """Only an update with ``messages`` makes a file LangGraph's: anything else stays
    ours, whose reader says which line is not a signal."""
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"payload": {"a": 1}}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"odd.jsonl:1:1: not a signal"):
        import_trace(odd)


def test_a_plain_responses_export_warns_of_what_it_lacks(tmp_path: Path) -> None:
    """The SDK's own export of a ``response`` span is only ``response_id`` and ``usage``:
    tools, handoffs and tokens still import; the missing input and answer are warned of."""
    data = json.loads((FIXTURES / "agents_responses.json").read_text(encoding="utf-8"))
    for item in data["data"]:
        if item.get("span_data", {}).get("type") == "response":
            for key in ("model", "input", "output"):
                del item["span_data"][key]
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(data), encoding="utf-8")
    with pytest.warns(TraceGap, match="holds no model, input or output"):
        trace = import_trace(plain)
    lacking = {**SUPPORT_FACTS, "input": None, "output": ""}
    assert facts(trace) == lacking
    assert len({c.id for c in trace.tool_calls}) == 3  # each call keeps an id of its own
    result = cli("import", plain, "-o", tmp_path / "out.jsonl", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("warning: ") == 1
    assert "plain.json: the SDK's export of a 'response' span" in result.stderr
    quiet = cli("import", FIXTURES / "agents_responses.json", "-o", tmp_path / "full.jsonl")
    assert quiet.returncode == 0 and "warning" not in quiet.stderr


OPENAI_V2 = ["otel_openai.json", "otel_openai_streamed.json"]
OTHER_INSTRUMENTATIONS = [  # tests/record_otel_instrumentations.py, protobuf's JSON
    "otel_openai_openinference.json",  # OpenInference: llm.input_messages.<i>.message.*
    "otel_openai_openllmetry_streamed.json",  # OpenLLMetry: gen_ai.input/output.messages
    # openai-v2 2.4b0 with gen_ai_latest_experimental, SPAN_ONLY: the messages on the spans
    "otel_openai_v2_latest_spans_streamed.jsonl",
    "otel_logfire_openai.json",  # Pydantic Logfire's instrument_openai() (5.4)
    "otel_logfire_openai_streamed.json",
]


def test_logfires_streamed_call_is_one_call_with_its_answer_and_usage() -> None:
    """Logfire records a streamed call as its request's span (the input only, ended when
    the stream is handed back) and, once read, a log of no duration beside it holding the
    answer and usage: read as two calls each, one of no answer and no token (warned)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every call has its usage and messages
        trace = import_trace(FIXTURES / "otel_logfire_openai_streamed.json")
    ends = [s.payload for s in trace.matching("provider:end")]
    assert [e["usage"] for e in ends] == [
        {"inputTokens": 30, "outputTokens": 10},
        {"inputTokens": 40, "outputTokens": 6},
        {"inputTokens": 50, "outputTokens": 7},
    ]
    assert ends[-1]["output"] == LOOP_FACTS["output"]
    assert [s.payload["name"] for s in trace.matching("span:*")] == ["weather-agent"]  # the app's


VERCEL_AI = ["otel_vercel_ai.json", "otel_vercel_ai_streamed.json"]  # record_vercel_ai.mjs


@pytest.mark.parametrize("name", VERCEL_AI)
def test_the_vercel_ai_sdks_telemetry_gives_the_runs_facts(name: str) -> None:
    """TypeScript's AI SDK (generateText, streamText) names its operations in
    ``ai.operationId`` and keeps the messages in ``ai.*`` attributes: read as GenAI's.
    Its tool spans record the raise (get_alerts: error); the call's ``functionId`` is the
    agent."""
    trace = import_trace(FIXTURES / name)
    assert facts(trace) == {**LOOP_FACTS, "calls": SUPPORT_FACTS["calls"]}
    assert [a for a, _ in trace.activations] == ["weather"]
    assert {s.agent for s in trace.matching("provider:*")} == {"weather"}
    first, second, _ = trace.matching("tool:call")
    assert first.parent == second.parent  # one model turn
    assert not list(trace.matching("span:*"))  # every span read


@pytest.mark.parametrize("name", OPENAI_V2 + OTHER_INSTRUMENTATIONS)
def test_openai_v2_instrumentation_gives_input_output_and_tool_calls(name: str) -> None:
    """``opentelemetry-instrumentation-openai-v2`` (and OpenInference's and OpenLLMetry's
    instrumentations of the same client): ``chat`` spans only (no tool spans), the
    messages folded in from its log events or read from the span's attributes; tools run
    are the calls the model requested whose results the next call was sent, parallel ones
    in the order emitted."""
    trace = import_trace(FIXTURES / name)
    assert facts(trace) == LOOP_FACTS
    first, second = list(trace.matching("tool:call"))[:2]
    assert (first.payload["input"], second.payload["input"]) == (
        {"city": "Paris"},
        {"city": "Rome"},
    )
    assert first.parent == second.parent  # one model turn
    assert passes(trace, {"type": "tool.parallel", "tools": ["get_weather", "get_weather"]})
    assert not passes(trace, {"type": "tool.parallel", "tools": ["get_weather", "get_alerts"]})
    results = [p["result"] for p in trace.payloads("tool:result")]
    assert results[-1] == "error: alerts service down for Paris"


def test_an_otlp_file_without_message_content_warns(tmp_path: Path) -> None:
    """Exported without its log events, a span holds the model and tokens only: said."""
    text = (FIXTURES / "otel_openai.json").read_text(encoding="utf-8")
    data = json.loads(text)
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                span["attributes"] = [
                    a for a in span["attributes"] if not a["key"].endswith(".messages")
                ]
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(data), encoding="utf-8")
    with pytest.warns(TraceGap, match="carry no messages"):
        trace = import_trace(bare)
    assert facts(trace) == {**LOOP_FACTS, "input": None, "calls": [], "output": ""}
    result = cli("import", bare, "-o", tmp_path / "out.jsonl", cwd=tmp_path)
    assert result.returncode == 0 and "warning: " in result.stderr, result.stderr


def test_agents_harness_span_bounds_give_duration() -> None:
    trace = import_trace(FIXTURES / "agents_support.json")
    assert trace.latency_ms is not None and trace.latency_ms > 0


# -- unknown records are kept ------------------------------------------------------


def test_unknown_agents_span_type_is_kept_as_a_signal(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "agents_simple.json").read_text(encoding="utf-8"))
    data["data"].insert(
        0,
        {
            "object": "trace.span",
            "id": "span_new",
            "trace_id": "trace_1",
            "parent_id": None,
            "started_at": "2026-01-01T00:00:00+00:00",
            "ended_at": "2026-01-01T00:00:01+00:00",
            "span_data": {"type": "mcp_tools", "server": "files", "result": ["read"]},
            "error": None,
        },
    )
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    trace = import_trace(path)
    kept = list(trace.matching("span:mcp_tools"))
    assert [s.payload for s in kept] == [
        {"server": "files", "result": ["read"], "spanId": "span_new"}
    ]
    found = {"type": "signal.contains", "pattern": "span:mcp_tools", "payload": {"server": "files"}}
    assert passes(trace, found)
    assert not passes(trace, {**found, "payload": {"server": "web"}})


def _with_line(name: str, at: int, record: Any, tmp_path: Path) -> Path:
    lines = (FIXTURES / name).read_text(encoding="utf-8").splitlines()
    lines.insert(at, json.dumps(record))
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _otlp_with(span: dict[str, Any], tmp_path: Path) -> Path:
    data = json.loads((FIXTURES / "otel_agents_bridge.json").read_text(encoding="utf-8"))
    data["resourceSpans"][0]["scopeSpans"][0]["spans"].append(span)
    path = tmp_path / "otel.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("make", "kept"),
    [
        (
            lambda p: _otlp_with(
                _span("00000000000000e5", None, "embeddings m", 1, gen_ai__operation__name="embeddings", gen_ai__request__model="emb"),
                p,
            ),
            {"pattern": "span:embeddings", "payload": {"attributes": {"gen_ai.request.model": "emb"}}},
        ),
        (
            lambda p: _with_line(
                "langgraph_events.jsonl",
                3,
                {"event": "on_custom_event", "name": "progress", "data": {"pct": 50}, "run_id": "r", "metadata": {"langgraph_node": "weather"}, "parent_ids": []},
                p,
            ),
            {"pattern": "langgraph:on_custom_event", "payload": {"name": "progress", "data": {"pct": 50}}},
        ),
        (
            lambda p: _with_line("langgraph_stream.jsonl", 2, ["custom", {"pct": 50}], p),
            {"pattern": "langgraph:custom", "payload": {"pct": 50}},
        ),
    ],
    ids=["otlp-operation", "langgraph-event", "langgraph-mode"],
)  # fmt: skip
def test_unknown_records_of_every_format_are_kept(
    make: Any, kept: dict[str, Any], tmp_path: Path
) -> None:
    trace = import_trace(make(tmp_path))
    assert passes(trace, {"type": "signal.contains", **kept})
    wrong = json.loads(json.dumps(kept).replace("50", "51").replace('"emb"', '"other"'))
    assert not passes(trace, {"type": "signal.contains", **wrong})
    assert facts(trace) == SUPPORT_FACTS  # kept beside the facts, which stay as they were


def _attr(key: str, value: Any) -> dict[str, Any]:
    from signal_eval_cli.traces.otlp_encode import any_value

    return {"key": key, "value": any_value(value)}


def _span(span_id: str, parent: str | None, name: str, start: int, **attrs: Any) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": "0" * 31 + "1",
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": str(start * 1_000_000),
        "endTimeUnixNano": str((start + 5) * 1_000_000),
        "attributes": [_attr(k.replace("__", "."), v) for k, v in attrs.items()],
        "status": attrs.pop("status", {"code": 0}) if "status" in attrs else {"code": 0},
    }
    if parent:
        span["parentSpanId"] = parent
    return span


def _otlp(*spans: dict[str, Any]) -> dict[str, Any]:
    return {
        "resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": list(spans)}]}]
    }


def old_names_request() -> dict[str, Any]:
    """GenAI spans with the pre-1.30 names (prompt/completion tokens, gen_ai.prompt)."""
    failed = _span(
        "00000000000000f4",
        "00000000000000a1",
        "execute_tool lookup",
        30,
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name="lookup",
        gen_ai__tool__call__id="call_1",
        gen_ai__tool__call__arguments='{"q": "x"}',
        error__type="TimeoutError",
    )
    failed["status"] = {"code": 2, "message": "lookup timed out"}
    return _otlp(
        _span(
            "00000000000000a1",
            None,
            "invoke_agent helper",
            0,
            gen_ai__operation__name="invoke_agent",
            gen_ai__agent__name="helper",
            gen_ai__usage__input_tokens=999,  # the sum of its calls: must not count twice
            gen_ai__usage__output_tokens=999,
        ),
        _span(
            "00000000000000b2",
            "00000000000000a1",
            "chat m",
            10,
            gen_ai__operation__name="chat",
            gen_ai__system="openai",
            gen_ai__request__model="m-old",
            gen_ai__usage__prompt_tokens=11,
            gen_ai__usage__completion_tokens=3,
            gen_ai__prompt=json.dumps([{"role": "user", "content": "find x"}]),
        ),
        failed,
        _span(
            "00000000000000c3",
            "00000000000000a1",
            "llm",
            40,
            openinference__span__kind="LLM",
            llm__model_name="m-oi",
            llm__token_count__prompt=7,
            llm__token_count__completion=2,
        ),
        _span("00000000000000d4", "00000000000000a1", "db.query", 50, db__system="sqlite"),
    )


def test_otlp_old_names_openinference_and_aggregates(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old_names_request()), encoding="utf-8")
    with pytest.warns(TraceGap, match="carry no messages"):  # none of its spans has any
        trace = import_trace(path)
    assert trace.input == "find x"
    assert (trace.metrics.input_tokens, trace.metrics.output_tokens) == (18, 5)
    assert [p["model"] for p in trace.payloads("provider:start")] == ["m-old", "m-oi"]
    (result,) = trace.payloads("tool:result")
    assert result["error"] == "lookup timed out" and result["id"] == "call_1"
    assert trace.tool_calls[0].input == {"q": "x"}
    assert [s.payload["name"] for s in trace.matching("span:other")] == ["db.query"]
    assert trace.activations[0][0] == "helper"
    assert passes(trace, {"type": "metric.tokens.max", "value": 23})
    assert not passes(trace, {"type": "metric.tokens.max", "value": 22})


# -- bad files: exit 2, located, no traceback ------------------------------------------


def _truncated(name: str, tmp_path: Path) -> Path:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    path = tmp_path / name
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    return path


def _bad_span(tmp_path: Path) -> Path:
    data = json.loads((FIXTURES / "agents_support.json").read_text(encoding="utf-8"))
    victim = data["data"][3]
    del victim["span_data"]
    path = tmp_path / "agents.json"
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def _bad_otlp_time(tmp_path: Path) -> Path:
    request = old_names_request()
    request["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["startTimeUnixNano"] = "soon"
    path = tmp_path / "otlp.json"
    path.write_text(json.dumps(request, indent=1), encoding="utf-8")
    return path


def _huge_otlp_time(tmp_path: Path) -> Path:
    request = old_names_request()
    request["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["endTimeUnixNano"] = "9" * 400
    path = tmp_path / "otlp.json"
    path.write_text(json.dumps(request, indent=1), encoding="utf-8")
    return path


def _deep(tmp_path: Path) -> Path:
    path = tmp_path / "deep.json"
    path.write_text('{"resourceSpans": ' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    return path


def _bad_langgraph_line(tmp_path: Path) -> Path:
    lines = (FIXTURES / "langgraph_events.jsonl").read_text(encoding="utf-8").splitlines()
    lines[4] = '{"event": "on_chain_start", "name": '
    path = tmp_path / "lg.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("make", "where"),
    [
        (lambda p: _truncated("agents_support.json", p), r"agents_support.json:\d+:\d+: not JSON"),
        (
            lambda p: _truncated("otel_agents_bridge.json", p),
            r"otel_agents_bridge.json:\d+:\d+: not JSON",
        ),
        (
            lambda p: _truncated("langgraph_stream.jsonl", p),
            r"langgraph_stream.jsonl:\d+:\d+: not JSON",
        ),
        (_bad_span, r"agents.json:\d+:1: span has no 'span_data' object \(span span_\w+\)"),
        (
            _bad_otlp_time,
            r"otlp.json:\d+:1: 'startTimeUnixNano' is not an integer: 'soon' \(span 00000000000000b2\)",
        ),
        (
            _huge_otlp_time,
            r"otlp.json:\d+:1: 'endTimeUnixNano' is out of range: '9+… \(402 characters\) "
            r"\(span 00000000000000b2\)",
        ),
        (_deep, r"deep.json:1:\d+: not JSON: nested too deep"),
        (_bad_langgraph_line, r"lg.jsonl:5:\d+: not JSON"),
    ],
    ids=[
        "agents-truncated",
        "otlp-truncated",
        "langgraph-truncated",
        "span-data",
        "otlp-time",
        "otlp-time-range",
        "deep",
        "lg-line",
    ],
)
def test_bad_trace_exits_2_located(make: Any, where: str, tmp_path: Path) -> None:
    import re

    path = make(tmp_path)
    before = path.read_bytes()
    result = cli("import", path, "-o", tmp_path / "out.jsonl", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert re.search(where, result.stderr), result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out.jsonl").exists()
    assert path.read_bytes() == before
    with pytest.raises(InputError):
        import_trace(path)


@pytest.mark.parametrize(
    "value",
    [{"intValue": "abc"}, {"intValue": "9" * 5000}, {"doubleValue": "x"}, {"arrayValue": 7}],
    ids=["int", "int-digits", "double", "array"],
)
def test_an_attribute_value_otlp_cannot_hold_is_named_at_its_span(
    value: dict[str, Any], tmp_path: Path
) -> None:
    """It said 'not a valid otlp trace: ValueError: invalid literal for int() with base
    10: 'abc'', of no span, no attribute and no line."""
    request = old_names_request()
    span = request["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    span["attributes"].append({"key": "gen_ai.usage.input_tokens", "value": value})
    path = tmp_path / "otlp.json"
    path.write_text(json.dumps(request, indent=1), encoding="utf-8")
    with pytest.raises(InputError) as raised:
        import_trace(path)
    (problem,) = raised.value.problems
    assert problem.line > 1 and problem.message.startswith(
        "attribute 'gen_ai.usage.input_tokens': {"
    ), problem
    assert problem.message.endswith(f"is not a valid OTLP AnyValue (span {span['spanId']})")


def test_unknown_format_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"spans": []}', encoding="utf-8")
    result = cli("import", path, "-o", tmp_path / "o.jsonl", cwd=tmp_path)
    assert result.returncode == 2 and "unknown trace format" in result.stderr


@pytest.mark.parametrize("first", ["[[1], 2]", '[{"a": 1}, "values"]', "[[], [], {}]"])
def test_a_first_line_of_lists_is_an_unknown_format_not_a_crash(first: str, tmp_path: Path) -> None:
    """Telling a LangGraph stream line (``[mode, chunk]``) from others once hashed the
    mode's place, and a list there raised TypeError out of the import."""
    path = tmp_path / "t.jsonl"
    path.write_text(first + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"t.jsonl:1:1: (unknown trace format|not a signal)"):
        import_trace(path)


# -- the CLI ------------------------------------------------------------------------------


def test_import_cli_writes_jsonl_that_reads_back(tmp_path: Path) -> None:
    result = cli(
        "import",
        *(FIXTURES / n for n in sorted(SUPPORT)),
        "--out-dir",
        tmp_path / "out",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    for name in SUPPORT:
        written = tmp_path / "out" / (Path(name).stem + ".jsonl")
        assert facts(import_trace(written)) == SUPPORT_FACTS


def test_import_cli_needs_an_output(tmp_path: Path) -> None:
    result = cli("import", FIXTURES / "agents_simple.json", cwd=tmp_path)
    assert result.returncode == 2 and "--output" in result.stderr


DATASET = """\
name: imported
cases:
  - id: agents
    input: What is the weather in Paris and Rome?
    assertions: &facts
      - {type: tool.calledWith, name: get_weather, args: {city: Paris}}
      - {type: tool.sequence, tools: [get_weather, get_weather, get_alerts]}
      - {type: agent.activated, agentId: weather}
      - {type: metric.tokens.max, value: 168}
      - {type: output.contains, text: sunny}
  - id: otel
    assertions: *facts
  - id: langgraph
    assertions: *facts
"""


def test_run_traces_accepts_framework_formats(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    for case, name in [
        ("agents", "agents_support.json"),
        ("otel", "otel_agents_bridge.json"),
        ("langgraph", "langgraph_events.jsonl"),
    ]:
        (traces / f"{case}{Path(name).suffix}").write_bytes((FIXTURES / name).read_bytes())
    (tmp_path / "d.yaml").write_text(DATASET, encoding="utf-8")
    result = cli("run", "d.yaml", "--traces", "traces", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed, 0 failed" in result.stdout
    wrong = DATASET.replace("value: 168", "value: 167")
    (tmp_path / "d.yaml").write_text(wrong, encoding="utf-8")
    result = cli("run", "d.yaml", "--traces", "traces", cwd=tmp_path)
    assert result.returncode == 1 and "0 passed, 3 failed" in result.stdout


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_left_as_it_was_after_an_import_good_or_bad(
    enabled: bool, tmp_path: Path
) -> None:
    """Mapping pauses the cyclic GC; it is restored (never turned on if it was off)."""
    import gc

    bad = tmp_path / "bad.json"
    bad.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [7]}]}]}', encoding="utf-8")
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        import_trace(FIXTURES / "otel_agents_bridge.json")
        assert gc.isenabled() is enabled
        with pytest.raises(InputError):
            import_trace(bad)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_the_readme_example_dataset_passes_on_its_framework_traces(tmp_path: Path) -> None:
    """datasets/frameworks.yaml with datasets/traces (the fixtures), run outside the repo."""
    import shutil

    from flows_helpers import cli as user_cli

    shutil.copytree(ROOT / "datasets", tmp_path / "datasets")
    run = user_cli("run", "datasets/frameworks.yaml", "--traces", "datasets/traces", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 passed, 0 failed" in run.stdout
    for name in ("agents-sdk.json", "otel.json", "langgraph.jsonl"):
        assert facts(import_trace(tmp_path / "datasets" / "traces" / name)) == SUPPORT_FACTS


def test_write_signal_files_reads_every_trace_then_writes_each_in_process(tmp_path: Path) -> None:
    """What ``import --out-dir``/``--output`` call: the files written, each read back as
    the trace imported; a clash or an input overwritten refused before any write."""
    from signal_eval_cli.signals import read_jsonl
    from signal_eval_cli.traces import read_trace_signals
    from signal_eval_cli.traces.export import write_signal_files

    paths = [FIXTURES / name for name in SIMPLE]
    written: list[tuple[Path, int]] = []
    out = tmp_path / "out"
    targets = write_signal_files(paths, out_dir=out, on_written=lambda p, n: written.append((p, n)))
    assert targets == [out / f"{p.stem}.jsonl" for p in paths]
    for path, (target, count) in zip(paths, written, strict=True):
        signals = read_trace_signals(path)[0]
        assert len(read_jsonl(target)) == count == len(signals) > 0
    with pytest.raises(InputError, match="--output takes one trace"):
        write_signal_files(paths, output=tmp_path / "one.jsonl")
    with pytest.raises(InputError, match="two traces would be written to"):
        write_signal_files([paths[0], tmp_path / "x" / paths[0].name], out_dir=out)
    with pytest.raises(InputError, match="one of the input traces"):
        write_signal_files(paths[:1], output=paths[0])
    with pytest.raises(InputError, match="--output FILE or --out-dir DIR, not both"):
        write_signal_files(paths[:1], output=tmp_path / "a.jsonl", out_dir=tmp_path / "d")
    assert not (tmp_path / "a.jsonl").exists() and not (tmp_path / "d").exists()


def test_openinference_flattened_messages_become_chat_messages() -> None:
    """Indexed attributes, in any order, with text parts, tool calls and a tool result;
    a key that only looks alike is left alone."""
    from signal_eval_cli.traces.openinference import chat_messages

    attributes = {
        "llm.output_messages.0.message.tool_calls.1.tool_call.function.name": "get_weather",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_paris",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"c": 1}',
        "llm.output_messages.0.message.tool_calls.1.tool_call.id": "call_rome",
        "llm.output_messages.0.message.role": "assistant",
        "llm.input_messages.10.message.role": "tool",
        "llm.input_messages.10.message.tool_call_id": "call_x",
        "llm.input_messages.10.message.content": "sunny",
        "llm.input_messages.2.message.role": "user",
        "llm.input_messages.2.message.contents.1.message_content.text": "world",
        "llm.input_messages.2.message.contents.0.message_content.text": "hello ",
        "llm.input_messages.2.message.contents.0.message_content.type": "text",
        "llm.input_messages.x.message.role": "user",
        "llm.token_count.prompt": 3,
    }
    assert chat_messages(attributes) == {
        "input": [
            {"role": "user", "content": "hello world"},
            {"role": "tool", "tool_call_id": "call_x", "content": "sunny"},
        ],
        "output": [
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "type": "function",
                        "id": "call_paris",
                        "function": {"name": "get_weather", "arguments": '{"c": 1}'},
                    },
                    {"type": "function", "id": "call_rome", "function": {"name": "get_weather"}},
                ],
            }
        ],
    }


def test_a_bad_line_in_a_messages_stream_is_located(tmp_path: Path) -> None:
    first = (FIXTURES / "langgraph_messages.jsonl").read_text(encoding="utf-8").splitlines()[0]
    path = tmp_path / "t.jsonl"
    path.write_text(first + '\n["values", {}]\n', encoding="utf-8")
    with pytest.raises(InputError, match=r't.jsonl:2:1: not an astream\(stream_mode="messages"\)'):
        import_trace(path)


def test_a_chat_completions_response_reads_as_its_messages() -> None:
    """OpenInference keeps a model call's raw response in ``output.value``: a Chat
    Completions response is read through its choices' messages."""
    from signal_eval_cli.traces.mapping import ToolRequest, model_output

    response = {
        "object": "chat.completion",
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": "hi",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "f", "arguments": "{}"},
                        }
                    ],
                }
            },
            "not a choice",
        ],
    }
    assert model_output(response) == ("hi", [ToolRequest("c1", "f", {})])


@pytest.mark.parametrize(
    ("value", "result"),
    [
        ('{"type": "tool", "data": {"content": "Paris: sunny"}}', "Paris: sunny"),
        ('{"type": "tool", "data": {"content": ["a", "b"]}}', ["a", "b"]),
        ('{"type": "ai", "data": {"content": "x"}}', '{"type": "ai", "data": {"content": "x"}}'),
        ('{"type": "tool"', '{"type": "tool"'),  # not JSON: kept as the text it is
        ("Paris: sunny", "Paris: sunny"),
        (None, None),
    ],
)
def test_a_serialized_tool_message_output_reads_as_its_content(value: Any, result: Any) -> None:
    from signal_eval_cli.traces.openinference import tool_output

    assert tool_output(value) == result


@pytest.mark.parametrize(
    ("name", "metadata", "node"),
    [
        ("weather", '{"langgraph_node": "weather", "langgraph_step": 2}', "weather"),
        ("after_weather", '{"langgraph_node": "weather"}', None),  # an edge, in its step
        ("__start__", '{"langgraph_node": "__start__"}', None),
        ("weather", "not json", None),
        ("weather", None, None),
    ],
)
def test_only_a_langgraph_nodes_own_chain_span_is_an_agent_run(
    name: str, metadata: str | None, node: str | None
) -> None:
    from signal_eval_cli.traces.openinference import langgraph_node

    attributes = {"metadata": metadata} if metadata is not None else {}
    assert langgraph_node(name, attributes) == node


def test_a_langgraph_state_without_messages_keeps_its_model_calls() -> None:
    """A node that keeps the model's reply in a field of its own returns no AI message:
    its call (model, tokens, streamed text) is read from its chat model's end event, and
    the input is the whole input state (tests/record_traces.py, the real LangGraph)."""
    trace = import_trace(FIXTURES / "langgraph_simple_answer_events.jsonl")
    assert trace.input == {"question": "Hi"}
    assert [a for a, _ in trace.activations] == ["answer"]
    assert [(s.name, s.agent) for s in trace.matching("provider:*")] == [
        ("provider:start", "answer"),
        ("provider:end", "answer"),
    ]
    assert (trace.metrics.input_tokens, trace.metrics.output_tokens) == SIMPLE_FACTS["tokens"]
    assert trace.output == SIMPLE_FACTS["output"]
    assert "".join(p["content"] for p in trace.payloads("text:delta")) == trace.output
    assert passes(trace, {"type": "metric.tokens.max", "value": 16})
    assert not passes(trace, {"type": "metric.tokens.max", "value": 15})


def test_a_stream_of_a_state_without_messages_has_that_state_as_input() -> None:
    from signal_eval_cli.traces.langgraph import LangGraphReader

    reader = LangGraphReader()
    reader.stream_item(["values", {"question": "Hi"}])
    reader.stream_item(["values", {"question": "Hi", "answer": "Hello"}])
    assert reader.facts.input == {"question": "Hi"}
    with_messages = LangGraphReader()
    with_messages.stream_item(["values", {"messages": [], "question": "Hi"}])
    assert with_messages.facts.input is None  # a messages state: its user's text, none yet


@pytest.mark.parametrize(
    ("status", "events", "error"),
    [
        (
            {"code": "STATUS_CODE_ERROR"},
            [("ValueError", "down for Paris")],
            "ValueError: down for Paris",
        ),
        ({"code": 2}, [("A", "first"), ("B", "last")], "B: last"),  # the last one recorded
        ({"code": 2, "message": "said so"}, [("ValueError", "x")], "said so"),  # status first
        ({"code": 2}, [], "error"),
        ({"code": 0}, [("ValueError", "caught")], None),  # recorded, but the span succeeded
    ],
)
def test_a_failed_otlp_tool_span_says_the_exception_it_recorded(
    status: dict[str, Any], events: list[tuple[str, str]], error: str | None, tmp_path: Path
) -> None:
    """OTel's ``record_exception`` writes an ``exception`` event (Pydantic AI's tool spans
    carry nothing else): its type and message are the tool call's error."""
    tool = _span(
        "00000000000000f4",
        None,
        "execute_tool get_alerts",
        10,
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name="get_alerts",
        gen_ai__tool__call__id="call_alerts",
    )
    tool["status"] = status
    tool["events"] = [
        {
            "name": "exception",
            "attributes": [_attr("exception.type", kind), _attr("exception.message", message)],
        }
        for kind, message in events
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_otlp(tool)), encoding="utf-8")
    (result,) = import_trace(path).payloads("tool:result")
    assert result.get("error") == error


@pytest.mark.parametrize(
    ("tool", "handoffs"),
    [
        ("transfer_to_weather", [("triage", "weather")]),
        ("transfer_back_to_supervisor", [("triage", "supervisor")]),  # langgraph-supervisor
        ("transfer_to_", []),  # no agent named: an ordinary tool
        ("transfer_weather", []),
    ],
)
def test_handoff_tools_by_name(tool: str, handoffs: list[tuple[str, str]]) -> None:
    from signal_eval_cli.traces.langgraph import LangGraphReader
    from signal_eval_cli.traces.mapping import to_signals

    reader = LangGraphReader()
    call = {"name": tool, "args": {}, "id": "c1"}
    ai = {"type": "ai", "id": "m1", "content": "", "tool_calls": [call]}
    result = {"type": "tool", "id": "m2", "content": "ok", "tool_call_id": "c1", "name": tool}
    reader.stream_item(["updates", {"triage": {"messages": [ai, result]}}])
    trace = Trace(to_signals(reader.facts))
    assert [(p["from"], p["to"]) for p in trace.payloads("agent:handoff")] == handoffs
    assert [c.name for c in trace.tool_calls] == ([] if handoffs else [tool])


def test_an_id_of_the_wrong_type_is_a_located_error_not_a_crash(tmp_path: Path) -> None:
    """Linking calls to their results hashes ids: one that is an object raised TypeError
    out of the import (found by mutating the fixtures)."""
    ai = {"type": "ai", "id": "m1", "content": "", "tool_calls": [{"name": "f", "args": {}}]}
    result = {"type": "tool", "id": "m2", "content": "ok", "tool_call_id": {"x": 1}}
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"agent": {"messages": [ai, result]}}) + "\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceGap)
        with pytest.raises(InputError, match=r"t.jsonl: not a valid langgraph-updates trace: "):
            import_trace(path)


# A run that failed says so: the framework's error on the agent's span (max turns passed,
# the provider refusing a call) is an agent:error, a failed model call a provider:error.
MAX_TURNS = [
    "agents_max_turns.json",
    "otel_agents_bridge_max_turns.json",
    "otel_openinference_agents_max_turns.json",
]


@pytest.mark.parametrize("name", MAX_TURNS)
def test_a_run_past_max_turns_fails_its_agent(name: str) -> None:
    trace = import_trace(FIXTURES / name)
    (error,) = trace.matching("agent:error")
    assert error.payload["agent"] == "weather" and error.agent == "weather"
    assert "Max turns exceeded" in error.payload["error"]
    assert [s.name for s in trace][-3:] == ["agent:error", "text:complete", "harness:end"]
    assert trace.output == ""  # it raised: no answer
    assert not passes(trace, {"type": "agent.completed", "agentId": "weather"})
    assert passes(trace, {"type": "agent.completed", "agentId": "triage"})
    assert not passes(trace, {"type": "signal.not", "pattern": "agent:error"})


@pytest.mark.parametrize(
    "name",
    [
        "agents_model_error.json",
        "otel_openai_model_error.json",
        "otel_pydantic_ai_refused.json",
        "otel_logfire_openai_model_error.json",
    ],
)
def test_a_model_call_the_provider_refused_is_a_provider_error(name: str) -> None:
    trace = import_trace(FIXTURES / name)
    (failed,) = trace.matching("provider:error")
    assert "context too long" in failed.payload["error"]
    assert trace.by_id(failed.parent).name == "provider:start"  # type: ignore[union-attr]
    assert not list(trace.matching("provider:end")) and not list(trace.matching("tool:*"))
    assert trace.input == "What is the weather in Paris and Rome?"  # though no call said it
    if name.startswith(("otel_openai", "otel_logfire_openai")):  # a client loop: no agents
        return
    agent = "weather" if "pydantic" in name else "triage"
    assert failed.agent == agent
    (error,) = trace.matching("agent:error")
    assert error.payload["agent"] == agent and "context too long" in error.payload["error"]
    assert not passes(trace, {"type": "agent.completed", "agentId": agent})


def test_a_failed_model_call_is_no_missing_content(tmp_path: Path) -> None:
    """A call that failed has no answer: no warning that the file lacks messages."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import_trace(FIXTURES / "otel_pydantic_ai_refused.json")


def test_a_pydantic_ai_run_past_its_request_limit_fails_after_its_tool_calls() -> None:
    trace = import_trace(FIXTURES / "otel_pydantic_ai_request_limit.json")
    assert [c.payload["input"] for c in trace.matching("tool:call")] == [
        {"city": "Paris"},
        {"city": "Rome"},
    ]
    (error,) = trace.matching("agent:error")
    assert error.payload["agent"] == "weather" and "UsageLimitExceeded" in error.payload["error"]
    assert [s.name for s in trace][-3:] == ["agent:error", "text:complete", "harness:end"]
    assert trace.output == ""  # it raised: no answer


@pytest.mark.parametrize("name", sorted(SUPPORT))
def test_a_run_that_ended_well_has_no_agent_or_provider_error(name: str) -> None:
    trace = import_trace(FIXTURES / name)
    assert not list(trace.matching("agent:error")) and not list(trace.matching("provider:error"))
    assert passes(trace, {"type": "agent.completed", "agentId": "weather"})


def test_a_langgraph_node_that_raised_ends_the_stream_and_fails() -> None:
    """astream_events records no error: the exception ends the stream inside the node."""
    with pytest.warns(TraceGap, match="the stream ends inside node 'publish'"):
        trace = import_trace(FIXTURES / "langgraph_node_error_events.jsonl")
    (error,) = trace.matching("agent:error")
    assert error.payload["agent"] == "publish" and "never finished" in error.payload["error"]
    assert passes(trace, {"type": "agent.completed", "agentId": "answer"})
    assert not passes(trace, {"type": "agent.completed", "agentId": "publish"})


def test_an_on_chain_error_event_names_the_nodes_error(tmp_path: Path) -> None:
    """A recorder that keeps callback errors (``on_chain_error``) gives the message; a
    node that ended is no failure, however the stream ends."""
    lines = (FIXTURES / "langgraph_node_error_events.jsonl").read_text().splitlines()
    start = next(json.loads(x) for x in lines if '"on_chain_start"' in x and '"publish"' in x)
    error = {**start, "event": "on_chain_error", "data": {"error": "RuntimeError('down')"}}
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([*lines, json.dumps(error)]) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no gap: the error was recorded
        trace = import_trace(path)
    (failed,) = trace.matching("agent:error")
    assert failed.payload == {"agent": "publish", "error": "RuntimeError('down')"}
    answer = FIXTURES / "langgraph_simple_answer_events.jsonl"
    cut = tmp_path / "cut.jsonl"  # the graph's own end missing, every node ended
    cut.write_text("\n".join(answer.read_text().splitlines()[:-1]) + "\n")
    assert not list(import_trace(cut).matching("agent:error"))


def test_a_guardrail_tripwire_fails_the_agent_it_guards() -> None:
    """The SDK puts the tripwire's error on the ``turn`` span: the agent it ran in failed."""
    trace = import_trace(FIXTURES / "agents_guardrail_error.json")
    (error,) = trace.matching("agent:error")
    assert error.payload == {"agent": "triage", "error": "Guardrail tripwire triggered"}
    bridged = import_trace(FIXTURES / "otel_agents_bridge_guardrail_error.json")
    (error,) = bridged.matching("agent:error")  # the OTel bridge's turn span: status ERROR
    assert error.payload["agent"] == "triage" and "tripwire" in error.payload["error"]
    assert not passes(bridged, {"type": "agent.completed", "agentId": "triage"})
    (guard,) = trace.matching("span:guardrail")
    assert guard.payload["triggered"] is True and guard.agent == "triage"
    assert not passes(trace, {"type": "agent.completed", "agentId": "triage"})
    assert not list(trace.matching("provider:*"))  # stopped before the model was called


OUTPUT_GUARDED = [  # the SDK's export, its OTel bridge, OpenInference, Logfire (SDK 0.24)
    "agents_output_guardrail_error.json",
    "otel_agents_bridge_output_guardrail_error.json",
    "otel_openinference_agents_output_guardrail_error.json",
    "otel_logfire_agents_output_guardrail_error.json",
]


@pytest.mark.parametrize("name", OUTPUT_GUARDED)
def test_an_output_guardrails_tripwire_withholds_the_answer_it_blocked(name: str) -> None:
    """``Runner.run`` raises ``OutputGuardrailTripwireTriggered`` after the model answered:
    the user never gets that answer. The model call keeps what it said; the run's output
    is empty, so an output assertion on the blocked text fails."""
    trace = import_trace(FIXTURES / name)
    (error,) = trace.matching("agent:error")
    assert error.payload == {"agent": "simple", "error": "Guardrail tripwire triggered"}
    (answered,) = trace.matching("provider:end")
    assert answered.payload["output"] == "Hello there, friend."
    assert trace.output == ""  # not the last provider:end's either
    assert not passes(trace, {"type": "output.contains", "text": "Hello there"})
    assert [s.name for s in trace][-3:] == ["agent:error", "text:complete", "harness:end"]


def test_a_streamed_input_guardrail_stops_the_model_call_it_ran_beside() -> None:
    """Streamed, the SDK runs the input guardrail beside triage's first model call: the
    call answered (a transfer) before the tripwire, and the error is on the agent's span.
    The transfer never ran: no handoff, no answer."""
    trace = import_trace(FIXTURES / "agents_guardrail_streamed_error.json")
    (error,) = trace.matching("agent:error")
    assert error.payload == {"agent": "triage", "error": "Guardrail tripwire triggered"}
    assert trace.count("provider:end") == 1 and not list(trace.matching("agent:handoff"))
    assert trace.input == "What is the weather in Paris and Rome?"
    assert trace.output == ""
    assert not passes(trace, {"type": "agent.completed", "agentId": "triage"})


def test_a_langgraph_run_id_of_any_json_type_is_read(tmp_path: Path) -> None:
    """A hand-edited or foreign file may hold anything as ``run_id``: never a crash."""
    lines = (FIXTURES / "langgraph_node_error_events.jsonl").read_text().splitlines()
    events = [{**json.loads(line), "run_id": {"id": [i % 3]}} for i, line in enumerate(lines)]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    with pytest.warns(TraceGap):
        trace = import_trace(path)
    assert [a for a, _ in trace.activations] == ["answer", "publish"]


def test_an_otlp_file_of_spans_nothing_reads_says_so(tmp_path: Path) -> None:
    """Spans of no GenAI convention (a web server's, a framework we do not know) are kept,
    and the import warns that model, tool and agent assertions will find nothing."""
    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "name": "GET /checkout",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000000500000000",
        "attributes": [{"key": "http.route", "value": {"stringValue": "/checkout"}}],
    }
    path = tmp_path / "web.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    with pytest.warns(TraceGap, match="none of its spans is a model call"):
        trace = import_trace(path)
    assert [s.name for s in trace][1] == "span:other"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a file of GenAI spans: no such warning
        import_trace(FIXTURES / "otel_vercel_ai.json")


def test_a_handoff_spans_error_does_not_fail_its_agent(tmp_path: Path) -> None:
    """The SDK marks the handoff span ``Multiple handoffs requested`` when a model asks for
    two and goes on with the first: the agent handed off, it did not fail."""
    document = json.loads((FIXTURES / "agents_support.json").read_text())
    for item in document["data"]:
        if item.get("span_data", {}).get("type") == "handoff":
            item["error"] = {"message": "Multiple handoffs requested", "data": {}}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    trace = import_trace(path)
    assert list(trace.matching("agent:handoff"))
    assert not list(trace.matching("agent:error"))
    assert passes(trace, {"type": "agent.completed", "agentId": "triage"})


def test_a_failed_span_of_no_genai_operation_fails_no_agent(tmp_path: Path) -> None:
    """An HTTP request that failed inside an agent (a 503 its client retried) is kept with
    its error; the agent that went on is not failed by it."""
    document = json.loads((FIXTURES / "otel_agents_bridge.json").read_text())
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    agent = next(s for s in spans if s["name"] == "invoke_agent weather")
    request = {
        **agent,
        "spanId": "00000000000000aa",
        "parentSpanId": agent["spanId"],
        "name": "POST",
        "attributes": [{"key": "http.response.status_code", "value": {"intValue": "503"}}],
        "status": {"code": 2, "message": "503 Service Unavailable"},
    }
    spans.append(request)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    trace = import_trace(path)
    (kept,) = (s for s in trace.matching("span:other") if s.payload["name"] == "POST")
    assert kept.payload["error"] == "503 Service Unavailable"
    assert not list(trace.matching("agent:error"))
    assert passes(trace, {"type": "agent.completed", "agentId": "weather"})


def test_vercel_ai_telemetry_without_outputs_warns_of_missing_content(tmp_path: Path) -> None:
    """``experimental_telemetry: {recordOutputs: false}`` leaves no ``ai.response.*`` on the
    model calls: the answer is unknown, said as for any GenAI span without messages (it read
    as an empty answer, in silence)."""
    document = json.loads((FIXTURES / "otel_vercel_ai.json").read_text())
    for span in document["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["attributes"] = [
            a
            for a in span["attributes"]
            if a["key"] not in ("ai.response.text", "ai.response.toolCalls")
        ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    with pytest.warns(TraceGap, match="carry no messages"):
        import_trace(path)


def test_vercel_ai_generate_object_answers_with_its_object(tmp_path: Path) -> None:
    """``generateObject`` keeps its answer in ``ai.response.object`` (JSON): the answer."""
    document = json.loads((FIXTURES / "otel_vercel_ai.json").read_text())
    answer = '{"city":"Paris","forecast":"sunny"}'
    for span in document["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for attribute in span["attributes"]:
            if attribute["key"] == "ai.response.text":
                attribute.update(key="ai.response.object", value={"stringValue": answer})
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace = import_trace(path)
    assert [s.payload["content"] for s in trace.matching("text:complete")] == [answer]


def test_a_signal_jsonl_trace_from_a_pipe_is_read_once(tmp_path: Path) -> None:
    """A pipe (``<(cat t.jsonl)``, ``/dev/stdin``) reads empty the second time: the
    trace, read to detect its format, was read again and imported as no signals."""
    read, write = os.pipe()
    os.write(write, b'{"name": "harness:start", "payload": {"input": "hi"}}\n')
    os.close(write)
    try:
        signals, input = read_trace_signals(f"/dev/fd/{read}")
    finally:
        os.close(read)
    assert [s.name for s in signals] == ["harness:start"] and input == "hi"


def test_a_timestamp_of_more_digits_than_an_int_reads_is_out_of_range() -> None:
    """5,000 digits (past Python's 4,300 for ``int``) were "not an integer"."""
    from signal_eval_cli.traces.otlp import _nanos
    from signal_eval_cli.traces.source import TraceFormatError

    for value in ("1" + "0" * 5000, "-" + "9" * 4400):
        with pytest.raises(TraceFormatError, match="'endTimeUnixNano' is out of range: '"):
            _nanos({"endTimeUnixNano": value}, "endTimeUnixNano", "b2")
    with pytest.raises(TraceFormatError, match="is not an integer: 'soon'"):
        _nanos({"endTimeUnixNano": "soon"}, "endTimeUnixNano", "b2")
