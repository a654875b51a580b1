"""metric.*, output.* and tool.* assertions."""

from __future__ import annotations

import pytest
from conftest import fails, passes, trace

from signal_eval_cli import Trace

# review_trace(): latency 1234 ms, tokens in 150 / out 50 / total 200, cost 0.015, 2 activations

# -- metric.latency / cost / tokens ---------------------------------------------------------


@pytest.mark.parametrize(
    ("assertion", "ok"),
    [
        ({"type": "metric.latency.max", "value": 1234}, True),  # inclusive
        ({"type": "metric.latency.max", "value": 30000}, True),
        ({"type": "metric.latency.max", "value": 1000}, False),
        ({"type": "metric.latency.min", "value": 1234}, True),
        ({"type": "metric.latency.min", "value": 100}, True),
        ({"type": "metric.latency.min", "value": 2000}, False),
        ({"type": "metric.cost.max", "value": 0.05}, True),
        ({"type": "metric.cost.max", "value": 0.01}, False),
        ({"type": "metric.cost.min", "value": 0.01}, True),
        ({"type": "metric.cost.min", "value": 0.02}, False),
        ({"type": "metric.tokens.max", "value": 200}, True),
        ({"type": "metric.tokens.max", "value": 199}, False),
        ({"type": "metric.tokens.max", "value": 200, "field": "total"}, True),
        ({"type": "metric.tokens.max", "value": 150, "field": "input"}, True),
        ({"type": "metric.tokens.max", "value": 149, "field": "input"}, False),
        ({"type": "metric.tokens.max", "value": 50, "field": "output"}, True),
        ({"type": "metric.tokens.max", "value": 49, "field": "output"}, False),
        ({"type": "metric.tokens.min", "value": 200}, True),
        ({"type": "metric.tokens.min", "value": 201}, False),
        ({"type": "metric.tokens.min", "value": 150, "field": "input"}, True),
        ({"type": "metric.tokens.min", "value": 151, "field": "input"}, False),
        ({"type": "metric.tokens.min", "value": 50, "field": "output"}, True),
        ({"type": "metric.tokens.min", "value": 51, "field": "output"}, False),
        ({"type": "metric.tokens.min", "value": 201, "field": "total"}, False),
    ],
)
def test_metric_bounds(assertion: dict[str, object], ok: bool, review: Trace) -> None:
    if ok:
        passes(assertion, review)
    else:
        result = fails(assertion, review)
        assert str(assertion["value"]) in result.message


def test_metric_failure_messages_show_actual_and_limit(review: Trace) -> None:
    latency = fails({"type": "metric.latency.max", "value": 1000}, review)
    assert "1234" in latency.message and "1000" in latency.message
    assert latency.actual == 1234
    cost = fails({"type": "metric.cost.max", "value": 0.01}, review)
    assert "0.015" in cost.message
    tokens = fails({"type": "metric.tokens.max", "value": 49, "field": "output"}, review)
    assert "50" in tokens.message


def test_latency_without_harness_end_fails_never_passes() -> None:
    t = trace("harness:start")
    for kind in ("metric.latency.max", "metric.latency.min"):
        result = fails({"type": kind, "value": 10**9 if kind.endswith("max") else 0}, t)
        assert "no latency recorded" in result.message


def test_cost_and_tokens_of_a_trace_without_provider_end_are_zero() -> None:
    t = trace("harness:start", ("harness:end", {"durationMs": 5}))
    passes({"type": "metric.cost.max", "value": 0}, t)
    passes({"type": "metric.tokens.max", "value": 0}, t)
    fails({"type": "metric.tokens.min", "value": 1}, t)
    fails({"type": "metric.cost.min", "value": 0.0001}, t)


# -- metric.activations ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bounds", "ok"),
    [
        ({"exact": 2}, True),
        ({"exact": 3}, False),
        ({"min": 2}, True),
        ({"min": 3}, False),
        ({"max": 2}, True),
        ({"max": 1}, False),
        ({"min": 1, "max": 5}, True),
        ({"exact": 2, "max": 0}, True),  # exact overrides
        ({"exact": 0}, False),
    ],
)
def test_metric_activations(bounds: dict[str, int], ok: bool, review: Trace) -> None:
    assertion = {"type": "metric.activations", **bounds}
    if ok:
        passes(assertion, review)
    else:
        result = fails(assertion, review)
        assert "found 2" in result.message


# -- output.* --------------------------------------------------------------------------

# output = "Found a SQL injection; fixed it." (the last text:complete)


