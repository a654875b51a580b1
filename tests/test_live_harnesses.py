"""The live harnesses run real frameworks against the loopback mock and give the facts
the importer reads from the same agent's recorded trace."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import agent_script as script
import pytest
from mock_servers import Fault, MockLLMServer
from trace_facts import LOOP_FACTS, SIMPLE_FACTS, SUPPORT_FACTS, facts

from signal_eval_cli import HarnessContext, Trace, import_trace, resolve_harness

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures" / "traces"


@pytest.fixture
def mock_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with MockLLMServer(responder=script.responder) as server:
        monkeypatch.setenv("SIGNAL_EVAL_MOCK_URL", server.openai_base_url)
        yield server.openai_base_url


def live(factory: str, params: dict[str, Any], input: Any) -> Trace:
    harness = resolve_harness(factory, params, base_dir=HERE)
    signals = asyncio.run(harness.run(input, HarnessContext(case_id="c")))
    return Trace(signals)


def test_agents_harness_gives_the_imported_facts(mock_url: str) -> None:
    trace = live("openai-agents", {"agent": "live_targets.py:triage"}, script.QUESTION)
    assert facts(trace) == SUPPORT_FACTS
    assert facts(trace) == facts(import_trace(FIXTURES / "agents_support_streamed.json"))
    assert [s.name for s in trace].count("agent:handoff") == 1


def test_agents_harness_on_the_responses_model_gives_the_imported_facts(mock_url: str) -> None:
    """The SDK's default model: ``response`` spans, the mock's ``/v1/responses`` (SSE)."""
    trace = live("openai-agents", {"agent": "live_targets.py:triage_responses"}, script.QUESTION)
    assert facts(trace) == SUPPORT_FACTS
    for name in ("agents_responses.json", "agents_responses_streamed.json"):
        assert facts(trace) == facts(import_trace(FIXTURES / name))
    calls = trace.tool_calls
    assert all(c.id and c.id.startswith("call_") for c in calls)  # the model's own ids
    deltas = "".join(d.payload["content"] for d in trace.matching("text:delta"))
    assert deltas == SUPPORT_FACTS["output"]


def test_agents_harness_streams_text_as_deltas(mock_url: str) -> None:
    trace = live("openai-agents", {"agent": "live_targets.py:simple_agent"}, "Hi")
    assert facts(trace) == SIMPLE_FACTS
    deltas = list(trace.matching("text:delta"))
    assert "".join(d.payload["content"] for d in deltas) == SIMPLE_FACTS["output"]
    (start,) = trace.matching("provider:start")
    assert {d.parent for d in deltas} == {start.id}


def test_langgraph_harness_gives_the_imported_signals(mock_url: str) -> None:
    trace = live("langgraph", {"graph": "live_targets.py:graph"}, script.QUESTION)
    imported = import_trace(FIXTURES / "langgraph_events.jsonl")
    assert facts(trace) == SUPPORT_FACTS == facts(imported)
    assert [(s.name, s.agent) for s in trace] == [(s.name, s.agent) for s in imported]


def test_otel_harness_captures_genai_spans(mock_url: str) -> None:
    trace = live("otel", {"target": "live_targets.py:bridged_agent"}, script.QUESTION)
    assert facts(trace) == SUPPORT_FACTS
    assert facts(trace) == facts(import_trace(FIXTURES / "otel_agents_bridge.json"))
    assert not list(trace.matching("span:other"))  # the harness's own span is not a step


def test_otel_harness_reads_openai_v2_log_events(mock_url: str) -> None:
    """``opentelemetry-instrumentation-openai-v2`` puts messages in log events, not spans:
    the harness keeps them in-process and gives the imported fixture's facts."""
    trace = live("otel", {"target": "live_targets.py:openai_loop"}, script.QUESTION)
    assert facts(trace) == LOOP_FACTS
    for name in ("otel_openai.json", "otel_openai_streamed.json"):
        assert facts(trace) == facts(import_trace(FIXTURES / name))
    assert [c.id for c in trace.tool_calls] == [
        c.id for c in import_trace(FIXTURES / name).tool_calls
    ]


def live_failing(factory: str, params: dict[str, Any], input: Any) -> tuple[Exception, Trace]:
    """The error a run raised, and the trace the case keeps of it."""
    harness = resolve_harness(factory, params, base_dir=HERE)
    ctx = HarnessContext(case_id="c")
    with pytest.raises(Exception) as raised:
        asyncio.run(harness.run(input, ctx))
    return raised.value, Trace(ctx.signals)


# A framework that raises mid-run has done part of the work: what it did is in the case's
# trace (tool calls, model calls), with the failure where it happened, and the error fails
# the case.


