"""signal.contains / not / count / trajectory / first / last, and matchers in payloads."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import check, fails, passes, review_trace, trace
from hypothesis import given, settings
from hypothesis import strategies as st

from signal_eval_cli import Trace

# -- signal.contains ----------------------------------------------------------------------


def test_contains_by_name_and_glob(review: Trace) -> None:
    passes({"type": "signal.contains", "pattern": "review:complete"}, review)
    passes({"type": "signal.contains", "pattern": "agent:*"}, review)
    passes({"type": "signal.contains", "pattern": "**:complete"}, review)


def test_contains_fails_when_no_name_matches(review: Trace) -> None:
    result = fails({"type": "signal.contains", "pattern": "deploy:*"}, review)
    assert "deploy:*" in result.message
    assert "no signal matches" in result.message


def test_contains_with_partial_payload(review: Trace) -> None:
    passes({"type": "signal.contains", "pattern": "agent:*", "payload": {"agent": "fixer"}}, review)
    result = fails(
        {"type": "signal.contains", "pattern": "agent:*", "payload": {"agent": "nobody"}}, review
    )
    assert "2 signal(s) match 'agent:*'" in result.message
    assert "none carries payload" in result.message
    assert '"nobody"' in result.message


def test_contains_payload_is_matched_against_every_name_match_not_only_the_first() -> None:
    t = trace(("x:a", {"n": 1}), ("x:b", {"n": 2}), ("x:c", {"n": 3}))
    passes({"type": "signal.contains", "pattern": "x:*", "payload": {"n": 3}}, t)


def test_contains_empty_payload_needs_an_object() -> None:
    passes({"type": "signal.contains", "pattern": "a", "payload": {}}, trace(("a", {"k": 1})))
    fails({"type": "signal.contains", "pattern": "a", "payload": {}}, trace(("a", "text")))
    fails({"type": "signal.contains", "pattern": "a", "payload": {}}, trace("a"))


# -- matchers inside payloads, through the public API --------------------------------------

PAYLOAD = {
    "score": 0.8,
    "count": 3,
    "title": "SQL injection in login",
    "tags": ["security", "sql"],
    "flag": True,
    "zero": 0,
    "off": False,
    "none": None,
    "nested": {"deep": {"items": [{"v": 10}, {"v": "abc"}]}},
}

MATCHER_PASS_FAIL = [
    ("gte", {"score": {"gte": 0.8}}, {"score": {"gte": 0.81}}),
    ("lte", {"count": {"lte": 3}}, {"count": {"lte": 2}}),
    ("gt", {"count": {"gt": 2}}, {"count": {"gt": 3}}),
    ("lt", {"score": {"lt": 0.9}}, {"score": {"lt": 0.8}}),
    ("between", {"score": {"between": [0.5, 0.8]}}, {"score": {"between": [0.81, 1]}}),
    ("contains-str", {"title": {"contains": "injection"}}, {"title": {"contains": "XSS"}}),
    ("contains-arr", {"tags": {"contains": "sql"}}, {"tags": {"contains": "sq"}}),
    ("startsWith", {"title": {"startsWith": "SQL"}}, {"title": {"startsWith": "injection"}}),
    ("endsWith", {"title": {"endsWith": "login"}}, {"title": {"endsWith": "SQL"}}),
    ("matches", {"title": {"matches": "inj\\w+ion"}}, {"title": {"matches": "^login"}}),
    (
        "deep",
        {"nested": {"deep": {"items": [{"v": {"gt": 9}}, {"v": {"startsWith": "a"}}]}}},
        {"nested": {"deep": {"items": [{"v": {"gt": 10}}, {"v": {"startsWith": "a"}}]}}},
    ),
    ("array-equal-length", {"tags": ["security", "sql"]}, {"tags": ["security"]}),
    ("array-order", {"tags": ["security", {"endsWith": "ql"}]}, {"tags": ["sql", "security"]}),
    ("null", {"none": None}, {"missing": None}),
    ("bool-true", {"flag": True}, {"flag": 1}),
    ("bool-false", {"off": False}, {"off": 0}),
    ("number-zero", {"zero": 0}, {"zero": False}),
    ("numeric-vs-bool", {"count": {"gte": 1}}, {"flag": {"gte": 1}}),
]


@pytest.mark.parametrize(
    ("label", "good", "bad"), MATCHER_PASS_FAIL, ids=[c[0] for c in MATCHER_PASS_FAIL]
)
@pytest.mark.parametrize("kind", ["signal.contains", "signal.first", "signal.last"])
def test_payload_matchers(kind: str, label: str, good: dict[str, Any], bad: dict[str, Any]) -> None:
    t = trace("harness:start", ("issue:found", PAYLOAD), "harness:end")
    passes({"type": kind, "pattern": "issue:*", "payload": good}, t)
    fails({"type": kind, "pattern": "issue:*", "payload": bad}, t)


def test_true_payload_does_not_match_one_and_vice_versa() -> None:
    fails(
        {"type": "signal.contains", "pattern": "a", "payload": {"v": 1}}, trace(("a", {"v": True}))
    )
    fails(
        {"type": "signal.contains", "pattern": "a", "payload": {"v": True}}, trace(("a", {"v": 1}))
    )
    fails(
        {"type": "signal.contains", "pattern": "a", "payload": {"v": 0}}, trace(("a", {"v": False}))
    )
    fails(
        {"type": "signal.contains", "pattern": "a", "payload": {"v": False}}, trace(("a", {"v": 0}))
    )


# -- signal.not --------------------------------------------------------------------------


def test_not_passes_when_nothing_matches(review: Trace) -> None:
    passes({"type": "signal.not", "pattern": "agent:error"}, review)
    passes({"type": "signal.not", "pattern": "harness:start:*"}, review)


def test_not_fails_and_names_the_offender(review: Trace) -> None:
    result = fails({"type": "signal.not", "pattern": "tool:*"}, review)
    assert "'tool:call' at #5" in result.message
    assert "5 in all" in result.message
    assert result.actual == 5


# -- signal.count --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bounds", "ok"),
    [
        ({"exact": 3}, True),
        ({"exact": 2}, False),
        ({"count": 3}, True),
        ({"count": 4}, False),
        ({"min": 3}, True),
        ({"min": 4}, False),
        ({"max": 3}, True),
        ({"max": 2}, False),
        ({"min": 1, "max": 3}, True),
        ({"min": 4, "max": 9}, False),
        ({"exact": 3, "min": 10}, True),  # exact overrides min/max
        ({"exact": 3, "max": 1}, True),
        ({"exact": 1, "min": 0, "max": 10}, False),
        ({"count": 3, "max": 0}, True),
        ({}, True),  # no bounds: no constraint
    ],
)
def test_count_bounds(bounds: dict[str, int], ok: bool, review: Trace) -> None:
    assertion = {"type": "signal.count", "pattern": "tool:call", **bounds}
    if ok:
        passes(assertion, review)
    else:
        fails(assertion, review)


def test_count_with_no_bounds_is_no_constraint() -> None:
    # Only agent.activated and tool.called default to "at least once" (issue 2, item 3).
    result = passes({"type": "signal.count", "pattern": "nothing:*"}, trace("a"))
    assert result.actual == 0
    assert "any number" in result.message
    passes({"type": "signal.count", "pattern": "a"}, trace("a"))


def test_count_exact_zero_and_max_zero() -> None:
    passes({"type": "signal.count", "pattern": "x:*", "exact": 0}, trace("a", "b"))
    passes({"type": "signal.count", "pattern": "x:*", "max": 0}, trace("a", "b"))
    fails({"type": "signal.count", "pattern": "a", "exact": 0}, trace("a", "b"))


def test_count_failure_shows_actual_count_and_first_matching_names() -> None:
    t = trace(*[f"tool:{name}" for name in ["read", "edit", "bash", "grep", "glob", "ls", "cat"]])
    result = fails({"type": "signal.count", "pattern": "tool:*", "max": 2}, t)
    assert "found 7" in result.message
    assert "at most 2" in result.message
    assert "tool:read, tool:edit, tool:bash" in result.message
    assert "tool:cat" not in result.message  # only the first few
    assert result.actual == 7


def test_count_with_payload_counts_only_carriers() -> None:
    t = trace(
        ("agent:activated", {"agent": "a"}),
        ("agent:activated", {"agent": "b"}),
        ("agent:activated", {"agent": "a"}),
    )
    count = {"type": "signal.count", "pattern": "agent:activated", "payload": {"agent": "a"}}
    passes({**count, "exact": 2}, t)
    result = fails({**count, "exact": 3}, t)
    assert "found 2" in result.message


# -- signal.trajectory -----------------------------------------------------------------------

SEED_TRAJECTORY = [
    "harness:start",
    {"pattern": "agent:activated", "payload": {"agent": "reviewer"}},
    "review:complete",
    "harness:end",
]


def test_trajectory_seed_example(review: Trace) -> None:
    result = passes({"type": "signal.trajectory", "patterns": SEED_TRAJECTORY}, review)
    assert result.trajectory is not None
    assert result.trajectory[0] == "harness:start"
    assert result.actual == ["harness:start", "agent:activated", "review:complete", "harness:end"]


def test_trajectory_is_an_in_order_subsequence_with_gaps() -> None:
    t = trace("a", "x", "b", "y", "c")
    passes({"type": "signal.trajectory", "patterns": ["a", "b", "c"]}, t)
    passes({"type": "signal.trajectory", "patterns": ["a", "c"]}, t)
    passes({"type": "signal.trajectory", "patterns": ["x", "y"]}, t)
    fails({"type": "signal.trajectory", "patterns": ["b", "a"]}, t)
    fails({"type": "signal.trajectory", "patterns": ["c", "c"]}, t)


def test_trajectory_repeated_step_needs_repeated_signal() -> None:
    passes({"type": "signal.trajectory", "patterns": ["a", "a"]}, trace("a", "b", "a"))
    fails({"type": "signal.trajectory", "patterns": ["a", "a"]}, trace("a", "b"))


def test_trajectory_skips_name_match_whose_payload_does_not_match() -> None:
    t = trace(
        "harness:start",
        ("agent:activated", {"agent": "fixer"}),
        ("agent:activated", {"agent": "reviewer"}),
        "review:complete",
    )
    passes({"type": "signal.trajectory", "patterns": SEED_TRAJECTORY[:3]}, t)
    result = fails(
        {
            "type": "signal.trajectory",
            "patterns": [
                "harness:start",
                {"pattern": "agent:*", "payload": {"agent": "judge"}},
                "review:complete",
            ],
        },
        t,
    )
    assert "matched 1 of 3" in result.message
    assert "step 2" in result.message
    assert "agent:*" in result.message and "judge" in result.message
    assert "after #0 'harness:start'" in result.message


def test_trajectory_failure_says_how_far_and_after_which_signal(review: Trace) -> None:
    result = fails(
        {
            "type": "signal.trajectory",
            "patterns": ["harness:start", "review:complete", "deploy:done", "harness:end"],
        },
        review,
    )
    assert "matched 2 of 4 steps" in result.message
    assert "step 3 'deploy:done' not found" in result.message
    assert "after #10 'review:complete'" in result.message
    assert result.actual == ["harness:start", "review:complete"]
    assert result.expected == ["harness:start", "review:complete", "deploy:done", "harness:end"]
    assert result.trajectory == ["harness:start", "review:complete", "harness:end"]


def test_trajectory_failure_on_first_step() -> None:
    result = fails({"type": "signal.trajectory", "patterns": ["nope", "a"]}, trace("a"))
    assert "matched 0 of 2" in result.message
    assert "step 1 'nope' not found" in result.message


def test_trajectory_step_order_matters_even_if_all_present() -> None:
    result = fails(
        {"type": "signal.trajectory", "patterns": ["harness:end", "harness:start"]},
        review_trace(),
    )
    assert "step 2 'harness:start' not found after #17 'harness:end'" in result.message


def test_trajectory_empty_patterns_pass() -> None:
    passes({"type": "signal.trajectory", "patterns": []}, trace("a"))


def test_trajectory_globs() -> None:
    t = trace("harness:start", "agent:activated", "tool:call", "tool:result", "harness:end")
    passes({"type": "signal.trajectory", "patterns": ["harness:*", "tool:**", "harness:*"]}, t)
    fails({"type": "signal.trajectory", "patterns": ["harness:*", "tool:*:x"]}, t)


# strict: one contiguous run, starting anywhere


def test_strict_allows_leading_and_trailing_unrelated_signals() -> None:
    t = trace("noise:1", "harness:start", "a", "b", "c", "noise:2", "harness:end")
    passes({"type": "signal.trajectory", "patterns": ["a", "b", "c"], "strict": True}, t)
    passes({"type": "signal.trajectory", "patterns": ["c", "noise:*"], "strict": True}, t)


def test_strict_fails_with_an_interloper_between_matched_signals() -> None:
    t = trace("harness:start", "a", "b", "x", "c", "harness:end")
    passes({"type": "signal.trajectory", "patterns": ["a", "b", "c"]}, t)  # non-strict ok
    result = fails({"type": "signal.trajectory", "patterns": ["a", "b", "c"], "strict": True}, t)
    assert "matched 2 of 3" in result.message
    assert "step 3 'c'" in result.message
    assert "right after #2 'b'" in result.message
    assert "strict" in result.message


def test_strict_finds_a_later_complete_run_after_a_partial_one() -> None:
    t = trace("a", "b", "x", "a", "b", "c")
    result = passes({"type": "signal.trajectory", "patterns": ["a", "b", "c"], "strict": True}, t)
    assert "#3..#5" in result.message


def test_strict_with_payload_steps() -> None:
    t = trace(("agent:activated", {"agent": "r"}), ("review:complete", {"ok": True}))
    steps = [
        {"pattern": "agent:activated", "payload": {"agent": "r"}},
        {"pattern": "review:*", "payload": {"ok": True}},
    ]
    passes({"type": "signal.trajectory", "patterns": steps, "strict": True}, t)
    steps[1] = {"pattern": "review:*", "payload": {"ok": False}}
    fails({"type": "signal.trajectory", "patterns": steps, "strict": True}, t)


def test_strict_no_start_found() -> None:
    result = fails(
        {"type": "signal.trajectory", "patterns": ["z", "a"], "strict": True}, trace("a")
    )
    assert "matched 0 of 2" in result.message


# -- signal.first / signal.last ----------------------------------------------------------------


def test_first_and_last_check_only_the_edge_signal() -> None:
    t = trace(
        ("agent:activated", {"agent": "reviewer"}),
        ("agent:activated", {"agent": "middle"}),
        ("agent:activated", {"agent": "fixer"}),
    )
    passes({"type": "signal.first", "pattern": "agent:*", "payload": {"agent": "reviewer"}}, t)
    passes({"type": "signal.last", "pattern": "agent:*", "payload": {"agent": "fixer"}}, t)
    first = fails({"type": "signal.first", "pattern": "agent:*", "payload": {"agent": "fixer"}}, t)
    assert "first 'agent:*' (#0 'agent:activated')" in first.message
    assert '"reviewer"' in first.message
    last = fails({"type": "signal.last", "pattern": "agent:*", "payload": {"agent": "middle"}}, t)
    assert "last 'agent:*' (#2 'agent:activated')" in last.message
    assert last.actual == {"agent": "fixer"}


def test_first_and_last_without_payload_need_only_a_match() -> None:
    t = trace("a", "b")
    passes({"type": "signal.first", "pattern": "b"}, t)
    passes({"type": "signal.last", "pattern": "a"}, t)


@pytest.mark.parametrize("kind", ["signal.first", "signal.last"])
def test_first_and_last_fail_when_nothing_matches(kind: str) -> None:
    result = fails({"type": kind, "pattern": "x:*", "payload": {"a": 1}}, trace("a"))
    assert "no signal matches 'x:*'" in result.message


def test_not_with_payload_only_rejects_carriers() -> None:
    t = trace(("agent:error", {"agent": "fixer"}))
    passes({"type": "signal.not", "pattern": "agent:error", "payload": {"agent": "reviewer"}}, t)
    fails({"type": "signal.not", "pattern": "agent:error", "payload": {"agent": "fixer"}}, t)


# -- trajectory properties against independent references ------------------------------------

TRAJECTORY_PROPS = settings(max_examples=80, deadline=None)
events = st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 2)), max_size=12)
steps = st.lists(
    st.tuples(st.sampled_from("abc"), st.one_of(st.none(), st.integers(0, 2))), max_size=4
)


def step_ok(event: tuple[str, int], step: tuple[str, int | None]) -> bool:
    return event[0] == step[0] and (step[1] is None or event[1] == step[1])


def is_subsequence(seq: list[tuple[str, int]], want: list[tuple[str, int | None]]) -> bool:
    if not want:
        return True
    return any(
        step_ok(seq[i], want[0]) and is_subsequence(seq[i + 1 :], want[1:]) for i in range(len(seq))
    )


def has_contiguous_run(seq: list[tuple[str, int]], want: list[tuple[str, int | None]]) -> bool:
    return not want or any(
        all(step_ok(seq[i + k], w) for k, w in enumerate(want))
        for i in range(len(seq) - len(want) + 1)
    )


def as_steps(want: list[tuple[str, int | None]]) -> list[object]:
    return [name if v is None else {"pattern": name, "payload": {"v": v}} for name, v in want]


@TRAJECTORY_PROPS
@given(events, steps)
def test_trajectory_agrees_with_subsequence_reference(seq: list, want: list) -> None:
    t = trace(*[(name, {"v": v}) for name, v in seq])
    result = check({"type": "signal.trajectory", "patterns": as_steps(want)}, t)
    assert result.passed == is_subsequence(seq, want)


@TRAJECTORY_PROPS
@given(events, steps)
def test_strict_trajectory_agrees_with_contiguous_reference(seq: list, want: list) -> None:
    t = trace(*[(name, {"v": v}) for name, v in seq])
    result = check({"type": "signal.trajectory", "patterns": as_steps(want), "strict": True}, t)
    assert result.passed == has_contiguous_run(seq, want)


@TRAJECTORY_PROPS
@given(
    st.lists(st.sampled_from(["Read", "Edit", "Bash"]), max_size=8),
    st.lists(st.sampled_from(["Read", "Edit", "Bash"]), max_size=4),
)
def test_tool_sequence_agrees_with_subsequence_reference(calls: list[str], want: list[str]) -> None:
    t = trace(*[("tool:call", {"id": str(i), "name": n, "input": {}}) for i, n in enumerate(calls)])
    result = check({"type": "tool.sequence", "tools": want}, t)
    assert result.passed == is_subsequence([(c, 0) for c in calls], [(w, None) for w in want])
