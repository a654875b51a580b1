"""The engine semantics decided after differential testing against the TypeScript
reference (issue 10): each rule the reference and this engine once disagreed on."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from conftest import trace
from hypothesis import given, settings
from hypothesis import strategies as st

from signal_eval_cli import (
    EvalError,
    InvalidAssertion,
    Trace,
    evaluate_assertion,
    load_dataset,
)
from signal_eval_cli.jsjson import js_number, js_stringify
from signal_eval_cli.patterns import get_path, parse_path, set_path
from signal_eval_cli.results import CaseMetrics


def dataset(folder: Path, assertions: str) -> Path:
    """A one-case dataset file whose ``assertions:`` list is the YAML ``assertions``."""
    path = folder / "d.yaml"
    path.write_text(f"name: d\ncases:\n  - id: a\n    input: {{}}\n    assertions:\n{assertions}")
    return path


def passes(assertion: dict[str, Any], t: Trace) -> bool:
    return evaluate_assertion(assertion, t).passed


def final(path: str, state: Any, **extra: Any) -> bool:
    t = trace(("harness:end", {"state": state}))
    return passes({"type": "snapshot.final", "path": path, **extra}, t)


# -- paths ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "state"),
    [
        ("xs[-1]", {"xs": [1, 2]}),  # no Python negative indexing
        ("xs.-1", {"xs": [1, 2]}),
        ("xs.01", {"xs": [1, 2]}),  # no leading zeros
        ("xs[01]", {"xs": [1, 2]}),
        ("xs[+1]", {"xs": [1, 2]}),
        ("xs[ 1]", {"xs": [1, 2]}),
        ('a["b"]', {"a": {"b": 1}}),  # quotes are part of the key
        ("a['b']", {"a": {"b": 1}}),
        ("xs[²]", {"xs": [1, 2]}),  # a Unicode digit is not an index
    ],
)
def test_non_canonical_paths_never_match(path: str, state: Any) -> None:
    assert not final(path, state)
    assert final(path, state, exists=False)


@pytest.mark.parametrize(
    ("path", "state", "value"),
    [
        ("a[b]", {"a": {"b": 7}}, 7),  # a[b] means a.b
        ("a[b].c", {"a": {"b": {"c": 7}}}, 7),
        ('a["b"]', {"a": {'"b"': 7}}, 7),  # the quotes are the key
        ("xs[1]", {"xs": [5, 7]}, 7),
        ("xs.1", {"xs": [5, 7]}, 7),
        ("[0]", [7], 7),
        ("xs[10]", {"xs": list(range(11))}, 10),
        ("m.-1", {"m": {"-1": 7}}, 7),  # an object key may look like a negative number
    ],
)
def test_canonical_paths_match(path: str, state: Any, value: Any) -> None:
    assert final(path, state, value=value)


def test_an_empty_path_is_the_whole_state() -> None:
    assert final("", {"a": 1}, value={"a": 1})
    assert final("", [1, 2], value=[1, 2])
    assert not final("", {"a": 1}, value={"a": 2})


@pytest.mark.parametrize("key", ["[", "]", "a[b]", "[[", "a..b", "", "[0", "x]"])
def test_an_odd_state_key_does_not_break_state_for_other_paths(key: str) -> None:
    t = trace(
        ("state:count:changed", {"newValue": 3}),
        ("state:changed", {"path": key, "newValue": "odd"}),
        ("state:batch:changed", {"newValue": [{"path": key, "newValue": "odder"}]}),
        ("step:done", None),
    )
    ok = evaluate_assertion(
        {"type": "snapshot.at", "afterSignal": "step:done", "path": "count", "value": 3}, t
    )
    assert ok.passed, ok.message
    assert passes({"type": "snapshot.final", "path": "count", "value": 3}, t)


def test_a_bracket_key_written_by_a_signal_is_read_back_by_the_same_path() -> None:
    t = trace(
        ("state:changed", {"path": "a[b]", "newValue": 1}),
        ("state:changed", {"path": "[", "newValue": 2}),
    )
    assert passes({"type": "snapshot.final", "path": "a.b", "value": 1}, t)
    assert passes({"type": "snapshot.final", "path": "[", "value": 2}, t)


JSON_KEYS = st.text(alphabet="ab0123456789-[].\"' ", max_size=6)
STATES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(JSON_KEYS, inner, max_size=4),
    max_leaves=12,
)
PATHS = st.text(max_size=12) | st.text(alphabet="ab01-[].\"'", max_size=12)


@settings(max_examples=100, deadline=None)
@given(state=STATES, path=PATHS, new=STATES)
def test_any_path_on_any_state_never_raises(state: Any, path: str, new: Any) -> None:
    parse_path(path)
    found, value = get_path(state, path)
    assert found or value is None
    written = set_path(state, path, new)
    assert get_path(written, path) in ((True, new), (False, None))
    t = trace(("state:changed", {"path": path, "newValue": new}), "step:done")
    evaluate_assertion({"type": "snapshot.final", "path": path, "exists": True}, t)
    evaluate_assertion({"type": "snapshot.at", "afterSignal": "step:done", "path": path}, t)


CANONICAL = re.compile(r"0|[1-9][0-9]*")


@settings(max_examples=100, deadline=None)
@given(
    items=st.lists(st.integers(), max_size=12),
    key=st.text(max_size=4) | st.integers(-3, 14).map(str),
)
def test_a_list_index_matches_only_when_canonical_and_in_range(items: list[int], key: str) -> None:
    state = {"xs": items}
    expected = (
        (True, items[int(key)])
        if CANONICAL.fullmatch(key) and int(key) < len(items)
        else (False, None)
    )
    if not set(key) & set(".[]"):
        assert get_path(state, f"xs.{key}") == expected
        assert get_path(state, f"xs[{key}]") == expected


# -- payload / args: the top level is an object pattern ----------------------------------


def test_a_payload_pattern_top_level_is_an_object_never_a_matcher() -> None:
    t = trace(("msg", {"contains": "a"}), ("num", 0))
    assert passes({"type": "signal.contains", "pattern": "msg", "payload": {"contains": "a"}}, t)
    assert not passes({"type": "signal.contains", "pattern": "num", "payload": {"lt": 3}}, t)
    assert passes({"type": "signal.not", "pattern": "num", "payload": {"lt": 3}}, t)
    assert passes({"type": "signal.count", "pattern": "num", "payload": {"lt": 3}, "exact": 0}, t)
    assert not passes({"type": "signal.first", "pattern": "num", "payload": {"lt": 3}}, t)
    steps = [{"pattern": "msg", "payload": {"contains": "a"}}]
    assert passes({"type": "signal.trajectory", "patterns": steps}, t)
    # matchers still stand below the top level
    assert passes(
        {"type": "signal.contains", "pattern": "msg", "payload": {"contains": {"startsWith": "a"}}},
        t,
    )


def test_tool_args_top_level_is_an_object_never_a_matcher() -> None:
    t = trace(
        ("tool:call", {"name": "Bash", "input": {"contains": "ls"}}),
        ("tool:call", {"name": "N", "input": 0}),
    )
    assert passes({"type": "tool.calledWith", "name": "Bash", "args": {"contains": "ls"}}, t)
    assert not passes({"type": "tool.calledWith", "name": "N", "args": {"lt": 3}}, t)
    assert passes({"type": "tool.calledWith", "name": "N", "args": 0}, t)


def test_a_top_level_payload_key_named_like_a_matcher_is_not_checked_as_one(tmp_path: Path) -> None:
    path = dataset(
        tmp_path, "      - {type: signal.contains, pattern: x, payload: {between: [1]}}\n"
    )
    assert load_dataset(path).cases[0].assertions[0]["payload"] == {"between": [1]}


# -- no str() coercion of names -------------------------------------------------------------


def test_a_tool_call_without_a_name_is_not_named_none() -> None:
    t = trace(("tool:call", {"input": {}}))
    assert not passes({"type": "tool.called", "name": "None"}, t)
    assert passes({"type": "tool.notCalled", "name": "None"}, t)
    assert not passes({"type": "tool.calledWith", "name": "None", "args": {}}, t)
    assert not passes({"type": "tool.sequence", "tools": ["None"]}, t)


def test_a_number_is_not_the_string_of_its_digits() -> None:
    t = trace(("tool:call", {"name": 5, "input": {}}), ("tool:call", {"name": True}))
    assert not passes({"type": "tool.called", "name": "5"}, t)
    assert passes({"type": "tool.called", "name": 5}, t)
    assert not passes({"type": "tool.called", "name": 1}, t)  # True is not 1
    assert not passes({"type": "tool.sequence", "tools": ["5"]}, t)
    assert not passes({"type": "tool.calledWith", "name": "5", "args": {}}, t)
    agent5 = trace(("x:done", None, 5), ("agent:activated", {"agent": 5}))
    assert not passes({"type": "agent.emitted", "agentId": "5", "signal": "x:done"}, agent5)
    assert passes({"type": "agent.emitted", "agentId": 5, "signal": "x:done"}, agent5)
    assert agent5[0].to_dict()["source"] == {"agent": 5}  # written back as read


def test_agent_completed_sees_agent_error_by_source_agent_as_written() -> None:
    t = trace(("agent:activated", {"agent": 5}), ("agent:error", {"error": "boom"}, "5"))
    assert passes({"type": "agent.completed", "agentId": 5}, t)  # the error was "5"'s
    t = trace(("agent:activated", {"agent": 5}), ("agent:error", {"error": "boom"}, 5))
    assert not passes({"type": "agent.completed", "agentId": 5}, t)


def test_agent_skipped_takes_any_skips_reason_and_an_empty_reason_is_one() -> None:
    t = trace(
        ("agent:skipped", {"agent": "coder", "reason": "no plan"}),
        ("agent:skipped", {"agent": "coder", "reason": "over budget"}),
    )
    skipped = {"type": "agent.skipped", "agentId": "coder"}
    assert passes({**skipped, "reason": "over budget"}, t)  # the second skip's reason
    assert not passes({**skipped, "reason": "late"}, t)
    assert not passes({**skipped, "reason": ""}, t)  # no skip gave an empty reason
    assert passes(
        {**skipped, "reason": ""}, trace(("agent:skipped", {"agent": "coder", "reason": ""}))
    )


# -- final state --------------------------------------------------------------------------


def test_final_state_is_the_last_harness_end_that_has_a_state_key() -> None:
    t = trace(
        ("harness:end", {"state": {"n": 1}}),
        ("state:n:changed", {"newValue": 9}),
        ("harness:end", {"durationMs": 5}),
    )
    assert t.final_state == {"n": 1}
    assert passes({"type": "snapshot.final", "path": "n", "value": 1}, t)
    nulled = trace(("harness:end", {"state": {"n": 1}}), ("harness:end", {"state": None}))
    assert nulled.final_state is None


# -- output ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "output"),
    [
        ({"a": 1}, '{"a":1}'),
        ({"a": [1, 2.0, None, True]}, '{"a":[1,2,null,true]}'),
        ([1.5, "é"], '[1.5,"é"]'),
        (5, "5"),
        (2.0, "2"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1.5e-7, "1.5e-7"),
        (0.000001, "0.000001"),
        (False, "false"),
        ({"text": "T"}, "T"),
        ({"text": "T", "type": "text"}, "T"),
        ({"text": 5}, '{"text":5}'),
    ],
)
def test_output_of_non_string_content_is_json_stringify(content: Any, output: str) -> None:
    assert trace(("text:complete", {"content": content})).output == output
    assert trace(("text:delta", {"content": content})).output == output
    assert trace(("provider:end", {"output": content})).output == output


# -- token counts ----------------------------------------------------------------------------


def test_token_counts_keep_their_values() -> None:
    t = trace(("provider:end", {"usage": {"inputTokens": 2.5, "outputTokens": 1}, "cost": 0}))
    metrics = t.metrics
    assert (metrics.input_tokens, metrics.output_tokens, metrics.total_tokens) == (2.5, 1, 3.5)
    assert passes({"type": "metric.tokens.min", "field": "input", "value": 2.5}, t)
    assert not passes({"type": "metric.tokens.max", "field": "input", "value": 2}, t)
    odd = trace(("provider:end", {"usage": {"prompt_tokens": 2.5, "completion_tokens": 0.5}}))
    assert (odd.metrics.input_tokens, odd.metrics.total_tokens) == (2.5, 3)
    assert isinstance(odd.metrics.total_tokens, int)
    saved = CaseMetrics.from_trace(t, 0).to_dict()
    assert (saved["inputTokens"], saved["totalTokens"]) == (2.5, 3.5)
    assert CaseMetrics.from_dict(saved).input_tokens == 2.5


# -- matcher arity ------------------------------------------------------------------------------


@pytest.mark.parametrize("operand", [[1], [1, 2, 3], [], [1, "2"], "1,2", [True, 2]])
def test_between_needs_exactly_two_numbers_at_load_time_and_in_the_api(
    operand: Any, tmp_path: Path
) -> None:
    path = dataset(
        tmp_path, f"      - {{type: snapshot.final, path: n, value: {{between: {operand!r}}}}}\n"
    )
    with pytest.raises(EvalError) as raised:
        load_dataset(path)
    assert f"{path}:6:" in str(raised.value) and "'between' needs [min, max]" in str(raised.value)
    with pytest.raises(InvalidAssertion):
        final("n", {"n": 1}, value={"between": operand})


def test_between_with_two_numbers_loads_and_evaluates(tmp_path: Path) -> None:
    path = dataset(tmp_path, "      - {type: snapshot.final, path: n, value: {between: [1, 2]}}\n")
    assert load_dataset(path).cases[0].assertions
    assert final("n", {"n": 1.5}, value={"between": [1, 2]})
    assert not final("n", {"n": 3}, value={"between": [1, 2]})


# -- kept choices, now decided ----------------------------------------------------------------


def test_exists_with_value_checks_both() -> None:
    assert final("a", {"a": 1}, exists=True, value=1)
    assert not final("a", {"a": 2}, exists=True, value=1)
    assert not final("a", {}, exists=True, value=None)  # missing is not null


def test_case_insensitive_output_matching_uses_casefold() -> None:
    t = trace(("text:complete", {"content": "Die Straße"}))
    assert passes({"type": "output.contains", "text": "STRASSE", "caseSensitive": False}, t)
    assert not passes({"type": "output.contains", "text": "STRASSE"}, t)


def test_count_is_a_synonym_of_exact() -> None:
    t = trace("x", "x")
    for key in ("count", "exact"):
        assert passes({"type": "signal.count", "pattern": "x", key: 2}, t)
        assert not passes({"type": "signal.count", "pattern": "x", key: 1}, t)


def test_multi_key_matchers_need_every_key() -> None:
    assert final("n", {"n": 2}, value={"gte": 1, "lte": 3})
    assert not final("n", {"n": 4}, value={"gte": 1, "lte": 3})


@pytest.mark.parametrize(
    "regex",
    [r"(?<n>a)\k<n>", r"\p{L}", "[^]", r"\u{41}", "(?<=a+)b", r"\cJ"],
)
def test_javascript_only_regex_syntax_is_a_load_error(regex: str, tmp_path: Path) -> None:
    path = dataset(tmp_path, f"      - type: output.matches\n        regex: '{regex}'\n")
    with pytest.raises(EvalError) as raised:
        load_dataset(path)
    assert f"{path}:7:" in str(raised.value) and "invalid regex" in str(raised.value)


def test_python_regex_syntax_and_the_js_named_group_work() -> None:
    t = trace(("text:complete", {"content": "id=42"}))
    assert passes({"type": "output.matches", "regex": r"id=(?P<n>\d+)"}, t)
    assert passes({"type": "output.matches", "regex": r"id=(?<n>\d+)"}, t)
    assert passes({"type": "output.matches", "regex": "ID", "flags": "i"}, t)


def test_latency_cost_and_output_fallbacks() -> None:
    t = trace(
        {"name": "provider:start", "payload": {"model": "gpt-4o-mini"}, "timestamp": 1000.0},
        {"name": "text:delta", "payload": {"content": "a"}, "timestamp": 1000.5},
        {
            "name": "provider:end",
            "payload": {"usage": {"inputTokens": 1_000_000, "outputTokens": 0}},
            "timestamp": 1002.0,
        },
    )
    assert t.metrics.latency_ms == 2000  # no harness:end: the span of the timestamps
    assert t.metrics.cost > 0  # no cost: priced from the tokens and the model
    assert t.output == "a"  # no text:complete, no provider:end output: the deltas


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (-0.0, "0"),
        (7, "7"),
        (-1.5, "-1.5"),
        (12.0, "12"),
        (0.5, "0.5"),
        (123.456, "123.456"),
        (1e21, "1e+21"),
        (-1e21, "-1e+21"),
        (1.5e21, "1.5e+21"),
        (1.2345678901234568e20, "123456789012345680000"),
        (1e-6, "0.000001"),
        (-1e-6, "-0.000001"),
        (1.25e-6, "0.00000125"),
        (1e-7, "1e-7"),
        (1.2345e-7, "1.2345e-7"),
        (1.5e300, "1.5e+300"),
        (5e-324, "5e-324"),
        (float("nan"), "null"),
        (float("inf"), "null"),
        (float("-inf"), "null"),
    ],
)
def test_numbers_are_written_as_javascript_writes_them(value: float, text: str) -> None:
    assert js_number(value) == text


def test_json_stringify_keys_and_values() -> None:
    assert (
        js_stringify({"b": 1, "a": [True, None, 'x\n"y"']})
        == '{"b":1,"a":[true,null,"x\\n\\"y\\""]}'
    )
    assert (
        js_stringify({1: "a", None: 1, 2.5: 3, False: 4}) == '{"1":"a","null":1,"2.5":3,"false":4}'
    )
    assert (
        js_stringify((1, "é")) == '[1,"é"]'
        and js_stringify([]) == "[]"
        and js_stringify({}) == "{}"
    )
    assert js_stringify({("k",): Path("p")}) == '{"(\'k\',)":"p"}'
    nested: Any = []
    for _ in range(5000):
        nested = [nested]
    assert (
        trace(("text:complete", {"content": nested})).output == "<list nested too deeply to write>"
    )