def test_an_agents_run_past_max_turns_keeps_what_it_did(mock_url: str) -> None:
    params = {"agent": "live_targets.py:triage", "max_turns": 2}
    error, trace = live_failing("openai-agents", params, script.QUESTION)
    assert type(error).__name__ == "MaxTurnsExceeded"
    assert [c.name for c in trace.tool_calls] == ["get_weather", "get_weather"]
    (failed,) = trace.matching("agent:error")
    assert failed.payload["agent"] == "weather" and "Max turns" in failed.payload["error"]
    assert facts(trace) == facts(import_trace(FIXTURES / "agents_max_turns.json"))


def test_an_output_guardrails_tripwire_fails_the_case_as_its_import_reads(mock_url: str) -> None:
    """The SDK raises after the model's answer: the case fails with that error, and the
    trace it keeps reads as the recorded run imports (no output: the answer was blocked)."""
    params = {"agent": "live_targets.py:output_guarded_agent"}
    error, trace = live_failing("openai-agents", params, "Hi")
    assert type(error).__name__ == "OutputGuardrailTripwireTriggered"
    imported = import_trace(FIXTURES / "agents_output_guardrail_error.json")
    assert facts(trace) == facts(imported) == {**SIMPLE_FACTS, "output": ""}
    names = ["agent:error", "text:complete"]
    assert (
        [s.name for s in trace if s.name in names]
        == names
        == [s.name for s in imported if s.name in names]
    )


def test_an_input_guardrails_tripwire_fails_the_case_as_its_import_reads(mock_url: str) -> None:
    """Streamed (as the harness runs), the guardrail runs beside triage's first model
    call: the call may answer (a transfer) before the tripwire, but no handoff happens."""
    params = {"agent": "live_targets.py:guarded_triage"}
    error, trace = live_failing("openai-agents", params, script.QUESTION)
    assert type(error).__name__ == "InputGuardrailTripwireTriggered"
    imported = import_trace(FIXTURES / "agents_guardrail_streamed_error.json")
    expected = {**SUPPORT_FACTS, "calls": [], "handoffs": [], "tokens": (20, 5), "output": ""}
    assert facts(imported) == expected
    assert facts(trace) in (expected, {**expected, "tokens": (0, 0)})  # answered or cut
    (failed,) = trace.matching("agent:error")
    assert failed.payload == {"agent": "triage", "error": "Guardrail tripwire triggered"}


def test_a_langgraph_node_that_raises_fails_with_its_error(mock_url: str) -> None:
    graph = {"graph": "live_targets.py:failing_graph"}
    error, trace = live_failing("langgraph", graph, {"question": "Hi"})
    assert isinstance(error, RuntimeError)
    assert [s.payload["agent"] for s in trace.matching("agent:activated")] == ["answer", "publish"]
    assert [s.name for s in trace.matching("provider:*")] == ["provider:start", "provider:end"]
    (failed,) = trace.matching("agent:error")
    assert failed.payload == {
        "agent": "publish",
        "error": "RuntimeError: publishing service unavailable",
    }


def test_a_langgraph_nodes_error_is_not_given_to_the_nodes_it_cancelled() -> None:
    """LangGraph names the task that raised in a note on its exception: a node running
    beside it, cancelled, failed too, but not with that error."""
    graph = {"graph": "live_targets.py:parallel_failing_graph"}
    error, trace = live_failing("langgraph", graph, {"log": []})
    assert isinstance(error, RuntimeError)
    failed = {s.payload["agent"]: s.payload["error"] for s in trace.matching("agent:error")}
    assert failed == {
        "publish": "RuntimeError: publishing service unavailable",
        "index": "stopped: node 'publish' raised RuntimeError: publishing service unavailable",
    }


def test_a_react_agents_raising_tool_gives_the_imported_failed_call(mock_url: str) -> None:
    """The prebuilt react agent run live: the tool that raised is a failed call, as in its
    recorded ``astream_events`` (the node's error is the exception LangGraph raised)."""
    error, trace = live_failing("langgraph", {"graph": "live_targets.py:react_agent"}, "Hi")
    assert isinstance(error, ValueError)
    recorded = import_trace(FIXTURES / "langgraph_react_tool_error_events.jsonl")
    failed_call = ("get_alerts", {"city": "Paris"}, "error")  # get_weather, run beside it,
    assert failed_call in facts(trace)["calls"] and failed_call in facts(recorded)["calls"]
    errors = [s.payload["error"] for s in trace.matching("agent:error")]  # may be cancelled
    assert "ValueError: alerts service down for Paris" in errors


