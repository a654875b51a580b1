"""all / any / not, llm.judge, the registry and the evaluation API."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import check, fails, passes, review_trace, trace

from signal_eval_cli import (
    AssertionResult,
    EvalContext,
    EvalError,
    InvalidAssertion,
    JudgeRequest,
    JudgeVerdict,
    Trace,
    UnknownAssertionType,
    evaluate_assertion,
    evaluate_assertions,
    known_types,
    read_jsonl,
)

YES = {"type": "output.contains", "text": "SQL injection"}
NO = {"type": "output.contains", "text": "XSS"}
YES2 = {"type": "metric.cost.max", "value": 0.10}
NO2 = {"type": "tool.called", "name": "Grep"}

# -- all / any / not --------------------------------------------------------------------


def test_all(review: Trace) -> None:
    result = passes({"type": "all", "assertions": [YES, YES2]}, review)
    assert result.children is not None and len(result.children) == 2
    passes({"type": "all", "assertions": []}, review)
    failed = fails({"type": "all", "assertions": [YES, NO, NO2]}, review)
    assert failed.message.startswith("2 of 3 failed")
    assert "output.contains: 'XSS' not found" in failed.message
    assert "tool.called" in failed.message
    assert failed.children is not None and [c.passed for c in failed.children] == [
        True,
        False,
        False,
    ]


def test_any(review: Trace) -> None:
    result = passes({"type": "any", "assertions": [NO, YES2]}, review)
    assert result.message.startswith("metric.cost.max passed")
    first = passes({"type": "any", "assertions": [NO, YES, YES2]}, review)
    assert first.children is not None  # the first that passed speaks for the rest
    assert first.message == f"output.contains passed: {first.children[1].message}"
    failed = fails({"type": "any", "assertions": [NO, NO2]}, review)
    assert "none of 2 passed" in failed.message
    assert "'XSS' not found" in failed.message and "Grep" in failed.message
    fails({"type": "any", "assertions": []}, review)  # nothing passed


def test_not(review: Trace) -> None:
    result = passes({"type": "not", "assertion": NO}, review)
    assert "failed, as required" in result.message
    failed = fails({"type": "not", "assertion": YES}, review)
    assert "passed, but must not" in failed.message
    assert "output contains 'SQL injection'" in failed.message


def test_nested_composition(review: Trace) -> None:
    nested = {
        "type": "all",
        "assertions": [
            {"type": "any", "assertions": [NO, {"type": "not", "assertion": NO2}]},
            {"type": "not", "assertion": {"type": "all", "assertions": [YES, NO]}},
            {"type": "signal.trajectory", "patterns": ["harness:start", "harness:end"]},
        ],
    }
    passes(nested, review)
    nested["assertions"].append({"type": "not", "assertion": {"type": "any", "assertions": [YES]}})
    fails(nested, review)


def test_seed_composition_examples(review: Trace) -> None:
    passes(
        {
            "type": "all",
            "assertions": [
                {"type": "output.contains", "text": "injection"},
                {"type": "metric.cost.max", "value": 0.10},
            ],
        },
        review,
    )
    passes(
        {
            "type": "any",
            "assertions": [
                {"type": "output.contains", "text": "injection"},
                {"type": "output.contains", "text": "XSS"},
            ],
        },
        review,
    )


# -- llm.judge ---------------------------------------------------------------------------

JUDGE = {"type": "llm.judge", "criteria": ["accuracy", "clarity"], "minScore": 0.7}


@dataclass
class ScriptedJudge:
    scores: dict[str, float]
    reasons: dict[str, str] = field(default_factory=dict)
    requests: list[JudgeRequest] = field(default_factory=list)

    def judge(self, request: JudgeRequest) -> JudgeVerdict:
        self.requests.append(request)
        return JudgeVerdict(dict(self.scores), dict(self.reasons))


class BrokenJudge:
    def judge(self, request: JudgeRequest) -> JudgeVerdict:
        raise TimeoutError("model did not answer in 30 s")


def test_judge_without_model_never_passes(review: Trace) -> None:
    result = fails(JUDGE, review)
    assert "no judge model configured" in result.message
    fails({**JUDGE, "minScore": 0}, review)


def test_judge_passes_at_or_above_min_score(review: Trace) -> None:
    judge = ScriptedJudge({"accuracy": 0.9, "clarity": 0.5}, {"clarity": "terse"})
    result = passes(JUDGE, review, judge=judge)  # mean 0.7 ≥ 0.7
    assert result.actual == pytest.approx(0.7)
    assert "terse" in result.message
    (request,) = judge.requests
    assert request.criteria == ["accuracy", "clarity"]
    assert request.output == "Found a SQL injection; fixed it."
    assert request.trajectory is None


def test_judge_fails_below_min_score(review: Trace) -> None:
    judge = ScriptedJudge({"accuracy": 0.6, "clarity": 0.7})
    result = fails(JUDGE, review, judge=judge)
    assert "0.65 < 0.70" in result.message
    assert result.actual == pytest.approx(0.65)


def test_judge_that_raises_fails_with_the_error(review: Trace) -> None:
    result = fails(JUDGE, review, judge=BrokenJudge())
    assert "TimeoutError" in result.message
    assert "model did not answer in 30 s" in result.message


def test_judge_missing_a_criterion_fails(review: Trace) -> None:
    result = fails(JUDGE, review, judge=ScriptedJudge({"accuracy": 1.0}))
    assert "no score for: clarity" in result.message


def test_judge_request_carries_rubric_model_and_trajectory(review: Trace) -> None:
    judge = ScriptedJudge({"accuracy": 1.0, "clarity": 1.0})
    ctx = EvalContext(review, judge=judge, judge_model="default-model")
    evaluate_assertion(
        {**JUDGE, "rubric": "Be strict", "temperature": 0.2, "includeTrajectory": True}, ctx
    )
    evaluate_assertion({**JUDGE, "model": "other-model"}, ctx)
    first, second = judge.requests
    assert first.rubric == "Be strict" and first.temperature == 0.2
    assert first.model == "default-model"
    assert first.trajectory is not None and "#0 harness:start" in first.trajectory
    assert "text:delta" not in first.trajectory
    assert second.model == "other-model"


# -- registry and evaluation API -----------------------------------------------------------

ALL_TYPES = {
    "signal.contains",
    "signal.not",
    "signal.count",
    "signal.trajectory",
    "signal.first",
    "signal.last",
    "snapshot.at",
    "snapshot.final",
    "agent.activated",
    "agent.completed",
    "agent.causedBy",
    "agent.emitted",
    "agent.skipped",
    "metric.latency.max",
    "metric.latency.min",
    "metric.cost.max",
    "metric.cost.min",
    "metric.tokens.max",
    "metric.tokens.min",
    "metric.activations",
    "output.contains",
    "output.notContains",
    "output.matches",
    "output.json",
    "output.length",
    "tool.called",
    "tool.notCalled",
    "tool.calledWith",
    "tool.sequence",
    "llm.judge",
    "all",
    "any",
    "not",
}


def test_every_seed_type_is_registered() -> None:
    assert set(known_types()) >= ALL_TYPES


@pytest.mark.parametrize(
    ("typo", "suggestion"),
    [
        ("signal.contain", "signal.contains"),
        ("signal.trajectroy", "signal.trajectory"),
        ("snapshot.After", None),
        ("tool.caled", "tool.called"),
        ("metric.latency", "metric.latency.max"),
    ],
)
def test_unknown_type_raises_with_closest_match(typo: str, suggestion: str | None) -> None:
    with pytest.raises(UnknownAssertionType) as caught:
        evaluate_assertion({"type": typo, "pattern": "x"}, trace("x"))
    error = caught.value
    message = str(error)
    assert repr(typo) in message
    assert "known types:" in message
    for name in ALL_TYPES:
        assert name in message
    if suggestion is not None:
        assert error.suggestion == suggestion
        assert f"did you mean '{suggestion}'" in message


def test_unknown_type_is_never_a_silent_pass() -> None:
    for bad in ({}, {"type": None}, {"type": 3}, {"type": ""}):
        with pytest.raises(UnknownAssertionType):
            evaluate_assertion(bad, trace("x"))
    with pytest.raises(UnknownAssertionType, match=r"did you mean 'signal\.contains'"):
        evaluate_assertion(
            {"type": "all", "assertions": [{"type": "signal.contain", "pattern": "x"}]},
            trace("x"),
        )


def test_evaluate_assertions_returns_one_result_per_assertion(review: Trace) -> None:
    results = evaluate_assertions([YES, NO, YES2], review)
    assert [r.passed for r in results] == [True, False, True]
    assert all(isinstance(r, AssertionResult) for r in results)
    assert results[1].assertion == NO
    assert all(r.evaluation_ms >= 0 for r in results)


def test_a_plain_list_of_signals_is_evaluated_like_a_trace(review: Trace) -> None:
    """Seed 002's ``evaluateAssertion(assertion, signals)`` form: dicts or Signal objects."""
    as_dicts = [s.to_dict() for s in review]
    for signals in (as_dicts, list(review), iter(list(review))):
        assert evaluate_assertion(YES, signals).passed
    assert not evaluate_assertion(NO, as_dicts).passed
    assert [r.passed for r in evaluate_assertions([YES, NO], as_dicts)] == [True, False]


