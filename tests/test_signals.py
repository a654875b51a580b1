"""Signal and Trace: the JSON shape, the derived views, JSONL read/write."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import check, review_trace, sig, signals, trace
from hypothesis import given, settings
from hypothesis import strategies as st

from signal_eval_cli import InputError, Signal, Trace, evaluate_assertion, read_jsonl, write_jsonl
from signal_eval_cli.patterns import compile_glob, set_path, values_equal
from signal_eval_cli.signals import ToolCall, elapsed_ms

# -- Signal --------------------------------------------------------------------------


def test_signal_round_trip_keeps_unknown_keys() -> None:
    data = {
        "id": "sig_1",
        "name": "agent:activated",
        "payload": {"agent": "reviewer", "trigger": "harness:start"},
        "timestamp": "2026-01-10T00:00:00.000Z",
        "source": {"agent": "reviewer", "parent": "sig_0", "harness": "h1"},
        "display": {"title": "Reviewer"},
        "custom": [1, 2],
    }
    signal = Signal.from_dict(data)
    assert signal.name == "agent:activated"
    assert signal.agent == "reviewer"
    assert signal.parent == "sig_0"
    assert signal.source == {"agent": "reviewer", "parent": "sig_0", "harness": "h1"}
    assert signal.to_dict() == data
    assert Signal.from_dict(signal.to_dict()) == signal


def test_signal_minimal_and_numeric_timestamp() -> None:
    signal = Signal.from_dict({"name": "x", "timestamp": 12.5})
    assert signal.payload is None
    assert signal.source == {}
    out = signal.to_dict()
    assert out["name"] == "x" and out["timestamp"] == 12.5
    assert "source" not in out


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ([1, 2], TypeError),
        ("name", TypeError),
        ({}, ValueError),
        ({"name": ""}, ValueError),
        ({"name": 3}, ValueError),
        ({"name": "x", "source": "agent"}, ValueError),
    ],
)
def test_signal_from_dict_rejects_non_signals(data: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        Signal.from_dict(data)  # type: ignore[arg-type]


# -- Trace indexes ----------------------------------------------------------------------


def test_trace_accepts_signals_and_dicts() -> None:
    t = Trace.from_signals([Signal("a:x"), {"name": "a:y"}, Signal("b")], input={"k": 1})
    assert len(t) == 3
    assert [s.name for s in t] == ["a:x", "a:y", "b"]
    assert t[1].name == "a:y"
    assert t.input == {"k": 1}
    assert t.names == ["a:x", "a:y", "b"]
    assert t.names_matching("a:*") == ["a:x", "a:y"]
    assert t.count("a:*") == 2
    assert t.count("nothing") == 0
    assert list(t.positions("a:*")) == [0, 1]
    assert list(t.positions("a:*", 1)) == [1]
    assert t.find("b") == 2 and t.find("a:*", 2) is None
    assert t.rfind("a:*") == 1 and t.rfind("zzz") is None


def test_trace_index_survives_names_with_regex_metachars() -> None:
    names = ["]", "^", "-", "\\", "[", "a", "]", "-"]
    t = trace(*names)
    assert t.count("]") == 2
    assert t.count("-") == 2
    assert list(t.positions("**")) == list(range(len(names)))
    assert t.find("\\") == 3


def test_trace_by_id() -> None:
    t = trace("a", "b")
    assert t.by_id("s1") is t[1]
    assert t.by_id("nope") is None


# -- derived views: state ----------------------------------------------------------------


def test_initial_state_is_harness_start_state_then_input() -> None:
    assert trace(("harness:start", {"state": {"a": 1}})).initial_state == {"a": 1}
    assert trace(("harness:start", {"input": {"b": 2}})).initial_state == {"b": 2}
    # What the harness reports it started from (defaults included) wins over the case input.
    assert trace(("harness:start", {"state": {"a": 1}}), input={"c": 3}).initial_state == {"a": 1}
    assert trace(("harness:start", {"input": {"b": 2}}), input={"c": 3}).initial_state == {"c": 3}
    assert trace(("harness:start", {"state": None}), input={"c": 3}).initial_state == {"c": 3}
    assert trace("x", input={"c": 3}).initial_state == {"c": 3}
    assert trace("x").initial_state is None


def test_state_after_applies_changes_up_to_and_including_index() -> None:
    t = trace(
        ("harness:start", {"state": {"count": 0, "user": {"name": "a", "age": 3}}}),
        ("state:count:changed", {"key": "count", "oldValue": 0, "newValue": 1}),
        ("state:user.name:changed", {"key": "user", "path": "user.name", "newValue": "b"}),
        ("state:count:changed", {"key": "count", "oldValue": 1, "newValue": 2}),
        "done",
    )
    assert t.state_after(0) == {"count": 0, "user": {"name": "a", "age": 3}}
    assert t.state_after(1) == {"count": 1, "user": {"name": "a", "age": 3}}
    assert t.state_after(2) == {"count": 1, "user": {"name": "b", "age": 3}}
    assert t.state_after(3)["count"] == 2
    assert t.final_state == {"count": 2, "user": {"name": "b", "age": 3}}
    # the initial state is never mutated
    assert t.initial_state == {"count": 0, "user": {"name": "a", "age": 3}}


def test_state_path_comes_from_signal_name_when_payload_has_none() -> None:
    t = trace(
        ("state:user.name:changed", {"newValue": "z"}),
        ("state:flag:changed", True),
        input={"user": {"name": "a"}},
    )
    assert t.state_after(0) == {"user": {"name": "z"}}
    assert t.state_after(1) == {"user": {"name": "z"}, "flag": True}


def test_state_batch_changes_all_count_in_order() -> None:
    t = trace(
        ("state:batch:changed", {"newValue": [{"path": "a", "newValue": 1}]}),
        ("state:a:changed", {"key": "a", "newValue": 2}),
        (
            "state:batch:changed",
            {"newValue": [{"path": "b.c", "newValue": 3}, {"path": "a", "newValue": 4}]},
        ),
        input={},
    )
    assert t.state_after(0) == {"a": 1}
    assert t.state_after(1) == {"a": 2}
    assert t.state_after(2) == {"a": 4, "b": {"c": 3}}


def test_later_parent_write_overrides_earlier_child_write_and_vice_versa() -> None:
    t = trace(
        ("state:a.b:changed", {"path": "a.b", "newValue": 1}),
        ("state:a:changed", {"key": "a", "newValue": {"x": 1}}),
        ("state:a.b:changed", {"path": "a.b", "newValue": 2}),
        input={},
    )
    assert t.state_after(0) == {"a": {"b": 1}}
    assert t.state_after(1) == {"a": {"x": 1}}
    assert t.state_after(2) == {"a": {"x": 1, "b": 2}}


def test_final_state_prefers_harness_end_state() -> None:
    t = trace(
        ("state:a:changed", {"key": "a", "newValue": 1}),
        ("harness:end", {"state": {"result": {"passed": True}}}),
        input={},
    )
    assert t.final_state == {"result": {"passed": True}}
    assert trace(input={"x": 1}).final_state == {"x": 1}  # empty trace → initial state


# -- derived views: output, tools, metrics --------------------------------------------


def test_output_is_last_text_complete() -> None:
    t = trace(
        ("text:complete", {"content": "first"}),
        ("text:delta", {"content": "ignored"}),
        ("text:complete", {"content": "second"}),
        "harness:end",
    )
    assert t.output == "second"
    assert trace(("text:complete", {"content": None})).output == ""
    assert trace(("text:complete", {"content": {"a": 1}})).output == '{"a":1}'
    assert trace("harness:end").output == ""


def test_without_text_complete_output_is_the_last_provider_output_then_the_deltas() -> None:
    """Seed 002's provider:end carries ``{output, usage, durationMs}``: a trace that
    never emits text:complete still has an output to check."""
    deltas = (("text:delta", {"content": "SQL "}), ("text:delta", {"content": "injection"}))
    assert trace(*deltas).output == "SQL injection"
    ends = (("provider:end", {"output": "first"}), ("provider:end", {"output": "last"}))
    assert trace(*deltas, *ends).output == "last"
    assert trace(("provider:end", {"output": {"text": "hi", "role": "x"}})).output == "hi"
    assert trace(("provider:end", {"output": ["a"]})).output == '["a"]'
    assert trace(*deltas, ("provider:end", {"usage": {}})).output == "SQL injection"
    assert trace(*ends, ("text:complete", {"content": "final"})).output == "final"
    two_calls = trace(
        "provider:start", ("text:delta", {"content": "draft "}),
        "provider:start", ("text:delta", {"content": "FINAL"}),
    )  # fmt: skip
    assert two_calls.output == "FINAL"  # the last call's stream, not every agent's
    silent_last = trace(
        "provider:start", ("text:delta", {"content": "The answer is 42"}), "provider:end",
        "provider:start", "provider:end",
    )  # fmt: skip
    assert silent_last.output == "The answer is 42"  # the last call that streamed
    interleaved = Trace.from_signals(
        [
            {"name": "provider:start", "id": "p1"},
            {"name": "provider:start", "id": "p2"},
            {"name": "text:delta", "payload": {"content": "FINAL"}, "source": {"parent": "p1"}},
            {"name": "text:delta", "payload": {"content": " (draft)"}, "source": {"parent": "p2"}},
            {"name": "text:delta", "payload": {"content": " answer"}, "source": {"parent": "p1"}},
        ]
    )
    assert interleaved.output == "FINAL answer"


def test_tool_calls_are_joined_with_results_by_id() -> None:
    t = review_trace()
    calls = t.tool_calls
    assert [c.name for c in calls] == ["Read", "Edit", "Bash"]
    read, edit, bash = calls
    assert read.input == {"path": "app.py"} and read.result == "print(1)" and read.has_result
    assert edit.result == "ok" and edit.position == 12
    assert bash.result is None and not bash.has_result


def test_a_tool_call_id_that_is_a_list_or_an_object_joins_no_result() -> None:
    """A trace's garbage id is no crash of every tool assertion (nor of import --case-into,
    which drafts from the calls): as a JavaScript Map would, it equals no other id."""
    t = trace(
        ("tool:call", {"id": [1], "name": "get"}),
        ("tool:result", {"id": [1], "result": "r"}),
        ("tool:call", {"id": {"a": 1}, "name": "get"}),
        ("tool:result", {"id": {"a": 1}, "error": "boom"}),
    )
    assert [(c.name, c.has_result, c.result, c.error) for c in t.tool_calls] == [
        ("get", False, None, None),
        ("get", False, None, None),
    ]
    assert check({"type": "tool.failed", "max": 0}, t).passed


def test_metrics_sum_provider_end_and_read_harness_end() -> None:
    m = review_trace().metrics
    assert m.input_tokens == 150
    assert m.output_tokens == 50
    assert m.total_tokens == 200
    assert m.cost == pytest.approx(0.015)
    assert m.latency_ms == 1234
    assert m.activations == 2


def test_metrics_of_empty_trace() -> None:
    m = trace().metrics
    assert (m.input_tokens, m.output_tokens, m.cost, m.activations) == (0, 0, 0.0, 0)
    assert m.latency_ms is None


# -- JSONL -----------------------------------------------------------------------------


def test_jsonl_round_trip(tmp_path: Path) -> None:
    items = signals(
        sig("harness:start", {"input": "é"}),
        sig("agent:activated", {"agent": "r"}, "r", parent="s0", extra_key=1),
    )
    original = [Signal.from_dict(d) for d in items]
    path = tmp_path / "trace.jsonl"
    write_jsonl(original, path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["extra_key"] == 1
    assert read_jsonl(path) == original
    buffer = io.StringIO()
    write_jsonl(original, buffer)
    buffer.seek(0)
    assert read_jsonl(buffer) == original


def test_jsonl_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('\n{"name": "a"}\n\n   \n{"name": "b"}\n', encoding="utf-8")
    assert [s.name for s in read_jsonl(path)] == ["a", "b"]


def test_jsonl_reports_every_bad_line_with_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"name": "ok"}\n{"name": \n[1, 2]\n{"payload": 1}\nnot json\n', "utf-8")
    with pytest.raises(InputError) as caught:
        read_jsonl(path)
    problems = caught.value.problems
    assert [(p.line, p.column) for p in problems] == [(2, 10), (3, 1), (4, 1), (5, 1)]
    text = str(caught.value)
    assert f"{path}:2:10: not JSON" in text
    assert f"{path}:3:1: not a signal" in text
    assert f"{path}:5:1: not JSON" in text
    assert all(p.file == str(path) for p in problems)


def test_jsonl_binary_and_missing_files(tmp_path: Path) -> None:
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(b"\xff\x00\xfe\x01")  # no byte order mark: \xff\xfe is UTF-16's
    with pytest.raises(InputError, match="not UTF-8"):
        read_jsonl(binary)
    with pytest.raises(InputError, match="cannot read"):
        read_jsonl(tmp_path / "missing.jsonl")


# Located at the offending token: the bracket past the depth limit, the huge number.
def test_jsonl_too_deep_or_huge_numbers_are_located_problems(tmp_path: Path) -> None:
    path = tmp_path / "hostile.jsonl"
    deep = "[" * 100_000 + "]" * 100_000
    huge = '{"name": "a", "payload": ' + "1" * 5000 + "}"
    path.write_text(f'{{"name": "ok"}}\n{deep}\n{huge}\n', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_jsonl(path)
    assert [(p.line, p.column) for p in caught.value.problems] == [(2, 101), (3, 26)]
    assert all(p.message.startswith("not JSON") for p in caught.value.problems)


def test_usage_under_openai_or_anthropic_names_counts_too() -> None:
    m = trace(
        ("provider:end", {"usage": {"input_tokens": 100, "output_tokens": 20}, "cost": 0}),
        ("provider:end", {"usage": {"prompt_tokens": 10, "completion_tokens": 2}, "cost": 0}),
        ("provider:end", {"usage": {"promptTokens": 1, "completionTokens": 1}, "cost": 0}),
    ).metrics
    assert (m.input_tokens, m.output_tokens) == (111, 23)


def test_a_provider_end_without_cost_is_priced_from_its_model_and_tokens() -> None:
    """Seed 002's provider:end is ``{output, usage, durationMs}``: no cost field. A
    cost check on such a trace must not pass at $0 (prices: data/prices.yaml)."""
    usage = {"inputTokens": 100_000, "outputTokens": 20_000}
    started = ("provider:start", {"provider": "anthropic", "model": "claude-sonnet-4-20250514"})
    m = trace(started, ("provider:end", {"usage": usage})).metrics
    assert m.cost == pytest.approx(0.3 + 0.3)  # $3 and $15 per million tokens
    own = ("provider:end", {"usage": usage, "model": "gpt-4o-mini"})
    assert trace(started, own).metrics.cost == pytest.approx(0.015 + 0.012)
    stated = ("provider:end", {"usage": usage, "cost": 0.01})  # a stated cost is kept
    assert trace(started, stated).metrics.cost == pytest.approx(0.01)
    interleaved = Trace.from_signals(
        [
            {"name": "provider:start", "id": "p1", "payload": {"model": "gpt-4o-mini"}},
            {"name": "provider:start", "id": "p2", "payload": {"model": "claude-sonnet-4"}},
            {"name": "provider:end", "source": {"parent": "p1"}, "payload": {"usage": usage}},
            {"name": "provider:end", "source": {"parent": "p2"}, "payload": {"usage": usage}},
        ]
    )
    assert interleaved.metrics.cost == pytest.approx(0.027 + 0.6)  # each call its own model
    unknown = ("provider:start", {"model": "my-local-model"})
    assert trace(unknown, ("provider:end", {"usage": usage})).metrics.cost == 0.0
    check = {"type": "metric.cost.max", "value": 0.05}
    assert not evaluate_assertion(check, trace(started, ("provider:end", {"usage": usage}))).passed


def test_usage_booleans_are_not_token_counts() -> None:
    payload = {"usage": {"inputTokens": True, "outputTokens": 5}, "cost": 0.1}
    with_cost = trace(("provider:end", payload)).metrics
    without_cost = trace(("provider:end", {"usage": payload["usage"]})).metrics
    assert with_cost.input_tokens == without_cost.input_tokens == 0
    assert with_cost.output_tokens == without_cost.output_tokens == 5


def test_usage_with_missing_or_malformed_fields() -> None:
    m = trace(
        ("provider:end", {"usage": {"inputTokens": 10, "outputTokens": 2}}),  # no cost
        ("provider:end", {"usage": {"inputTokens": "7"}, "cost": 0.5}),  # string tokens
        ("provider:end", "not an object"),
        ("provider:end", {"usage": None, "cost": None}),
        ("provider:end", {"usage": {"inputTokens": 1, "outputTokens": 1}, "cost": 0.25}),
    ).metrics
    assert (m.input_tokens, m.output_tokens) == (11, 3)
    assert m.cost == pytest.approx(0.75)


def test_latency_needs_a_numeric_duration() -> None:
    assert trace(("harness:end", {"durationMs": "12"})).metrics.latency_ms is None
    assert trace(("harness:end", {"durationMs": True})).metrics.latency_ms is None
    last = trace(("harness:end", {"durationMs": 1}), ("harness:end", {"durationMs": 2}))
    assert last.metrics.latency_ms == 2


HUGE = 10**400  # a loader takes 4,300 digits; a float holds 309


def test_an_integer_past_a_float_s_range_counts_as_infinite_not_as_a_crash() -> None:
    """A harness or a trace file may give such a count, duration or time: the metrics
    are infinite, as a sum of large floats is, and the results write them as null."""
    fast = trace(("provider:end", {"usage": {"inputTokens": HUGE, "outputTokens": 1}, "cost": 0}))
    shaped = trace(("provider:end", {"usage": {"prompt_tokens": -HUGE}}))
    shaped_cost = trace(("provider:end", {"usage": {"input_tokens": 1}, "cost": HUGE}))
    ended = trace(("harness:end", {"durationMs": HUGE}))
    assert fast.metrics.input_tokens == float("inf")
    assert shaped.metrics.input_tokens == float("-inf")
    assert shaped_cost.metrics.cost == float("inf")
    assert ended.metrics.latency_ms == float("inf")
    timed = Trace.from_signals([{"name": "a", "timestamp": 1}, {"name": "b", "timestamp": HUGE}])
    assert timed.timestamp_span_ms is None  # 1e400 seconds names no moment


def test_a_bound_past_a_float_s_range_is_compared_and_written_as_given() -> None:
    t = trace(("provider:end", {"usage": {"inputTokens": 5, "outputTokens": 1}, "cost": 0}))
    assert check({"type": "metric.tokens.max", "value": HUGE}, t).passed
    failed = check({"type": "signal.count", "pattern": "provider:end", "min": HUGE}, t)
    assert not failed.passed and str(HUGE)[:50] in failed.message


def test_state_change_appending_to_a_list_keeps_the_list() -> None:
    t = trace(
        ("state:files.1:changed", {"key": "files", "path": "files.1", "newValue": "b.py"}),
        input={"files": ["a.py"]},
    )
    assert t.final_state == {"files": ["a.py", "b.py"]}


# -- properties: the name index and the state log against naive scans ---------------------

INDEX_PROPS = settings(max_examples=60, deadline=None)
NAMES = ["a", "a:x", "a:y", "b:x", "b:x:y", "state:a:changed", "]", "-", "^", "\\"]
GLOBS = ["a", "a:*", "*:x", "**", "b:**", "*", "**:y", "]", "-", "\\", "nothing"]


@INDEX_PROPS
@given(st.lists(st.sampled_from(NAMES), max_size=40), st.sampled_from(GLOBS), st.integers(0, 45))
def test_index_agrees_with_a_naive_scan(names: list[str], pattern: str, start: int) -> None:
    t = Trace.from_signals([{"name": n} for n in names])
    regex = compile_glob(pattern)
    hits = [i for i, n in enumerate(names) if regex.fullmatch(n)]
    assert t.count(pattern) == len(hits)
    assert list(t.positions(pattern)) == hits
    assert list(t.positions(pattern, start)) == [i for i in hits if i >= start]
    assert t.find(pattern, start) == next((i for i in hits if i >= start), None)
    assert t.rfind(pattern) == (hits[-1] if hits else None)
    assert [s.name for s in t.matching(pattern)] == [names[i] for i in hits]
    for name in NAMES:  # frequent names are read by a pass over all, rare ones by position
        assert [s.name for s in t.named(name)] == [n for n in names if n == name]


@pytest.mark.parametrize("every", [2, 25])  # one in 2 signals ends a call (dense), one in 25
def test_usage_is_summed_alike_however_often_a_call_ends(every: int) -> None:
    end = ("provider:end", {"usage": {"inputTokens": 3, "outputTokens": 1}, "cost": 0.5})
    t = trace(*[end if i % every == 0 else ("text:delta", {}) for i in range(100)])
    calls = len(range(0, 100, every))
    assert [s.name for s in t.named("provider:end")] == ["provider:end"] * calls
    m = t.metrics
    assert (m.input_tokens, m.output_tokens, m.cost) == (3 * calls, calls, 0.5 * calls)


def test_index_with_hundreds_of_distinct_names() -> None:
    # the 46th, 93rd, 94th, 95th names get the codes '-', '\\', ']', '^'
    names = [f"n:{i}" for i in range(300)]
    t = Trace.from_signals([{"name": n} for n in names + names[::-1]])
    for i, name in enumerate(names):
        assert list(t.positions(name)) == [i, 599 - i]
        assert t.count(name) == 2
    assert t.count("n:*") == 600
    assert list(t.positions("n:9*")) == sorted(
        [i for i, n in enumerate(names) if n.startswith("n:9")]
        + [599 - i for i, n in enumerate(names) if n.startswith("n:9")]
    )


VALUES = ["Read", "5", 5, True, 1.0, None, ["Read"]]
call_payloads = st.one_of(
    st.dictionaries(
        st.sampled_from(["name", "toolName", "input", "args", "agent"]),
        st.sampled_from(VALUES),
        max_size=4,
    ),
    st.sampled_from(["Read", None, 5, ["Read"]]),  # no object: not a call, no agent
)


@INDEX_PROPS
@given(st.lists(st.tuples(st.sampled_from(["tool:call", "agent:activated", "x"]), call_payloads)))
def test_tool_and_activation_views_agree_with_a_naive_reading(events: list) -> None:
    t = trace(*events)
    calls = [p for name, p in events if name == "tool:call" and isinstance(p, dict)]
    names = [p.get("name", p.get("toolName")) for p in calls]
    assert (t.tool_call_payloads, t.tool_names) == (calls, names)
    starts = [
        (p.get("agent") if isinstance(p, dict) else None, p)
        for n, p in events
        if n == "agent:activated"
    ]
    assert [(who, s.payload) for who, s in t.activations] == starts
    for value in VALUES:
        same = [i for i, n in enumerate(names) if values_equal(value, n)]
        assert t.tool_inputs(value) == [calls[i].get("input", calls[i].get("args")) for i in same]
        of_agent = [p for who, p in starts if values_equal(value, who)]
        assert [s.payload for s in t.activations_of(value)] == of_agent
        assert t.activated(value) is bool(of_agent)


@pytest.mark.parametrize("field", ["inputTokens", "outputTokens", "cost"])
def test_a_boolean_in_any_usage_field_is_no_number(field: str) -> None:
    payload = {"usage": {"inputTokens": 2, "outputTokens": 3}, "cost": 0.5}
    (payload["usage"] if field != "cost" else payload)[field] = True
    m = trace(("provider:end", payload), ("provider:end", payload)).metrics
    expected = {"inputTokens": (0, 6, 1.0), "outputTokens": (4, 0, 1.0), "cost": (4, 6, 0.0)}
    assert (m.input_tokens, m.output_tokens, m.cost) == expected[field]


STATE_KEYS = ["a", "a.b", "a.c", "a.b.d", "b", "c.x"]
state_values = st.one_of(
    st.integers(0, 3),
    st.none(),
    st.dictionaries(st.sampled_from(["b", "c", "d", "x"]), st.integers(0, 3), max_size=2),
)
state_events = st.one_of(
    st.tuples(st.just("change"), st.sampled_from(STATE_KEYS), state_values),
    st.tuples(
        st.just("batch"),
        st.lists(st.tuples(st.sampled_from(STATE_KEYS), state_values), max_size=3),
        st.none(),
    ),
    st.tuples(st.just("other"), st.none(), st.none()),
)


@INDEX_PROPS
@given(
    st.dictionaries(st.sampled_from(["a", "b"]), state_values, max_size=2),
    st.lists(state_events, max_size=12),
)
def test_state_after_equals_replaying_every_change(initial: dict, events: list) -> None:
    specs: list[tuple[str, object]] = []
    for kind, key, value in events:
        if kind == "change":
            specs.append((f"state:{key}:changed", {"key": key, "newValue": value}))
        elif kind == "batch":
            batch = [{"path": p, "newValue": v} for p, v in key]
            specs.append(("state:batch:changed", {"newValue": batch}))
        else:
            specs.append(("step:done", {}))
    t = trace(*specs, input=initial)
    state = initial
    for index, (name, payload) in enumerate(specs):
        if name == "state:batch:changed":
            for write in payload["newValue"]:  # type: ignore[index]
                state = set_path(state, write["path"], write["newValue"])
        elif name != "step:done":
            state = set_path(state, payload["key"], payload["newValue"])  # type: ignore[index]
        assert t.state_after(index) == state
    assert t.final_state == state


def test_several_paths_written_under_one_signal_name_all_survive() -> None:
    t = Trace.from_signals(
        [
            {"name": "harness:start", "payload": {"state": {"files": [], "analysis": {}}}},
            {"name": "state:files:changed", "payload": {"path": "files[0]", "newValue": "a.ts"}},
            {"name": "state:files:changed", "payload": {"path": "files[1]", "newValue": "b.ts"}},
            {
                "name": "state:analysis:changed",
                "payload": {"path": "analysis.confidence", "newValue": 0.9},
            },
            {
                "name": "state:analysis:changed",
                "payload": {"path": "analysis.summary", "newValue": "ok"},
            },
            {"name": "marker"},
        ]
    )
    assert t.state_after(5) == {
        "files": ["a.ts", "b.ts"],
        "analysis": {"confidence": 0.9, "summary": "ok"},
    }
    assert t.state_after(1) == {"files": ["a.ts"], "analysis": {}}


def test_a_later_write_to_a_parent_overrides_and_a_later_child_write_applies() -> None:
    t = Trace.from_signals(
        [
            {"name": "state:a:changed", "payload": {"path": "a.b", "newValue": 1}},
            {"name": "state:a:changed", "payload": {"path": "a", "newValue": {"c": 2}}},
            {"name": "state:x:changed", "payload": {"path": "a.d", "newValue": 3}},
            {"name": "state:a:changed", "payload": {"path": "a.b", "newValue": 4}},
        ]
    )
    assert t.state_after(1) == {"a": {"c": 2}}
    assert t.state_after(3) == {"a": {"c": 2, "d": 3, "b": 4}}


def test_plain_state_changed_applies_its_key_and_needs_one() -> None:
    t = Trace.from_signals(
        [
            {"name": "harness:start", "payload": {"state": {"x": 0}}},
            {"name": "state:changed", "payload": {"key": "x", "newValue": 5}},
            {"name": "state:changed", "payload": {"newValue": 9}},  # says nothing about where
        ]
    )
    assert t.final_state == {"x": 5}


@pytest.mark.parametrize(
    ("first", "last", "span"),
    [
        ("2026-01-10T00:00:00.000Z", "2026-01-10T00:00:01.250Z", 1250.0),
        ("2026-01-10T00:00:00+00:00", "2026-01-10T00:00:02+00:00", 2000.0),
        (1_700_000_000_000, 1_700_000_000_500, 500.0),  # epoch milliseconds
        (1_700_000_000, 1_700_000_003, 3000.0),  # epoch seconds
        ("not a time", "2026-01-10T00:00:01Z", None),
        (None, 5, None),
        ("2026-01-10T00:00:02Z", "2026-01-10T00:00:01Z", None),  # out of order: no span
    ],
)
def test_timestamp_span(first: object, last: object, span: float | None) -> None:
    t = Trace.from_signals([{"name": "a", "timestamp": first}, {"name": "b", "timestamp": last}])
    assert t.timestamp_span_ms == span


def test_latency_assertions_read_the_same_latency_the_results_report() -> None:
    spanned = [
        {"name": "harness:start", "timestamp": "2026-01-10T00:00:00Z"},
        {"name": "harness:end", "timestamp": "2026-01-10T00:00:05Z"},
    ]
    assert Trace.from_signals(spanned).metrics.latency_ms == 5000.0
    assert evaluate_assertion({"type": "metric.latency.max", "value": 30000}, spanned).passed
    assert not evaluate_assertion({"type": "metric.latency.max", "value": 4000}, spanned).passed
    bare = [{"name": "harness:start"}, {"name": "harness:end"}]
    result = evaluate_assertion({"type": "metric.latency.max", "value": 30000}, bare)
    assert not result.passed and "no latency recorded" in result.message


def test_recorded_trace_latency_comes_from_its_timestamps_not_evaluation_time() -> None:
    from signal_eval_cli.results import CaseMetrics

    t = Trace.from_signals(
        [
            {"name": "harness:start", "timestamp": "2026-01-10T00:00:00Z"},
            {"name": "text:complete", "timestamp": "2026-01-10T00:00:03Z"},
        ]
    )
    assert CaseMetrics.from_trace(t, wall_ms=7.0).latency_ms == 3000.0
    bare = Trace.from_signals([{"name": "harness:start"}, {"name": "text:complete"}])
    assert CaseMetrics.from_trace(bare, wall_ms=7.0).latency_ms == 7.0


def test_a_trace_prices_unpriced_calls_by_the_table_it_is_given() -> None:
    """Prices are passed in (the core never imports the providers); without a table a
    trace prices by data/prices.yaml, as before."""
    from signal_eval_cli.pricing import Price, PriceTable

    usage = {"inputTokens": 1_000_000, "outputTokens": 500_000}
    calls = [
        {"name": "provider:start", "payload": {"model": "house-model"}},
        {"name": "provider:end", "payload": {"usage": usage}},
    ]
    assert Trace.from_signals(calls).metrics.cost == 0.0  # not in data/prices.yaml
    table = PriceTable({"house-model": Price(2.0, 8.0)})
    assert Trace.from_signals(calls, prices=table).metrics.cost == pytest.approx(2.0 + 4.0)
    assert Trace(Trace.from_signals(calls).signals, prices=table).metrics.cost == 6.0


def test_pricing_a_trace_loads_no_provider() -> None:
    probe = (
        "import sys\n"
        "from signal_eval_cli.signals import Trace\n"
        "calls = [{'name': 'provider:start', 'payload': {'model': 'gpt-4o-mini'}},\n"
        "         {'name': 'provider:end', 'payload': {'usage': {'inputTokens': 10**6}}}]\n"
        "assert Trace.from_signals(calls).metrics.cost > 0\n"
        "print(sorted(m for m in sys.modules if m.startswith('signal_eval_cli.providers')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "ns",
    [0, 1_764_252_197_123_999_999, 1_764_252_197_999_500_000, 1_764_252_198_000_000_001],
)
def test_now_iso_writes_what_datetime_isoformat_writes(
    ns: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stamp of every signal, as datetime wrote it (milliseconds cut, not rounded,
    ``Z`` for UTC), also across the second it caches the text of."""
    import datetime as dt
    import time

    from signal_eval_cli import signals as module

    monkeypatch.setattr(time, "time_ns", lambda: ns)
    seconds, rest = divmod(ns, 1_000_000_000)
    when = dt.datetime.fromtimestamp(seconds, dt.timezone.utc)
    when = when.replace(microsecond=rest // 1000)
    expected = when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert module.now_iso() == expected
    assert module.now_iso() == expected  # the cached second


def test_elapsed_ms_between_two_stamps_is_never_negative_and_0_when_unreadable() -> None:
    assert elapsed_ms("2026-11-27T21:00:00.250Z", "2026-11-27T21:00:01.750Z") == 1500.0
    assert elapsed_ms("2026-11-27T21:00:01.000Z", "2026-11-27T21:00:00.000Z") == 0.0
    unreadable = elapsed_ms("not a time", "2026-11-27T21:00:00.000Z")
    assert (type(unreadable), unreadable) == (float, 0.0)


def test_a_tool_call_built_without_a_result_has_no_status() -> None:
    call = ToolCall("t1", "Bash", {"command": "ls"}, 0)
    assert (call.has_result, call.status) == (False, None)
    assert ToolCall("t1", "Bash", {}, 0, result="ok", has_result=True).status == "ok"
