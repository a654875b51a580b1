"""agent.handoff, tool.failed, tool.calledWith status, tool.parallel and trajectory modes.

Each type is checked on small hand-built traces (edge cases) and on the traces real
frameworks wrote (tests/fixtures/traces): the right assertion passes, a wrong one fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import TURNS, fails, passes, trace

from signal_eval_cli import Trace, import_trace
from signal_eval_cli.loading import parse_yaml, validate_document

FIXTURES = Path(__file__).parent / "fixtures" / "traces"
SUPPORT = [
    "agents_support.json",
    "agents_support_streamed.json",
    "otel_agents_bridge.json",
    "langgraph_events.jsonl",
    "langgraph_stream.jsonl",
]


def turn_trace() -> Trace:
    """Two calls in one response (p1), one in the next (p2, it fails), one without a turn."""
    return trace(*TURNS)


# -- agent.handoff -------------------------------------------------------------------


def test_agent_handoff_by_ends_and_counts() -> None:
    t = turn_trace()
    passes({"type": "agent.handoff", "from": "triage", "to": "billing"}, t)
    passes({"type": "agent.handoff", "to": "triage", "count": 1}, t)
    passes({"type": "agent.handoff", "from": "billing"}, t)
    result = fails({"type": "agent.handoff", "from": "billing", "to": "billing"}, t)
    assert "triage → billing" in result.message
    fails({"type": "agent.handoff", "to": "triage", "min": 2}, t)
    fails({"type": "agent.handoff", "to": "x"}, trace("harness:start"))


# -- tool status ---------------------------------------------------------------------


def test_called_with_status() -> None:
    t = turn_trace()
    passes({"type": "tool.calledWith", "name": "fetch", "args": {"url": "v"}, "status": "error"}, t)
    passes({"type": "tool.calledWith", "name": "fetch", "args": {"url": "u"}, "status": "ok"}, t)
    result = fails(
        {"type": "tool.calledWith", "name": "fetch", "args": {"url": "v"}, "status": "ok"}, t
    )
    assert "not with status ok: error" in result.message
    result = fails(
        {"type": "tool.calledWith", "name": "search", "args": {"q": "y"}, "status": "ok"}, t
    )
    assert "no result" in result.message  # d never got a result: neither ok nor error
    fails({"type": "tool.calledWith", "name": "nope", "args": {}, "status": "ok"}, t)


def test_tool_failed() -> None:
    t = turn_trace()
    passes({"type": "tool.failed", "name": "fetch"}, t)
    passes({"type": "tool.failed", "count": 1}, t)
    passes({"type": "tool.failed", "name": "search", "max": 0}, t)
    result = fails({"type": "tool.failed", "name": "search"}, t)
    assert "failed calls of tool 'search'" in result.message
    fails({"type": "tool.failed", "max": 0}, t)


@pytest.mark.parametrize("error", ["", None, False])
def test_an_empty_error_is_no_failure(error: Any) -> None:
    t = trace(
        ("tool:call", {"id": "a", "name": "x", "input": {}}),
        ("tool:result", {"id": "a", "name": "x", "result": "ok", "error": error}),
    )
    passes({"type": "tool.failed", "max": 0}, t)
    passes({"type": "tool.calledWith", "name": "x", "args": {}, "status": "ok"}, t)


# -- tool.parallel -------------------------------------------------------------------


def test_tool_parallel_needs_one_turn() -> None:
    t = turn_trace()
    passes({"type": "tool.parallel", "tools": ["fetch", "search"]}, t)
    result = fails({"type": "tool.parallel", "tools": ["search", "search"]}, t)
    assert "by turn" in result.message  # d has no turn; a and d are not one response
    fails({"type": "tool.parallel", "tools": ["fetch", "fetch"]}, t)  # two turns, not one


# -- trajectory modes and windows ------------------------------------------------------


def steps(*names: str) -> list[dict[str, Any]]:
    return [{"pattern": "tool:call", "payload": {"name": n}} for n in names]


def tools(*names: str) -> Trace:
    return trace(
        "harness:start",
        *(("tool:call", {"id": str(i), "name": n}) for i, n in enumerate(names)),
        "harness:end",
    )


@pytest.mark.parametrize(
    ("mode", "expected", "ok"),
    [
        ("strict", ["a", "b", "c"], True),
        ("strict", ["a", "c", "b"], False),  # reversed order
        ("strict", ["a", "b"], False),  # c is extra
        ("unordered", ["c", "a", "b"], True),
        ("unordered", ["c", "a"], False),
        ("unordered", ["a", "b", "c", "c"], False),
        ("subset", ["a", "b", "c", "d"], True),  # called nothing beyond the reference
        ("subset", ["a", "b"], False),
        ("superset", ["c", "a"], True),  # called at least the reference
        ("superset", ["a", "d"], False),
    ],
)
def test_trajectory_modes(mode: str, expected: list[str], ok: bool) -> None:
    t = tools("a", "b", "c")
    assertion = {"type": "signal.trajectory", "mode": mode, "patterns": steps(*expected)}
    (passes if ok else fails)(assertion, t)


def test_trajectory_mode_messages_name_what_is_wrong() -> None:
    t = tools("a", "b", "c")
    result = fails({"type": "signal.trajectory", "mode": "subset", "patterns": steps("a")}, t)
    assert "signals no step expects" in result.message
    result = fails({"type": "signal.trajectory", "mode": "superset", "patterns": steps("d")}, t)
    assert "steps not found" in result.message and "tool:call" in result.message
    result = fails(
        {"type": "signal.trajectory", "mode": "strict", "patterns": steps("a", "c", "b")}, t
    )
    assert "step 2" in result.message


def test_trajectory_matching_reassigns_a_greedy_choice() -> None:
    # step 1 fits both signals, step 2 only the first: a greedy pick would miss
    t = trace(("x", {"k": 1}), ("x", {"k": 2}))
    passes(
        {
            "type": "signal.trajectory",
            "mode": "unordered",
            "patterns": ["x", {"pattern": "x", "payload": {"k": 1}}],
        },
        t,
    )


def test_trajectory_window() -> None:
    t = trace("a", "mark", "b", "c", "stop", "d")
    passes({"type": "signal.trajectory", "patterns": ["b", "c"], "after": "mark"}, t)
    fails({"type": "signal.trajectory", "patterns": ["a", "b"], "after": "mark"}, t)
    passes({"type": "signal.trajectory", "patterns": ["b", "c"], "before": "stop"}, t)
    result = fails(
        {"type": "signal.trajectory", "patterns": ["c", "d"], "after": "mark", "before": "stop"}, t
    )
    assert "within #2..#3" in result.message
    passes(
        {
            "type": "signal.trajectory",
            "mode": "strict",
            "patterns": ["b", "c"],
            "after": "mark",
            "before": "stop",
        },
        t,
    )
    fails({"type": "signal.trajectory", "patterns": ["b", "c"], "strict": True, "before": "c"}, t)
    result = fails({"type": "signal.trajectory", "patterns": ["b"], "after": "nope"}, t)
    assert "never occurs" in result.message
    result = fails({"type": "signal.trajectory", "patterns": ["b"], "before": "a", "after": "b"}, t)
    assert "'before: a' never occurs after #2" in result.message


# -- on the traces real frameworks wrote -------------------------------------------------


@pytest.mark.parametrize("name", SUPPORT)
@pytest.mark.parametrize(
    ("right", "wrong"),
    [
        (
            {"type": "agent.handoff", "from": "triage", "to": "weather"},
            {"type": "agent.handoff", "from": "weather", "to": "triage"},
        ),
        (
            {"type": "tool.failed", "name": "get_alerts", "count": 1},
            {"type": "tool.failed", "name": "get_weather"},
        ),
        (
            {
                "type": "tool.calledWith",
                "name": "get_alerts",
                "args": {"city": "Paris"},
                "status": "error",
            },
            {
                "type": "tool.calledWith",
                "name": "get_weather",
                "args": {"city": "Paris"},
                "status": "error",
            },
        ),
        (
            {"type": "tool.parallel", "tools": ["get_weather", "get_weather"]},
            {"type": "tool.parallel", "tools": ["get_weather", "get_alerts"]},
        ),
        (
            {
                "type": "signal.trajectory",
                "mode": "strict",
                "patterns": [
                    {"pattern": "tool:call", "payload": {"input": {"city": "Paris"}}},
                    {"pattern": "tool:call", "payload": {"input": {"city": "Rome"}}},
                    {"pattern": "tool:call", "payload": {"name": "get_alerts"}},
                ],
            },
            {
                "type": "signal.trajectory",
                "mode": "strict",
                "patterns": [
                    {"pattern": "tool:call", "payload": {"input": {"city": "Rome"}}},
                    {"pattern": "tool:call", "payload": {"input": {"city": "Paris"}}},
                    {"pattern": "tool:call", "payload": {"name": "get_alerts"}},
                ],
            },
        ),
        (
            {
                "type": "signal.trajectory",
                "mode": "superset",
                "patterns": [{"pattern": "tool:call", "payload": {"name": "get_alerts"}}],
                "after": "agent:handoff",
            },
            {
                "type": "signal.trajectory",
                "mode": "superset",
                "patterns": [{"pattern": "tool:call", "payload": {"name": "get_alerts"}}],
                "before": "agent:handoff",
            },
        ),
    ],
    ids=["handoff", "failed", "status", "parallel", "strict", "window"],
)
def test_new_assertions_on_framework_traces(
    name: str, right: dict[str, Any], wrong: dict[str, Any]
) -> None:
    t = import_trace(FIXTURES / name)
    passes(right, t)
    fails(wrong, t)


def test_schema_accepts_the_new_fields_and_rejects_typos() -> None:
    good = """\
name: x
cases:
  - id: c
    input: {}
    assertions:
      - {type: agent.handoff, from: a, to: b, max: 1}
      - {type: tool.failed, name: t}
      - {type: tool.parallel, tools: [a, b]}
      - {type: tool.calledWith, name: t, args: {}, status: error}
      - {type: signal.trajectory, patterns: [a], mode: unordered, after: x, before: y}
"""
    assert validate_document(parse_yaml(good, "d.yaml"), "dataset") == []
    for bad in [
        "{type: agent.handoff}",
        "{type: tool.parallel, tools: [a]}",
        "{type: tool.calledWith, name: t, args: {}, status: failed}",
        "{type: signal.trajectory, patterns: [a], mode: loose}",
        "{type: tool.failed, nme: t}",
    ]:
        doc = good.split("      - {type: agent")[0] + "      - " + bad + "\n"
        assert validate_document(parse_yaml(doc, "d.yaml"), "dataset") != [], bad