def test_assertion_may_be_a_typed_object(review: Trace) -> None:
    @dataclass
    class OutputContains:
        text: str
        type: str = "output.contains"
        caseSensitive: bool | None = None  # the schema's field name

    assert evaluate_assertion(OutputContains("SQL"), review).passed
    assert not evaluate_assertion(OutputContains("XSS"), review).passed


def test_result_to_dict_round_trip(review: Trace) -> None:
    result = check({"type": "all", "assertions": [YES, NO]}, review)
    data = result.to_dict()
    assert data["passed"] is False and len(data["children"]) == 2
    assert AssertionResult.from_dict(data).to_dict() == data
    trajectory = check({"type": "signal.trajectory", "patterns": ["harness:start"]}, review)
    assert trajectory.to_dict()["trajectory"] == ["harness:start"]


def test_results_do_not_depend_on_evaluation_order() -> None:
    t = review_trace()
    batch = [
        {"type": "signal.count", "pattern": "tool:*", "exact": 5},
        {"type": "snapshot.final", "path": "analysis.confidence", "value": 0.9},
        {"type": "metric.tokens.max", "value": 200},
        {"type": "tool.sequence", "tools": ["Read", "Edit"]},
    ]
    forward = [r.passed for r in evaluate_assertions(batch, t)]
    backward = [r.passed for r in evaluate_assertions(batch[::-1], review_trace())][::-1]
    assert forward == backward == [True, True, True, True]