def test_output_contains(review: Trace) -> None:
    passes({"type": "output.contains", "text": "SQL injection"}, review)
    fails({"type": "output.contains", "text": "sql injection"}, review)  # case-sensitive
    passes({"type": "output.contains", "text": "sql INJECTION", "caseSensitive": False}, review)
    result = fails({"type": "output.contains", "text": "XSS", "caseSensitive": False}, review)
    assert "'XSS' not found" in result.message
    assert "Found a SQL injection" in result.message


def test_output_is_the_last_text_complete_not_deltas() -> None:
    t = trace(
        ("text:delta", {"content": "streamed"}),
        ("text:complete", {"content": "first answer"}),
        ("text:complete", {"content": "final answer"}),
    )
    passes({"type": "output.contains", "text": "final"}, t)
    fails({"type": "output.contains", "text": "first"}, t)
    fails({"type": "output.contains", "text": "streamed"}, t)


def test_output_not_contains(review: Trace) -> None:
    passes({"type": "output.notContains", "text": "XSS"}, review)
    passes({"type": "output.notContains", "text": "found a"}, review)  # case-sensitive
    result = fails(
        {"type": "output.notContains", "text": "found a", "caseSensitive": False}, review
    )
    assert "found in output" in result.message
    fails({"type": "output.notContains", "text": "fixed"}, review)


def test_output_contains_on_empty_output() -> None:
    t = trace("harness:end")
    fails({"type": "output.contains", "text": "x"}, t)
    passes({"type": "output.notContains", "text": "x"}, t)


def test_output_matches(review: Trace) -> None:
    result = passes({"type": "output.matches", "regex": "SQL.*injection|XSS"}, review)
    assert result.actual == "SQL injection"
    passes({"type": "output.matches", "regex": "sql.*INJECTION", "flags": "i"}, review)
    fails({"type": "output.matches", "regex": "sql.*INJECTION"}, review)
    result = fails({"type": "output.matches", "regex": "^fixed"}, review)
    assert "/^fixed/" in result.message and "did not match" in result.message
    passes(
        {"type": "output.matches", "regex": "^fixed", "flags": "m"},
        trace(("text:complete", {"content": "line one\nfixed it"})),
    )


def test_output_json() -> None:
    schema = {
        "type": "object",
        "required": ["verdict", "score"],
        "properties": {"verdict": {"enum": ["pass", "fail"]}, "score": {"type": "number"}},
    }
    good = trace(("text:complete", {"content": '{"verdict": "pass", "score": 0.9}'}))
    passes({"type": "output.json", "schema": schema}, good)
    passes({"type": "output.json"}, good)
    fenced = trace(("text:complete", {"content": '```json\n{"verdict": "fail", "score": 1}\n```'}))
    passes({"type": "output.json", "schema": schema}, fenced)
    wrong = trace(("text:complete", {"content": '{"verdict": "maybe"}'}))
    result = fails({"type": "output.json", "schema": schema}, wrong)
    assert "does not match the schema" in result.message
    assert "score" in result.message and "maybe" in result.message


def test_output_json_on_non_json_output_fails_clearly() -> None:
    t = trace(("text:complete", {"content": "Sure! Here is the result: verdict=pass"}))
    result = fails({"type": "output.json", "schema": {"type": "object"}}, t)
    assert "output is not JSON" in result.message
    assert "line 1 col 1" in result.message
    assert "Sure! Here is" in result.message
    empty = fails({"type": "output.json"}, trace("x"))
    assert "output is not JSON" in empty.message


@pytest.mark.parametrize(
    ("bounds", "ok"),
    [
        ({"min": 32, "max": 32}, True),  # "Found a SQL injection; fixed it." is 32 chars
        ({"min": 10}, True),
        ({"max": 100}, True),
        ({"min": 33}, False),
        ({"max": 31}, False),
        ({"min": 1, "max": 5}, False),
    ],
)
def test_output_length(bounds: dict[str, int], ok: bool, review: Trace) -> None:
    assertion = {"type": "output.length", **bounds}
    if ok:
        passes(assertion, review)
    else:
        assert "output length 32 is not" in fails(assertion, review).message


# -- tool.* --------------------------------------------------------------------------

# review_trace() calls Read, Edit, Bash (in that order)


def tools_trace() -> Trace:
    return trace(
        ("tool:call", {"id": "1", "name": "Read", "input": {"path": "a.py"}}),
        ("tool:result", {"id": "1", "result": "x"}),
        ("tool:call", {"id": "2", "name": "Read", "input": {"path": "b.py", "limit": 10}}),
        ("tool:call", {"id": "3", "name": "Edit", "input": {"path": "a.py", "flags": [1, True]}}),
        ("tool:call", {"id": "4", "name": "Bash", "input": {"cmd": "pytest -q", "timeout": 0}}),
        ("tool:call", {"id": "5", "name": "Edit", "input": None}),
    )