def test_an_otel_run_whose_model_call_is_refused_keeps_the_failed_call() -> None:
    with MockLLMServer(responder=script.responder) as server:
        server.fail_next(Fault.status_code(400, "bad request: context too long"))
        os.environ["SIGNAL_EVAL_MOCK_URL"] = server.openai_base_url
        try:
            error, trace = live_failing(
                "otel", {"target": "live_targets.py:openai_loop"}, script.QUESTION
            )
        finally:
            del os.environ["SIGNAL_EVAL_MOCK_URL"]
    assert type(error).__name__ == "BadRequestError"
    (failed,) = trace.matching("provider:error")
    assert "context too long" in failed.payload["error"]
    assert not list(trace.matching("provider:end"))


def test_a_missing_agent_is_an_input_error(tmp_path: Path) -> None:
    from signal_eval_cli.errors import InputError

    with pytest.raises(InputError, match=r"not an agents\.Agent"):
        resolve_harness("openai-agents", {"agent": "agent_script.py:QUESTION"}, base_dir=HERE)
    with pytest.raises(InputError, match="not a compiled graph"):
        resolve_harness("langgraph", {"graph": "agent_script.py:QUESTION"}, base_dir=HERE)


CASE = """\
  - id: {id}
    input: What is the weather in Paris and Rome?
    assertions:
      - {{type: agent.handoff, from: triage, to: weather}}
      - {{type: tool.parallel, tools: [get_weather, get_weather]}}
      - {{type: tool.failed, name: get_alerts, count: 1}}
      - {{type: tool.calledWith, name: get_weather, args: {{city: Rome}}, status: ok}}
      - {{type: metric.tokens.max, value: {tokens}}}
      - {{type: output.contains, text: sunny}}
"""


@pytest.mark.parametrize(
    ("factory", "params"),
    [
        ("openai-agents", "{agent: live_targets.py:triage}"),
        ("langgraph", "{graph: live_targets.py:graph}"),
        ("otel", "{target: live_targets.py:bridged_agent}"),
    ],
)
def test_run_a_live_harness_from_a_dataset(
    factory: str, params: str, mock_url: str, tmp_path: Path
) -> None:
    (tmp_path / "live_targets.py").write_text(
        f"import sys\nsys.path.insert(0, {str(HERE)!r})\nfrom live_targets import *  # noqa\n",
        encoding="utf-8",
    )
    # Two cases, one run (the framework's import, seconds of CPU, once): every verdict
    # holds on the exact token count; one token less fails that assertion alone.
    cases = "".join(CASE.format(id=i, tokens=t) for i, t in (("exact", 168), ("under", 167)))
    dataset = f"name: live\nharness:\n  factory: {factory}\n  params: {params}\ncases:\n{cases}"
    (tmp_path / "d.yaml").write_text(dataset, encoding="utf-8")
    env = {**os.environ, "COLUMNS": "200"}
    # the verdicts are under test, not speed: the framework's imports count in the case's
    # time, and at load 20 they alone passed the default 60 s (issue 19)
    cli = [sys.executable, "-m", "signal_eval_cli.cli", "run", "d.yaml", "--timeout", "600000"]
    result = subprocess.run(
        [*cli, "-o", "out.json"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=900
    )
    assert result.returncode == 1, result.stdout + result.stderr  # the case one token under
    assert "Traceback" not in result.stderr
    saved = json.loads((tmp_path / "out.json").read_text())["cases"]
    failed = {
        c["caseId"]: [a["assertion"]["type"] for a in c["assertions"] if not a["passed"]]
        for c in saved
    }
    assert failed == {"exact": [], "under": ["metric.tokens.max"]}, result.stdout


def test_a_live_run_cut_off_by_its_timeout_keeps_what_it_did(mock_url: str) -> None:
    """The case's timeout cancels the framework mid-run (the runner's deadline cancels the
    harness in its own task): the trace keeps the calls made, and the node it was stuck in
    ends with an agent:error saying it was cut off."""
    params = {"graph": "live_targets.py:hanging_graph"}
    harness = resolve_harness("langgraph", params, base_dir=HERE)
    ctx = HarnessContext(case_id="slow")

    async def cut_once_publishing() -> None:
        script.PUBLISHING.clear()
        run = asyncio.ensure_future(harness.run({"question": "Hi"}, ctx))
        while not script.PUBLISHING.is_set() and not run.done():
            await asyncio.sleep(0.01)
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    asyncio.run(cut_once_publishing())
    trace = Trace(ctx.signals)
    assert [s.name for s in trace.matching("provider:*")] == ["provider:start", "provider:end"]
    (cut,) = trace.matching("agent:error")
    assert cut.payload["agent"] == "publish" and "time ran out" in cut.payload["error"]