@pytest.mark.parametrize(
    ("assertion", "message"),
    [
        ({"type": "signal.contains"}, "invalid signal.contains assertion: missing field 'pattern'"),
        ({"type": "output.matches", "regex": "(open"}, "invalid output.matches assertion: "),
        (
            {"type": "snapshot.final", "path": "", "value": {"between": [1]}},
            "invalid snapshot.final assertion: 'between' needs [min, max] numbers, got [1]",
        ),
        (
            {"type": "not", "assertion": {"type": "signal.contains"}},
            "invalid signal.contains assertion: missing field 'pattern'",
        ),
    ],
)
def test_malformed_assertion_through_the_api_raises_the_packages_error(
    assertion: dict[str, object], message: str
) -> None:
    """Datasets are validated at load time; a hand-built malformed dict raises our own
    error (never IndexError from ``between: [1]``), naming the problem."""
    with pytest.raises(InvalidAssertion) as raised:
        evaluate_assertion(assertion, trace("x"))
    assert str(raised.value).startswith(message)
    assert isinstance(raised.value, EvalError)


def test_jsonl_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"name": "harness:start"}\n')
    assert [s.name for s in read_jsonl(path)] == ["harness:start"]


@pytest.mark.parametrize(
    "inner",
    [
        {"type": "llm.judge", "criteria": ["is rude"], "minScore": 0.5},  # no judge configured
        {"type": "file-exists", "path": "x.txt"},  # no workspace outside a scenario
        {"type": "all", "assertions": [{"type": "llm.judge", "criteria": ["x"], "minScore": 1}]},
    ],
)
def test_not_never_turns_an_evaluation_error_into_a_pass(inner: dict[str, object]) -> None:
    result = evaluate_assertion({"type": "not", "assertion": inner}, trace("x"))
    assert not result.passed and result.errored
    assert result.message.startswith("cannot negate")
    assert result.to_dict()["errored"] is True


def test_not_still_negates_an_ordinary_failure() -> None:
    result = evaluate_assertion(
        {"type": "not", "assertion": {"type": "signal.contains", "pattern": "y"}}, trace("x")
    )
    assert result.passed and not result.errored and "errored" not in result.to_dict()