@pytest.mark.parametrize(
    ("name", "bounds", "ok"),
    [
        ("Edit", {}, True),  # no bounds: at least once
        ("Grep", {}, False),
        ("Edit", {"min": 1}, True),
        ("Read", {"count": 2}, True),
        ("Read", {"count": 1}, False),
        ("Read", {"exact": 2}, True),
        ("Read", {"min": 3}, False),
        ("Read", {"max": 1}, False),
        ("Grep", {"max": 0}, True),
        ("Grep", {"count": 0}, True),
        ("Read", {"count": 2, "max": 0}, True),  # count overrides
        ("Read", {"min": 1, "max": 2}, True),
    ],
)
def test_tool_called(name: str, bounds: dict[str, int], ok: bool) -> None:
    assertion = {"type": "tool.called", "name": name, **bounds}
    if ok:
        passes(assertion, tools_trace())
    else:
        result = fails(assertion, tools_trace())
        assert name in result.message


def test_tool_called_failure_lists_the_tools_that_were_called() -> None:
    result = fails({"type": "tool.called", "name": "Grep"}, tools_trace())
    assert "found 0" in result.message
    assert "Read, Edit, Bash" in result.message


def test_tool_called_name_is_exact_not_glob() -> None:
    fails({"type": "tool.called", "name": "Re*"}, tools_trace())
    fails({"type": "tool.called", "name": "read"}, tools_trace())


def test_tool_not_called() -> None:
    passes({"type": "tool.notCalled", "name": "Grep"}, tools_trace())
    result = fails({"type": "tool.notCalled", "name": "Read"}, tools_trace())
    assert "called 2 time(s)" in result.message
    # a tool:result alone is not a call
    passes({"type": "tool.notCalled", "name": "Read"}, trace(("tool:result", {"name": "Read"})))


def test_tool_called_with_partial_args_and_matchers() -> None:
    t = tools_trace()
    passes({"type": "tool.calledWith", "name": "Read", "args": {"path": "b.py"}}, t)  # 2nd call
    passes({"type": "tool.calledWith", "name": "Read", "args": {"limit": {"gte": 5}}}, t)
    passes(
        {"type": "tool.calledWith", "name": "Bash", "args": {"cmd": {"startsWith": "pytest"}}}, t
    )
    passes({"type": "tool.calledWith", "name": "Edit", "args": {"flags": [1, True]}}, t)
    passes({"type": "tool.calledWith", "name": "Edit", "args": {}}, t)
    fails({"type": "tool.calledWith", "name": "Edit", "args": {"flags": [True, 1]}}, t)
    fails({"type": "tool.calledWith", "name": "Edit", "args": {"flags": [1]}}, t)
    fails({"type": "tool.calledWith", "name": "Bash", "args": {"timeout": False}}, t)
    fails({"type": "tool.calledWith", "name": "Bash", "args": {"timeout": None}}, t)
    fails({"type": "tool.calledWith", "name": "Read", "args": {"encoding": None}}, t)
    # the args must be on the same call
    fails({"type": "tool.calledWith", "name": "Read", "args": {"path": "a.py", "limit": 10}}, t)


def test_tool_called_with_failure_messages() -> None:
    t = tools_trace()
    result = fails({"type": "tool.calledWith", "name": "Read", "args": {"path": "c.py"}}, t)
    assert "no call of 'Read' matches" in result.message
    assert "2 call(s)" in result.message
    assert "a.py" in result.message and "b.py" in result.message
    never = fails({"type": "tool.calledWith", "name": "Grep", "args": {}}, t)
    assert "never called" in never.message


def test_tool_sequence(review: Trace) -> None:
    passes({"type": "tool.sequence", "tools": ["Read", "Edit", "Bash"]}, review)
    passes({"type": "tool.sequence", "tools": ["Read", "Bash"]}, review)  # gaps allowed
    passes({"type": "tool.sequence", "tools": []}, review)
    result = fails({"type": "tool.sequence", "tools": ["Edit", "Read"]}, review)
    assert "matched 1 of 2" in result.message
    assert "'Read' not called after 'Edit'" in result.message
    assert result.actual == ["Read", "Edit", "Bash"]
    first = fails({"type": "tool.sequence", "tools": ["Grep"]}, review)
    assert "'Grep' not called;" in first.message


def test_tool_sequence_repeats() -> None:
    t = tools_trace()  # Read, Read, Edit, Bash, Edit
    passes({"type": "tool.sequence", "tools": ["Read", "Read", "Edit", "Edit"]}, t)
    fails({"type": "tool.sequence", "tools": ["Bash", "Bash"]}, t)
