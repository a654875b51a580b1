"""snapshot.at / snapshot.final: state mid-run and at the end."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import fails, passes, review_trace, trace

from signal_eval_cli import Trace


def analysis_trace() -> Trace:
    return trace(
        ("harness:start", {"state": {"analysis": {"confidence": 0.1}, "files": []}}),
        ("analysis:start", {}),
        (
            "state:analysis.confidence:changed",
            {"key": "analysis", "path": "analysis.confidence", "oldValue": 0.1, "newValue": 0.8},
        ),
        ("analysis:complete", {"n": 1}),
        (
            "state:files:changed",
            {"key": "files", "oldValue": [], "newValue": [{"path": "a.py"}, {"path": "b.py"}]},
        ),
        ("analysis:complete", {"n": 2}),
        (
            "state:analysis.confidence:changed",
            {"path": "analysis.confidence", "oldValue": 0.8, "newValue": 0.3},
        ),
        (
            "state:batch:changed",
            {"newValue": [{"path": "result.passed", "newValue": True}]},
        ),
        "harness:end",
    )


# -- snapshot.at ---------------------------------------------------------------------


def test_seed_example_state_right_after_first_matching_signal() -> None:
    t = analysis_trace()
    at = {"type": "snapshot.at", "afterSignal": "analysis:complete", "path": "analysis.confidence"}
    result = passes({**at, "value": {"gte": 0.7}}, t)
    assert result.actual == 0.8
    assert "after #3 'analysis:complete'" in result.message
    # uses the FIRST analysis:complete (#3), not the later one where files exist
    fails({**at, "path": "files[0].path", "value": "a.py"}, t)


def test_snapshot_at_state_before_any_change_is_initial_state() -> None:
    t = analysis_trace()
    at = {"type": "snapshot.at", "afterSignal": "analysis:start", "path": "analysis.confidence"}
    passes({**at, "value": 0.1}, t)
    result = fails({**at, "value": {"gte": 0.7}}, t)
    assert "'analysis.confidence' is 0.1 after #1 'analysis:start'" in result.message
    assert '"gte": 0.7' in result.message


def test_snapshot_at_includes_the_signal_itself_when_it_is_a_change() -> None:
    t = analysis_trace()
    passes(
        {
            "type": "snapshot.at",
            "afterSignal": "state:files:changed",
            "path": "files[1].path",
            "value": {"endsWith": ".py"},
        },
        t,
    )


def test_snapshot_at_glob_and_batch_changes() -> None:
    t = analysis_trace()
    at = {"type": "snapshot.at", "afterSignal": "state:batch:*", "path": "result.passed"}
    passes({**at, "value": True}, t)
    fails({**at, "value": 1}, t)  # booleans never equal numbers
    passes({**at, "path": "analysis.confidence", "value": {"lt": 0.5}}, t)


def test_snapshot_at_fails_when_signal_never_fires() -> None:
    t = analysis_trace()
    base = {"type": "snapshot.at", "afterSignal": "deploy:done", "path": "analysis"}
    for extra in ({}, {"value": 1}, {"exists": True}, {"exists": False}):
        result = fails({**base, **extra}, t)
        assert "'deploy:done' never fired" in result.message


@pytest.mark.parametrize(
    ("path", "exists", "ok"),
    [
        ("analysis", True, True),
        ("analysis", False, False),
        ("analysis.missing", True, False),
        ("analysis.missing", False, True),
        ("files[0]", False, True),  # files is still [] after the first analysis:complete
    ],
)
def test_snapshot_at_exists(path: str, exists: bool, ok: bool) -> None:
    assertion = {
        "type": "snapshot.at",
        "afterSignal": "analysis:complete",
        "path": path,
        "exists": exists,
    }
    if ok:
        passes(assertion, analysis_trace())
    else:
        result = fails(assertion, analysis_trace())
        assert path in result.message


def test_snapshot_at_path_only_means_exists() -> None:
    t = analysis_trace()
    passes({"type": "snapshot.at", "afterSignal": "harness:start", "path": "files"}, t)
    result = fails({"type": "snapshot.at", "afterSignal": "harness:start", "path": "nope"}, t)
    assert "'nope' does not exist after #0 'harness:start'" in result.message


# -- snapshot.final --------------------------------------------------------------------


def test_snapshot_final_from_changes() -> None:
    t = analysis_trace()
    final = {"type": "snapshot.final"}
    passes({**final, "path": "result.passed", "value": True}, t)
    passes({**final, "path": "analysis.confidence", "value": 0.3}, t)
    passes({**final, "path": "files", "value": [{"path": "a.py"}, {"path": {"matches": "b"}}]}, t)
    fails({**final, "path": "files", "value": [{"path": "a.py"}]}, t)  # equal length
    result = fails({**final, "path": "result.passed", "value": False}, t)
    assert "in the final state" in result.message
    assert "expected false" in result.message


def test_snapshot_final_prefers_harness_end_state() -> None:
    t = trace(
        ("state:x:changed", {"key": "x", "newValue": 1}),
        ("harness:end", {"state": {"result": {"passed": True}}}),
        input={},
    )
    passes({"type": "snapshot.final", "path": "result.passed", "value": True}, t)
    passes({"type": "snapshot.final", "path": "x", "exists": False}, t)


def test_snapshot_final_initial_state_from_input() -> None:
    t = trace("a", input={"user": {"name": "ada"}})
    passes({"type": "snapshot.final", "path": "user.name", "value": {"startsWith": "a"}}, t)
    fails({"type": "snapshot.final", "path": "user.age", "exists": True}, t)
    passes({"type": "snapshot.final", "path": "user.age", "exists": False}, t)


def test_snapshot_missing_key_never_equals_null() -> None:
    t = trace("a", input={"present": None})
    passes({"type": "snapshot.final", "path": "present", "value": None}, t)
    passes({"type": "snapshot.final", "path": "present", "exists": True}, t)
    result = fails({"type": "snapshot.final", "path": "absent", "value": None}, t)
    assert "does not exist" in result.message


def test_snapshot_final_on_review_trace() -> None:
    passes(
        {"type": "snapshot.final", "path": "analysis", "value": {"confidence": {"gte": 0.9}}},
        review_trace(),
    )


STATE = {
    "score": 0.8,
    "n": 3,
    "title": "SQL injection",
    "tags": ["sql", "xss"],
    "flag": True,
    "zero": 0,
}

# (path, passing value, failing value): every matcher through snapshot.final
SNAPSHOT_MATCHERS: list[tuple[str, Any, Any]] = [
    ("score", {"gte": 0.8}, {"gte": 0.9}),
    ("score", {"lte": 0.8}, {"lte": 0.7}),
    ("n", {"gt": 2}, {"gt": 3}),
    ("n", {"lt": 4}, {"lt": 3}),
    ("score", {"between": [0.8, 1]}, {"between": [0, 0.79]}),
    ("title", {"contains": "inj"}, {"contains": "xss"}),
    ("tags", {"contains": "xss"}, {"contains": "x"}),
    ("title", {"startsWith": "SQL"}, {"startsWith": "sql"}),
    ("title", {"endsWith": "tion"}, {"endsWith": "SQL"}),
    ("title", {"matches": "^SQL\\s"}, {"matches": "^inj"}),
    ("flag", True, 1),
    ("zero", 0, False),
    ("flag", True, {"gte": 1}),
    ("tags", ["sql", {"startsWith": "x"}], ["sql"]),
]


@pytest.mark.parametrize(("path", "good", "bad"), SNAPSHOT_MATCHERS)
def test_snapshot_matchers(path: str, good: Any, bad: Any) -> None:
    t = trace("x", input=STATE)
    passes({"type": "snapshot.final", "path": path, "value": good}, t)
    fails({"type": "snapshot.final", "path": path, "value": bad}, t)
    passes({"type": "snapshot.at", "afterSignal": "x", "path": path, "value": good}, t)
    fails({"type": "snapshot.at", "afterSignal": "x", "path": path, "value": bad}, t)
