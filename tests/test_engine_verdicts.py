"""Verdicts, ``errored`` flags, expected/actual values and the exact messages users read,
for every assertion type (issue 19): a wrong verdict or a garbled message fails here."""

from __future__ import annotations

import dataclasses
import enum
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from conftest import TURNS as SHARED_TURNS
from conftest import sig, trace

from signal_eval_cli import (
    EvalContext,
    InputError,
    InvalidAssertion,
    JudgeRequest,
    JudgeVerdict,
    Problem,
    evaluate_assertion,
    known_types,
    read_jsonl,
)
from signal_eval_cli.assertions import AssertionResult, Outcome, assertion
from signal_eval_cli.assertions.helpers import PREVIEW_ITEMS, bounds, short
from signal_eval_cli.assertions.judge import render_trajectory
from signal_eval_cli.assertions.outcome import VALUE_LIMIT, capped
from signal_eval_cli.assertions.signal import trajectory_pins
from signal_eval_cli.jsjson import js_number, js_stringify
from signal_eval_cli.patterns import matcher_problems, pattern_problems, values_equal
from signal_eval_cli.regex_budget import REGEX_BUDGET_MS
from signal_eval_cli.signals import new_signal_id, now_iso

RUN = [
    ("harness:start", {"state": {"n": 0}}),
    ("agent:activated", {"agent": "rev", "trigger": "harness:start"}),
    ("tool:call", {"id": "t1", "name": "Read", "input": {"path": "a.py"}}),
    ("tool:result", {"id": "t1", "result": "ok"}),
    ("tool:call", {"id": "t2", "name": "Edit", "input": {"path": "a.py", "n": 2}}),
    ("state:n:changed", {"newValue": 1}),
    ("review:done", {"score": 3}, "rev"),
    ("provider:end", {"usage": {"inputTokens": 10, "outputTokens": 5}, "cost": 0.5}),
    ("agent:skipped", {"agent": "fix", "reason": "clean"}),
    ("text:complete", {"content": "Straße: ok"}),
    ("harness:end", {"durationMs": 120, "state": {"n": 1}}),
]


VERDICTS: list[tuple[dict[str, Any], bool, bool, Any, Any, str]] = [
    (
        {"type": "agent.activated", "agentId": "rev"},
        True,
        False,
        "at least 1",
        1,
        "activations of 'rev': 1 (at least 1)",
    ),
    (
        {"type": "agent.activated", "agentId": "rev", "min": 2},
        False,
        False,
        "at least 2",
        1,
        "expected at least 2 activations of 'rev', found 1",
    ),
    (
        {"type": "agent.causedBy", "agentId": "rev", "triggerPattern": "harness:*"},
        True,
        False,
        "harness:*",
        ["harness:start"],
        "agent 'rev' was triggered by 'harness:*'",
    ),
    (
        {"type": "agent.causedBy", "agentId": "rev", "triggerPattern": "tool:*"},
        False,
        False,
        "tool:*",
        ["harness:start"],
        "no activation of 'rev' was triggered by 'tool:*'; triggers: harness:start",
    ),
    (
        {"type": "agent.causedBy", "agentId": "nobody", "triggerPattern": "tool:*"},
        False,
        False,
        "tool:*",
        None,
        "agent 'nobody' never activated",
    ),
    (
        {"type": "agent.completed", "agentId": "rev"},
        True,
        False,
        None,
        None,
        "agent 'rev' activated and raised no error",
    ),
    (
        {"type": "agent.completed", "agentId": "nobody"},
        False,
        False,
        None,
        None,
        "agent 'nobody' never activated",
    ),
    (
        {"type": "agent.emitted", "agentId": "rev", "signal": "review:*"},
        True,
        False,
        None,
        None,
        "agent 'rev' emitted 'review:*'",
    ),
    (
        {"type": "agent.emitted", "agentId": "rev", "signal": "tool:*"},
        False,
        False,
        "tool:*",
        None,
        "agent 'rev' never emitted 'tool:*'; it emitted: review:done",
    ),
    (
        {"type": "agent.skipped", "agentId": "fix"},
        True,
        False,
        None,
        ["clean"],
        "agent 'fix' was skipped (clean)",
    ),
    (
        {"type": "agent.skipped", "agentId": "fix", "reason": "other"},
        False,
        False,
        "other",
        ["clean"],
        "agent 'fix' was skipped but not for reason 'other'; reasons: ['clean']",
    ),
    (
        {"type": "agent.skipped", "agentId": "rev"},
        False,
        False,
        None,
        None,
        "agent 'rev' was never skipped",
    ),
    (
        {
            "type": "all",
            "assertions": [
                {"type": "signal.contains", "pattern": "tool:call"},
                {"type": "signal.contains", "pattern": "nope"},
            ],
        },
        False,
        False,
        None,
        None,
        "1 of 2 failed — signal.contains: no signal matches 'nope'",
    ),
    (
        {"type": "all", "assertions": [{"type": "signal.contains", "pattern": "tool:call"}]},
        True,
        False,
        None,
        None,
        "all 1 passed",
    ),
    (
        {
            "type": "any",
            "assertions": [
                {"type": "signal.contains", "pattern": "nope"},
                {"type": "signal.contains", "pattern": "tool:call"},
            ],
        },
        True,
        False,
        None,
        None,
        "signal.contains passed: found 'tool:call' at #2",
    ),
    (
        {"type": "any", "assertions": [{"type": "signal.contains", "pattern": "nope"}]},
        False,
        False,
        None,
        None,
        "none of 1 passed — signal.contains: no signal matches 'nope'",
    ),
    (
        {"type": "not", "assertion": {"type": "signal.contains", "pattern": "nope"}},
        True,
        False,
        None,
        None,
        "signal.contains failed, as required: no signal matches 'nope'",
    ),
    (
        {"type": "not", "assertion": {"type": "signal.contains", "pattern": "tool:call"}},
        False,
        False,
        None,
        None,
        "signal.contains passed, but must not: found 'tool:call' at #2",
    ),
    (
        {"type": "not", "assertion": {"type": "llm.judge", "criteria": ["x"], "minScore": 0.5}},
        False,
        True,
        None,
        None,
        "cannot negate llm.judge: it could not be evaluated: no judge model configured (pass --judge-model or set SIGNAL_EVAL_JUDGE_MODEL)",
    ),
    (
        {"type": "file-exists", "path": "a.txt"},
        False,
        True,
        None,
        None,
        "file-exists needs a scenario workspace: it only runs inside a scenario",
    ),
    (
        {"type": "file-contains", "path": "a.txt", "includes": "x", "scope": "repo"},
        False,
        True,
        None,
        None,
        "file-contains needs a --root directory: it only runs inside a scenario",
    ),
    (
        {"type": "llm.judge", "criteria": ["x"], "minScore": 0.5},
        False,
        True,
        0.5,
        None,
        "no judge model configured (pass --judge-model or set SIGNAL_EVAL_JUDGE_MODEL)",
    ),
    ({"type": "metric.cost.max", "value": 1}, True, False, 1, 0.5, "cost 0.5 USD is ≤ 1 USD"),
    (
        {"type": "metric.cost.max", "value": 0.1},
        False,
        False,
        0.1,
        0.5,
        "cost 0.5 USD is not ≤ 0.1 USD",
    ),
    ({"type": "metric.cost.min", "value": 0.5}, True, False, 0.5, 0.5, "cost 0.5 USD is ≥ 0.5 USD"),
    (
        {"type": "metric.latency.max", "value": 100},
        False,
        False,
        100,
        120.0,
        "latency 120 ms is not ≤ 100 ms",
    ),
    (
        {"type": "metric.latency.min", "value": 100},
        True,
        False,
        100,
        120.0,
        "latency 120 ms is ≥ 100 ms",
    ),
    ({"type": "metric.tokens.max", "value": 15}, True, False, 15, 15, "tokens 15 is ≤ 15"),
    (
        {"type": "metric.tokens.max", "value": 9, "field": "input"},
        False,
        False,
        9,
        10,
        "tokens 10 is not ≤ 9",
    ),
    (
        {"type": "metric.tokens.min", "value": 6, "field": "output"},
        False,
        False,
        6,
        5,
        "tokens 5 is not ≥ 6",
    ),
    (
        {"type": "metric.activations", "exact": 1},
        True,
        False,
        "exactly 1",
        1,
        "agent activations: 1 (exactly 1)",
    ),
    (
        {"type": "metric.activations", "min": 2},
        False,
        False,
        "at least 2",
        1,
        "expected at least 2 agent activations, found 1",
    ),
    (
        {"type": "output.contains", "text": "straße", "caseSensitive": False},
        True,
        False,
        "straße",
        None,
        "output contains 'straße'",
    ),
    (
        {"type": "output.contains", "text": "XSS"},
        False,
        False,
        "XSS",
        "Straße: ok",
        "'XSS' not found in output (10 chars): \"Straße: ok\"",
    ),
    (
        {"type": "output.notContains", "text": "XSS"},
        True,
        False,
        "XSS",
        None,
        "output does not contain 'XSS'",
    ),
    (
        {"type": "output.notContains", "text": "ok"},
        False,
        False,
        "ok",
        "Straße: ok",
        "'ok' found in output (10 chars): \"Straße: ok\"",
    ),
    ({"type": "output.matches", "regex": "o(k)"}, True, False, "o(k)", "ok", "/o(k)/ matched 'ok'"),
    (
        {"type": "output.matches", "regex": "^ok", "flags": "m"},
        False,
        False,
        "^ok",
        "Straße: ok",
        '/^ok/m did not match output (10 chars): "Straße: ok"',
    ),
    (
        {"type": "output.json"},
        False,
        False,
        None,
        "Straße: ok",
        'output is not JSON (Expecting value at line 1 col 1): "Straße: ok"',
    ),
    (
        {"type": "output.length", "min": 10},
        True,
        False,
        "at least 10",
        10,
        "output length 10 is at least 10",
    ),
    (
        {"type": "output.length", "max": 5},
        False,
        False,
        "at most 5",
        10,
        "output length 10 is not at most 5",
    ),
    (
        {"type": "output.length", "min": 1, "max": 10},
        True,
        False,
        "between 1 and 10",
        10,
        "output length 10 is between 1 and 10",
    ),
    (
        {"type": "signal.contains", "pattern": "tool:*", "payload": {"name": "Edit"}},
        True,
        False,
        None,
        4,
        "found 'tool:call' at #4",
    ),
    (
        {"type": "signal.contains", "pattern": "tool:call", "payload": {"name": "Bash"}},
        False,
        False,
        {"name": "Bash"},
        {"id": "t1", "name": "Read", "input": {"path": "a.py"}},
        '2 signal(s) match \'tool:call\' but none carries payload {"name": "Bash"}; first payload: {"id": "t1", "input": {"path": "a.py"}, "name": "Read"}',
    ),
    (
        {"type": "signal.contains", "pattern": "nope:*"},
        False,
        False,
        "nope:*",
        None,
        "no signal matches 'nope:*'",
    ),
    (
        {"type": "signal.not", "pattern": "nope"},
        True,
        False,
        None,
        None,
        "no signal matches 'nope'",
    ),
    (
        {"type": "signal.not", "pattern": "tool:*"},
        False,
        False,
        0,
        3,
        "'tool:call' at #2 matches 'tool:*' (3 in all; first matches: tool:call, tool:result, tool:call)",
    ),
    (
        {"type": "signal.not", "pattern": "tool:call", "payload": {"name": "Bash"}},
        True,
        False,
        None,
        None,
        'no signal matches \'tool:call\' with payload {"name": "Bash"}',
    ),
    (
        {"type": "signal.count", "pattern": "tool:*", "exact": 3},
        True,
        False,
        "exactly 3",
        3,
        "'tool:*' signals: 3 (exactly 3)",
    ),
    (
        {"type": "signal.count", "pattern": "tool:*", "max": 2},
        False,
        False,
        "at most 2",
        3,
        "expected at most 2 'tool:*' signals, found 3; first matches: tool:call, tool:result, tool:call",
    ),
    (
        {
            "type": "signal.count",
            "pattern": "tool:call",
            "payload": {"name": "Read"},
            "min": 1,
            "max": 1,
        },
        True,
        False,
        "exactly 1",
        1,
        "'tool:call' signals: 1 (exactly 1)",
    ),
    (
        {"type": "signal.count", "pattern": "nope"},
        True,
        False,
        "any number",
        0,
        "'nope' signals: 0 (any number)",
    ),
    (
        {"type": "signal.first", "pattern": "tool:call", "payload": {"name": "Read"}},
        True,
        False,
        None,
        {"id": "t1", "name": "Read", "input": {"path": "a.py"}},
        "first 'tool:call' is #2 'tool:call'",
    ),
    (
        {"type": "signal.first", "pattern": "tool:call", "payload": {"name": "Edit"}},
        False,
        False,
        {"name": "Edit"},
        {"id": "t1", "name": "Read", "input": {"path": "a.py"}},
        'first \'tool:call\' (#2 \'tool:call\') has payload {"id": "t1", "input": {"path": "a.py"}, "name": "Read"}, expected {"name": "Edit"}',
    ),
    (
        {"type": "signal.last", "pattern": "tool:call", "payload": {"name": "Edit"}},
        True,
        False,
        None,
        {"id": "t2", "name": "Edit", "input": {"path": "a.py", "n": 2}},
        "last 'tool:call' is #4 'tool:call'",
    ),
    (
        {"type": "signal.last", "pattern": "nope"},
        False,
        False,
        None,
        None,
        "no signal matches 'nope'",
    ),
    (
        {"type": "signal.trajectory", "patterns": ["harness:start", "tool:call", "harness:end"]},
        True,
        False,
        ["harness:start", "tool:call", "harness:end"],
        ["harness:start", "tool:call", "harness:end"],
        "all 3 steps matched in order at #0..#10",
    ),
    (
        {"type": "signal.trajectory", "patterns": ["tool:call", "harness:start"]},
        False,
        False,
        ["tool:call", "harness:start"],
        ["tool:call"],
        "matched 1 of 2 steps; step 2 'harness:start' not found after #2 'tool:call'",
    ),
    ({"type": "signal.trajectory", "patterns": []}, True, False, [], None, "empty trajectory"),
    (
        {"type": "signal.trajectory", "strict": True, "patterns": ["tool:call", "tool:result"]},
        True,
        False,
        ["tool:call", "tool:result"],
        ["tool:call", "tool:result"],
        "all 2 steps matched contiguous run at #2..#3",
    ),
    (
        {"type": "signal.trajectory", "strict": True, "patterns": ["tool:call", "state:*"]},
        False,
        False,
        ["tool:call", "state:*"],
        ["tool:call"],
        "matched 1 of 2 steps; step 2 'state:*' not found right after #2 'tool:call' (strict: no signal may come between)",
    ),
    (
        {"type": "signal.trajectory", "strict": True, "patterns": ["nope", "x"]},
        False,
        False,
        ["nope", "x"],
        [],
        "matched 0 of 2 steps; step 1 'nope' not found (no start of a contiguous run)",
    ),
    (
        {"type": "snapshot.at", "afterSignal": "state:n:changed", "path": "n", "value": 1},
        True,
        False,
        1,
        1,
        "'n' = 1 after #5 'state:n:changed'",
    ),
    (
        {"type": "snapshot.at", "afterSignal": "tool:call", "path": "n", "value": {"gte": 1}},
        False,
        False,
        {"gte": 1},
        0,
        "'n' is 0 after #2 'tool:call', expected {\"gte\": 1}",
    ),
    (
        {"type": "snapshot.at", "afterSignal": "nope", "path": "n"},
        False,
        False,
        "nope",
        None,
        "signal 'nope' never fired, so there is no state to inspect",
    ),
    (
        {"type": "snapshot.final", "path": "n"},
        True,
        False,
        True,
        1,
        "'n' exists in the final state",
    ),
    (
        {"type": "snapshot.final", "path": "m"},
        False,
        False,
        True,
        None,
        "'m' does not exist in the final state",
    ),
    (
        {"type": "snapshot.final", "path": "m", "exists": False},
        True,
        False,
        False,
        None,
        "'m' does not exist in the final state",
    ),
    (
        {"type": "snapshot.final", "path": "n", "exists": False},
        False,
        False,
        False,
        1,
        "'n' exists in the final state (1)",
    ),
    (
        {"type": "tool.called", "name": "Read"},
        True,
        False,
        "at least 1",
        1,
        "calls of tool 'Read': 1 (at least 1)",
    ),
    (
        {"type": "tool.called", "name": "Bash"},
        False,
        False,
        "at least 1",
        0,
        "expected at least 1 calls of tool 'Bash', found 0; first matches: Read, Edit",
    ),
    (
        {"type": "tool.called", "name": "Read", "max": 0},
        False,
        False,
        "at most 0",
        1,
        "expected at most 0 calls of tool 'Read', found 1; first matches: Read, Edit",
    ),
    (
        {"type": "tool.calledWith", "name": "Edit", "args": {"n": {"gt": 1}}},
        True,
        False,
        {"n": {"gt": 1}},
        {"path": "a.py", "n": 2},
        '\'Edit\' called with {"n": 2, "path": "a.py"}',
    ),
    (
        {"type": "tool.calledWith", "name": "Edit", "args": {"n": 3}},
        False,
        False,
        {"n": 3},
        [{"path": "a.py", "n": 2}],
        'no call of \'Edit\' matches {"n": 3}; 1 call(s), inputs: [{"n": 2, "path": "a.py"}]',
    ),
    (
        {"type": "tool.calledWith", "name": "Bash", "args": {}},
        False,
        False,
        {},
        None,
        "tool 'Bash' was never called",
    ),
    ({"type": "tool.notCalled", "name": "Bash"}, True, False, 0, 0, "tool 'Bash' was not called"),
    (
        {"type": "tool.notCalled", "name": "Read"},
        False,
        False,
        0,
        1,
        "tool 'Read' was called 1 time(s)",
    ),
    (
        {"type": "tool.sequence", "tools": ["Read", "Edit"]},
        True,
        False,
        ["Read", "Edit"],
        ["Read", "Edit"],
        "tools called in order: Read → Edit",
    ),
    (
        {"type": "tool.sequence", "tools": ["Edit", "Read"]},
        False,
        False,
        ["Edit", "Read"],
        ["Read", "Edit"],
        "matched 1 of 2 tools; 'Read' not called after 'Edit'; calls: [\"Read\", \"Edit\"]",
    ),
]


def pinned(result: AssertionResult) -> tuple[bool, bool, Any, Any, str]:
    return result.passed, result.errored, result.expected, result.actual, result.message


@pytest.mark.parametrize(
    ("assertion", "passed", "errored", "expected", "actual", "message"),
    VERDICTS,
    ids=[f"{i}-{case[0]['type']}" for i, case in enumerate(VERDICTS)],
)
def test_verdict_flag_values_and_message(
    assertion: dict[str, Any], passed: bool, errored: bool, expected: Any, actual: Any, message: str
) -> None:
    result = evaluate_assertion(assertion, trace(*RUN))
    assert pinned(result) == (passed, errored, expected, actual, message)
    assert result.to_dict().get("errored", False) is errored


def test_every_assertion_type_has_a_pinned_verdict() -> None:
    covered = {case[0]["type"] for case in [*VERDICTS, *LATER]}
    engine = {"agent.activated", "agent.causedBy", "agent.completed", "agent.emitted",
              "agent.handoff", "agent.skipped", "all", "any", "not", "diff-match",
              "file-contains", "file-exists", "llm.judge", "metric.activations",
              "metric.cost.max", "metric.cost.min", "metric.latency.max", "metric.latency.min",
              "metric.tokens.max", "metric.tokens.min", "output.contains", "output.json",
              "output.length", "output.matches", "output.notContains", "signal.contains",
              "signal.count", "signal.first", "signal.last", "signal.not", "signal.trajectory",
              "snapshot.at", "snapshot.final", "tests.count", "tests.pass", "tests.stillPass",
              "tool.called", "tool.calledWith", "tool.failed", "tool.notCalled",
              "tool.parallel", "tool.sequence"}  # fmt: skip
    assert engine == set(known_types())  # a new type is added here and pinned
    assert engine <= covered


MALFORMED: list[tuple[str, str | None]] = [
    ("agent.activated", "invalid agent.activated assertion: missing field 'agentId'"),
    ("agent.causedBy", "invalid agent.causedBy assertion: missing field 'agentId'"),
    ("agent.completed", "invalid agent.completed assertion: missing field 'agentId'"),
    ("agent.emitted", "invalid agent.emitted assertion: missing field 'agentId'"),
    ("agent.handoff", None),  # False 'expected at least 1 handoffs * → *, found 0'
    ("agent.skipped", "invalid agent.skipped assertion: missing field 'agentId'"),
    ("all", "invalid all assertion: missing field 'assertions'"),
    ("any", "invalid any assertion: missing field 'assertions'"),
    ("diff-match", "invalid diff-match assertion: missing field 'path'"),
    ("file-contains", "invalid file-contains assertion: missing field 'path'"),
    ("file-exists", "invalid file-exists assertion: missing field 'path'"),
    ("llm.judge", "invalid llm.judge assertion: missing field 'minScore'"),
    ("metric.activations", None),  # True 'agent activations: 1 (any number)'
    ("metric.cost.max", "invalid metric.cost.max assertion: missing field 'value'"),
    ("metric.cost.min", "invalid metric.cost.min assertion: missing field 'value'"),
    ("metric.latency.max", "invalid metric.latency.max assertion: missing field 'value'"),
    ("metric.latency.min", "invalid metric.latency.min assertion: missing field 'value'"),
    ("metric.tokens.max", "invalid metric.tokens.max assertion: missing field 'value'"),
    ("metric.tokens.min", "invalid metric.tokens.min assertion: missing field 'value'"),
    ("not", "invalid not assertion: missing field 'assertion'"),
    ("output.contains", "invalid output.contains assertion: missing field 'text'"),
    (
        "output.json",
        None,
    ),  # False 'output is not JSON (Expecting value at line 1 col 1): "Straße: ok"'
    ("output.length", None),  # True 'output length 10 is any number'
    ("output.matches", "invalid output.matches assertion: missing field 'regex'"),
    ("output.notContains", "invalid output.notContains assertion: missing field 'text'"),
    ("signal.contains", "invalid signal.contains assertion: missing field 'pattern'"),
    ("signal.count", "invalid signal.count assertion: missing field 'pattern'"),
    ("signal.first", "invalid signal.first assertion: missing field 'pattern'"),
    ("signal.last", "invalid signal.last assertion: missing field 'pattern'"),
    ("signal.not", "invalid signal.not assertion: missing field 'pattern'"),
    ("signal.trajectory", "invalid signal.trajectory assertion: missing field 'patterns'"),
    ("snapshot.at", "invalid snapshot.at assertion: missing field 'afterSignal'"),
    ("snapshot.final", "invalid snapshot.final assertion: missing field 'path'"),
    ("tests.count", None),  # errored: no test results (no report to count in)
    ("tests.pass", None),  # errored: no test results (ids is read once there are some)
    ("tests.stillPass", None),  # the same
    ("tool.called", "invalid tool.called assertion: missing field 'name'"),
    ("tool.calledWith", "invalid tool.calledWith assertion: missing field 'name'"),
    ("tool.failed", None),  # False 'expected at least 1 failed tool calls, found 0'
    ("tool.notCalled", "invalid tool.notCalled assertion: missing field 'name'"),
    ("tool.parallel", "invalid tool.parallel assertion: missing field 'tools'"),
    ("tool.sequence", "invalid tool.sequence assertion: missing field 'tools'"),
]


@pytest.mark.parametrize(("type_name", "message"), MALFORMED)
def test_an_assertion_missing_its_required_field_raises_naming_it(
    type_name: str, message: str | None
) -> None:
    if message is None:  # every field optional: it evaluates
        assert isinstance(evaluate_assertion({"type": type_name}, trace(*RUN)), AssertionResult)
        return
    with pytest.raises(InvalidAssertion) as raised:
        evaluate_assertion({"type": type_name}, trace(*RUN))
    assert str(raised.value) == message


# -- the survivors of the first mutation run, one test each ----------------------------------


class PartialJudge:
    """Scores only the criteria it knows; the rest are missing from its verdict."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.requests: list[JudgeRequest] = []

    def judge(self, request: JudgeRequest) -> JudgeVerdict:
        self.requests.append(request)
        return JudgeVerdict(dict(self.scores), {c: "why" for c in self.scores})


def judged(assertion: dict[str, Any], judge: PartialJudge) -> AssertionResult:
    return evaluate_assertion(assertion, EvalContext(trace(*RUN), judge=judge))


def test_a_verdict_missing_a_criterion_is_an_evaluation_error() -> None:
    judge = PartialJudge({"clear": 1.0})
    a = {"type": "llm.judge", "criteria": ["clear", "kind", "brief"], "minScore": 0.5}
    result = judged(a, judge)
    assert (result.passed, result.errored) == (False, True)
    assert (result.expected, result.actual) == (0.5, {"clear": 1.0})
    assert result.message == "judge gave no score for: kind, brief"
    negated = judged({"type": "not", "assertion": a}, judge)
    assert (negated.passed, negated.errored) == (False, True)


def test_a_judge_verdict_passes_at_the_minimum_and_fails_below() -> None:
    a = {"type": "llm.judge", "criteria": ["clear", "kind"], "minScore": 0.75}
    result = judged(a, PartialJudge({"clear": 1.0, "kind": 0.5}))
    assert (result.passed, result.errored, result.expected, result.actual) == (
        True,
        False,
        0.75,
        0.75,
    )
    assert result.message == "judge score 0.75 ≥ 0.75 — clear: 1.00 (why); kind: 0.50 (why)"
    low = judged(a, PartialJudge({"clear": 1.0, "kind": 0.4}))
    assert (low.passed, low.errored, low.actual) == (False, False, 0.7)
    assert low.message == "judge score 0.70 < 0.75 — clear: 1.00 (why); kind: 0.40 (why)"


def test_a_judge_that_raises_fails_the_assertion_as_errored() -> None:
    class Broken:
        def judge(self, request: JudgeRequest) -> JudgeVerdict:
            raise RuntimeError("quota")

    a = {"type": "llm.judge", "criteria": ["x"], "minScore": 0.5}
    result = evaluate_assertion(a, EvalContext(trace(*RUN), judge=Broken()))
    assert (result.passed, result.errored, result.message) == (
        False,
        True,
        "judge failed: RuntimeError: quota",
    )


def test_the_judge_request_carries_output_criteria_and_trajectory_on_demand() -> None:
    judge = PartialJudge({"x": 1.0})
    judged({"type": "llm.judge", "criteria": ["x"], "minScore": 1, "rubric": "r"}, judge)
    judged(
        {"type": "llm.judge", "criteria": ["x"], "minScore": 1, "includeTrajectory": True}, judge
    )
    plain, with_trajectory = judge.requests
    assert (plain.output, plain.criteria, plain.rubric, plain.trajectory, plain.temperature) == (
        "Straße: ok",
        ["x"],
        "r",
        None,
        0.0,
    )
    assert with_trajectory.trajectory is not None
    assert with_trajectory.trajectory.splitlines()[:2] == ["#0 harness:start", "#1 agent:activated"]
    assert "#6 review:done [rev]" in with_trajectory.trajectory.splitlines()


def test_a_long_trajectory_for_the_judge_says_how_many_signals_it_left_out() -> None:
    t = trace(*[f"s:{i}" for i in range(8)], "text:delta", "end")
    assert render_trajectory(t, limit=3).splitlines() == [
        "#0 s:0",
        "#1 s:1",
        "#2 s:2",
        "… (7 more signals)",
    ]
    assert render_trajectory(t, limit=20).splitlines()[-1] == "#9 end"  # deltas skipped
    assert len(render_trajectory(t, limit=20).splitlines()) == 9
    long = render_trajectory(trace(*[f"s:{i}" for i in range(205)])).splitlines()
    assert (len(long), long[-2], long[-1]) == (201, "#199 s:199", "… (5 more signals)")


def test_file_assertions_in_a_workspace(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha beta\n")
    (tmp_path / "d").mkdir()
    ctx = EvalContext(trace(*RUN), workspace=tmp_path, root=tmp_path)

    def check(a: dict[str, Any]) -> tuple[bool, bool, Any, Any, str]:
        r = evaluate_assertion(a, ctx)
        return r.passed, r.errored, r.expected, r.actual, r.message

    assert check({"type": "file-exists", "path": "a.txt"}) == (
        True,
        False,
        None,
        None,
        "a.txt exists",
    )
    assert check({"type": "file-exists", "path": "d"}) == (
        False, False, None, None, "d exists but is not a file"
    )  # fmt: skip
    assert check({"type": "file-exists", "path": "b.txt"}) == (
        False, False, None, None, "file missing: b.txt"
    )  # fmt: skip
    assert check({"type": "file-exists", "path": "a.txt", "scope": "repo"}) == (
        True, False, None, None, "a.txt (repo) exists"
    )  # fmt: skip
    assert check({"type": "file-contains", "path": "b.txt", "includes": "x"}) == (
        False, False, ["x"], None, "file missing: b.txt"
    )  # fmt: skip
    assert check({"type": "file-contains", "path": "a.txt", "includes": ["alpha", "beta"]}) == (
        True, False, ["alpha", "beta"], None, "a.txt contains all 2 expected text(s)"
    )  # fmt: skip
    assert check({"type": "file-contains", "path": "a.txt", "includes": ["alpha", "gamma", "é"]}) == (
        False, False, ["alpha", "gamma", "é"], ["gamma", "é"],
        'a.txt: 2 of 3 expected text(s) not found (1 found): "gamma", "é"',
    )  # fmt: skip
    escaped = check({"type": "file-exists", "path": "../outside.txt"})
    assert escaped[:2] == (False, False) and "outside.txt" in escaped[4]


def test_a_tool_call_whose_payload_is_not_an_object_is_skipped() -> None:
    t = trace(
        ("tool:call", "Read"), ("tool:call", None), ("tool:call", {"id": "e", "name": "Edit"})
    )
    assert [c.name for c in t.tool_calls] == ["Edit"]
    assert t.tool_calls[0].position == 2
    assert t.tool_names == ["Edit"]
    assert evaluate_assertion({"type": "tool.sequence", "tools": ["Edit"]}, t).passed
    assert evaluate_assertion({"type": "tool.called", "name": "Edit", "exact": 1}, t).passed


def test_tool_calls_join_their_results_by_id() -> None:
    t = trace(*RUN)
    read, edit = t.tool_calls
    assert (read.id, read.name, read.input, read.result, read.has_result) == (
        "t1", "Read", {"path": "a.py"}, "ok", True
    )  # fmt: skip
    assert (edit.id, edit.result, edit.has_result, edit.position) == ("t2", None, False, 4)


def test_capped_keeps_exactly_the_limit_and_counts_the_rest() -> None:
    assert capped("x" * VALUE_LIMIT) == "x" * VALUE_LIMIT
    assert capped("x" * (VALUE_LIMIT + 1)) == "x" * VALUE_LIMIT + "… (1 more characters)"
    assert capped("abcdef", 4) == "abcd… (2 more characters)"
    assert capped(12345, 2) == 12345
    result = AssertionResult({"type": "t"}, False, "m", expected="e" * 10_005, actual="a" * 12_000)
    data = result.to_dict()
    assert data["expected"] == "e" * VALUE_LIMIT + "… (5 more characters)"
    assert data["actual"] == "a" * VALUE_LIMIT + "… (2,000 more characters)"


def test_a_strict_trajectory_reports_the_first_of_equally_long_partial_runs() -> None:
    t = trace("a", "b", "x", "a", "b", "y")
    result = evaluate_assertion(
        {"type": "signal.trajectory", "strict": True, "patterns": ["a", "b", "c"]}, t
    )
    assert not result.passed and result.actual == ["a", "b"]
    assert result.message == (
        "matched 2 of 3 steps; step 3 'c' not found right after #1 'b' "
        "(strict: no signal may come between)"
    )
    longer = trace("a", "b", "x", "a", "b", "c", "a")
    ok = evaluate_assertion(
        {"type": "signal.trajectory", "strict": True, "patterns": ["a", "b", "c"]}, longer
    )
    assert ok.passed and ok.message == "all 3 steps matched contiguous run at #3..#5"


def test_a_strict_trajectory_prefers_a_longer_later_partial_run() -> None:
    t = trace("a", "x", "a", "b", "y")
    result = evaluate_assertion(
        {"type": "signal.trajectory", "strict": True, "patterns": ["a", "b", "c"]}, t
    )
    assert result.actual == ["a", "b"] and "right after #3 'b'" in result.message


def test_previews_are_capped_where_users_read_them() -> None:
    calls = [
        ("tool:call", {"name": "Bash", "input": {"command": f"run {i} " + "z" * 40}})
        for i in range(7)
    ]
    t = trace(*calls, *[f"n:{i}" for i in range(7)])
    with_args = evaluate_assertion(
        {"type": "tool.calledWith", "name": "Bash", "args": {"command": "x"}}, t
    )
    assert len(with_args.actual) == PREVIEW_ITEMS
    inputs = with_args.message.split("inputs: ", 1)[1]
    assert len(inputs) == 300 and inputs.endswith("…")
    assert with_args.message.startswith('no call of \'Bash\' matches {"command": "x"}; 7 call(s), ')
    absent = evaluate_assertion({"type": "signal.not", "pattern": "n:*"}, t)
    assert absent.message == (
        "'n:0' at #7 matches 'n:*' (7 in all; first matches: n:0, n:1, n:2, n:3, n:4)"
    )
    assert (absent.expected, absent.actual) == (0, 7)
    names = [("tool:call", {"name": f"tool-{i:02d}-" + "q" * 30}) for i in range(12)]
    order = evaluate_assertion({"type": "tool.sequence", "tools": ["missing"]}, trace(*names))
    shown = order.message.split("calls: ", 1)[1]
    assert len(shown) == 300 and shown.endswith("…")
    called = evaluate_assertion({"type": "tool.called", "name": "missing"}, trace(*names))
    assert called.message.endswith(
        "first matches: " + ", ".join(f"tool-{i:02d}-" + "q" * 30 for i in range(5))
    )


def test_output_previews_are_cut_at_200_characters_and_keep_unicode() -> None:
    long = "é" * 300
    t = trace(("text:complete", {"content": long}))
    result = evaluate_assertion({"type": "output.contains", "text": "x"}, t)
    preview = result.message.split(": ", 1)[1]
    assert result.message.startswith("'x' not found in output (300 chars): ")
    assert preview == '"' + "é" * 198 + "…" and len(preview) == 200
    assert result.actual == long
    not_json = evaluate_assertion({"type": "output.json"}, t)
    assert not_json.message.endswith(": " + preview)
    assert short("é") == '"é"' and short({"b": 1, "a": [1]}) == '{"a": [1], "b": 1}'
    assert short("x" * 10, 5) == '"xxx…' and short("xxx", 5) == '"xxx"'


def test_output_json_with_a_schema() -> None:
    t = trace(("text:complete", {"content": '```json\n{"a": 1, "b": "x"}\n```'}))
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
    result = evaluate_assertion({"type": "output.json", "schema": schema}, t)
    assert (result.passed, result.expected, result.actual) == (False, schema, {"a": 1, "b": "x"})
    assert result.message == (
        "output JSON does not match the schema: at /a: 1 is not of type 'string'; "
        "at /b: 'x' is not of type 'integer'"
    )
    ok = evaluate_assertion({"type": "output.json", "schema": {"type": "object"}}, t)
    assert (ok.passed, ok.message, ok.actual) == (
        True,
        "output is JSON matching the schema",
        {"a": 1, "b": "x"},
    )
    plain = evaluate_assertion({"type": "output.json"}, t)
    assert (plain.passed, plain.message) == (True, "output is JSON")


def test_a_trace_file_that_cannot_be_read_is_located_at_line_and_column_zero(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "none.jsonl"
    with pytest.raises(InputError) as raised:
        read_jsonl(missing)
    assert raised.value.problems == [
        Problem(str(missing), 0, 0, "cannot read: No such file or directory")
    ]
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"name": "a"}\n\xff\n')
    with pytest.raises(InputError) as raised:
        read_jsonl(bad)
    assert raised.value.problems == [Problem(str(bad), 1, 1, "not UTF-8 text (invalid start byte)")]
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"name": "a"}\n\n{"name": \n[1]\n')
    with pytest.raises(InputError) as raised:
        read_jsonl(broken)
    assert [(p.line, p.column) for p in raised.value.problems] == [(3, 10), (4, 1)]
    assert raised.value.problems[1].message == "not a signal: a signal must be an object, got list"


def test_bounds_default_to_at_least_once_only_when_asked() -> None:
    assert bounds({}, at_least_once=True) == (1, None)
    assert bounds({}, at_least_once=False) == (None, None)
    assert bounds({"min": 2, "exact": 3}, at_least_once=True) == (3, 3)
    assert bounds({"count": 0, "max": 5}, at_least_once=True) == (0, 0)
    assert bounds({"max": 5}, at_least_once=True) == (None, 5)


# -- survivors of the bench/mutation.py run of this change ------------------------------------


def test_outcomes_and_judge_requests_are_immutable_values() -> None:
    outcome = Outcome(True, "m")
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.passed = False  # type: ignore[misc]
    request = JudgeRequest(criteria=["x"], output="o")
    assert (request.temperature, request.rubric, request.model, request.run) == (0.0, None, None, 0)


def test_signal_ids_are_short_unique_and_name_their_process() -> None:
    first, second = new_signal_id(), new_signal_id()
    pattern = re.compile(r"sig_([0-9a-f]+)_([0-9a-f]{8})")
    a, b = pattern.fullmatch(first), pattern.fullmatch(second)
    assert a and b and a.group(2) == b.group(2)
    assert int(b.group(1), 16) == int(a.group(1), 16) + 1


def test_naive_timestamps_are_utc_whatever_the_local_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        t = trace(
            {"name": "a", "timestamp": "2024-01-01T00:00:00"},
            {"name": "b", "timestamp": "2024-01-01T00:00:01.500Z"},
        )
        assert t.timestamp_span_ms == 1500
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_usage_of_any_shape_counts_only_provider_end() -> None:
    t = trace(
        ("provider:start", {"model": "gpt-4o-mini", "usage": {"input_tokens": 99}, "cost": 9}),
        ("provider:end", {"usage": {"input_tokens": 3, "output_tokens": 4}, "cost": 0.25}),
        ("provider:end", "not an object"),
    )
    assert (t.metrics.input_tokens, t.metrics.output_tokens, t.metrics.cost) == (3, 4, 0.25)


@pytest.mark.parametrize(
    ("matcher", "problem"),
    [
        ({"gte": "1"}, "'gte' needs a number, got '1'"),
        ({"lte": True}, "'lte' needs a number, got True"),
        ({"gt": None}, "'gt' needs a number, got None"),
        ({"lt": [1]}, "'lt' needs a number, got [1]"),
        ({"between": [1, "2"]}, "'between' needs [min, max] numbers, got [1, '2']"),
        ({"startsWith": 5}, "'startsWith' needs a string, got 5"),
        ({"endsWith": ["a"]}, "'endsWith' needs a string, got ['a']"),
        ({"matches": 1}, "'matches' needs a string, got 1"),
        ({"matches": "(a"}, "invalid regex '(a': missing ), unterminated subpattern at position 0"),
        ({"contains": {"x": 1}}, None),  # contains takes any value
    ],
)
def test_every_matcher_operand_is_checked_with_a_valid_and_an_invalid_value(
    matcher: dict[str, Any], problem: str | None
) -> None:
    valid = {"gte": 1, "lte": 2.5, "gt": 0, "lt": -1, "between": [1, 2], "startsWith": "a",
             "endsWith": "b", "matches": "a+", "contains": "x"}  # fmt: skip
    key = next(iter(matcher))
    assert matcher_problems({key: valid[key]}) == []
    expected = [] if problem is None else [(f"/{key}", problem)]
    assert matcher_problems(matcher) == expected
    assert matcher_problems({"deep": [{"x": matcher}]}) == [
        (f"/deep/0/x{p}", m) for p, m in expected
    ]
    assert pattern_problems({"x": matcher}) == [(f"/x{p}", m) for p, m in expected]
    assert pattern_problems(matcher) == []  # at the top level it is an ordinary key


def test_js_number_of_one_and_small_integers() -> None:
    assert [js_number(v) for v in (1.0, 1, -1.0, 10.0, 0.1)] == ["1", "1", "-1", "10", "0.1"]


# -- the types that came later: handoffs, tool status and turns, tests.*, diff-match -----------

TURNS = [
    *SHARED_TURNS,
    ("tests:result", {"goal": "fix", "baseline": True, "tests": [
        {"id": "t::a", "status": "failed", "message": "assert 1 == 2\nmore"},
        {"id": "t::b", "status": "passed"},
        {"id": "t::c", "status": "passed"},
    ]}),
    ("tests:result", {"goal": "fix", "baseline": False, "tests": [
        {"id": "t::a", "status": "passed"},
        {"id": "t::b", "status": "failed", "message": "  boom\nat line 3"},
        {"id": "u::d", "status": "skipped"},
    ]}),
]  # fmt: skip
NO_REPORT = [("tests:result", {"goal": "g", "tests": [], "error": "no report at r.xml"})]
WITHOUT = "no test results: no goal has 'report: junit <path>'"


def _diff(match: str, expected_diff: str) -> dict[str, Any]:
    return {"type": "diff-match", "path": "a.py", "expectedDiff": expected_diff, "match": match}


LATER: list[tuple[dict[str, Any], list[Any], bool, bool, Any, Any, str]] = [
    ({"type": "agent.handoff", "from": "triage", "to": "billing"}, TURNS, True, False,
     "at least 1", 1, "handoffs triage → billing: 1 (at least 1)"),
    ({"type": "agent.handoff"}, TURNS, True, False, "at least 1", 2, "handoffs * → *: 2 (at least 1)"),
    ({"type": "agent.handoff", "to": "triage", "min": 2}, TURNS, False, False, "at least 2", 1,
     "expected at least 2 handoffs * → triage, found 1; first matches: triage → billing, "
     "billing → triage"),
    ({"type": "agent.handoff", "from": "billing", "to": "billing"}, TURNS, False, False,
     "at least 1", 0, "expected at least 1 handoffs billing → billing, found 0; first matches: "
     "triage → billing, billing → triage"),
    ({"type": "agent.handoff", "max": 0}, RUN, True, False, "at most 0", 0,
     "handoffs * → *: 0 (at most 0)"),
    ({"type": "tool.failed"}, TURNS, True, False, "at least 1", 1, "failed tool calls: 1 (at least 1)"),
    ({"type": "tool.failed", "name": "fetch", "count": 1}, TURNS, True, False, "exactly 1", 1,
     "failed calls of tool 'fetch': 1 (exactly 1)"),
    ({"type": "tool.failed", "name": "search"}, TURNS, False, False, "at least 1", 0,
     "expected at least 1 failed calls of tool 'search', found 0"),
    ({"type": "tool.failed", "max": 0}, TURNS, False, False, "at most 0", 1,
     'expected at most 0 failed tool calls, found 1; first matches: fetch: "404"'),
    ({"type": "tool.parallel", "tools": ["fetch", "search"]}, TURNS, True, False,
     ["fetch", "search"], ["search", "fetch"], "called together in one turn: search, fetch"),
    ({"type": "tool.parallel", "tools": ["fetch", "fetch"]}, TURNS, False, False,
     ["fetch", "fetch"], [["search", "fetch"], ["fetch"]],
     'no model turn called fetch, fetch together; tool calls by turn: [["search", "fetch"], '
     '["fetch"]]'),
    ({"type": "tool.parallel", "tools": ["fetch"]}, TURNS[5:8], False, False, ["fetch"],
     [["fetch"]], 'no model turn called fetch together; tool calls by turn: [["fetch"]]'),
    ({"type": "tool.parallel", "tools": ["Read"]}, RUN, False, False, ["Read"], [],
     "no model turn called Read together; tool calls by turn: []"),
    ({"type": "tool.calledWith", "name": "fetch", "args": {"url": "v"}, "status": "error"}, TURNS,
     True, False, {"args": {"url": "v"}, "status": "error"}, {"url": "v"},
     '\'fetch\' called with {"url": "v"}: error'),
    ({"type": "tool.calledWith", "name": "fetch", "args": {"url": "v"}, "status": "ok"}, TURNS,
     False, False, {"args": {"url": "v"}, "status": "ok"}, ["error"],
     '\'fetch\' was called with {"url": "v"} but not with status ok: error'),
    ({"type": "tool.calledWith", "name": "search", "args": {"q": "y"}, "status": "ok"}, TURNS,
     False, False, {"args": {"q": "y"}, "status": "ok"}, ["no result"],
     '\'search\' was called with {"q": "y"} but not with status ok: no result'),
    ({"type": "tool.calledWith", "name": "fetch", "args": {"url": "w"}, "status": "ok"}, TURNS,
     False, False, {"args": {"url": "w"}, "status": "ok"}, [{"url": "u"}, {"url": "v"}],
     'no call of \'fetch\' matches {"url": "w"}; inputs: [{"url": "u"}, {"url": "v"}]'),
    ({"type": "tool.calledWith", "name": "nope", "args": {}, "status": "ok"}, TURNS, False, False,
     {"args": {}, "status": "ok"}, None, "tool 'nope' was never called"),
    ({"type": "tests.pass", "ids": ["t::a"]}, TURNS, True, False, ["t::a"], None,
     "1 test(s) pass: t::a"),
    ({"type": "tests.pass", "ids": ["t::*", "x::*"]}, TURNS, False, False, ["t::*", "x::*"],
     ["t::b", "x::*"], "tests that must pass: not passing: t::b (failed: boom) · no test matches "
     "x::* (tests: t::a, t::b, u::d)"),
    ({"type": "tests.pass", "ids": ["t::a"], "goal": "other"}, TURNS, False, True, None, None,
     "no test results: goal 'other' has no report"),
    ({"type": "tests.pass", "ids": ["x"]}, NO_REPORT, False, True, None, None,
     "no test results: goal 'g': no report at r.xml"),
    ({"type": "tests.stillPass", "ids": ["t::a"]}, TURNS, True, False, ["t::a"], None,
     "1 test(s) pass: t::a"),
    ({"type": "tests.stillPass", "ids": ["t::c"]}, TURNS, False, False, ["t::c"], ["t::c"],
     "tests that must still pass: no test matches t::c (tests: t::a, t::b, u::d)"),
    ({"type": "tests.stillPass", "all": True}, TURNS, False, False, ["t::b", "t::c"],
     ["t::b", "t::c"], "2 of 2 test(s) that passed on the baseline no longer pass: "
     "t::b (failed: boom); t::c (missing)"),
    ({"type": "tests.stillPass", "all": True}, TURNS[-1:], False, True, None, None,
     "no test results on the baseline: no goal has 'report: junit <path>'"),
    ({"type": "tests.stillPass", "all": True}, ["harness:start"], False, True, None, None, WITHOUT),
    ({"type": "tests.count", "status": "passed", "exact": 1}, TURNS, True, False, "exactly 1", 1,
     "passed tests: 1 (exactly 1)"),
    ({"type": "tests.count", "ids": ["t::*"], "min": 3}, TURNS, False, False, "at least 3", 2,
     "expected at least 3 tests, found 2; first matches: t::a, t::b"),
    ({"type": "tests.count", "status": "skipped"}, TURNS, True, False, "any number", 1,
     "skipped tests: 1 (any number)"),
    ({"type": "tests.count", "max": 0}, NO_REPORT, False, True, None, None,
     "no test results: goal 'g': no report at r.xml"),
    # no report at all is no evidence: never a silent pass of "at most 0 failed"
    ({"type": "tests.count", "status": "failed", "max": 0}, ["harness:start"], False, True, None,
     None, WITHOUT),
    ({"type": "tests.count", "max": 0, "goal": "other"}, TURNS, False, True, None, None,
     "no test results: goal 'other' has no report"),
    ({"type": "tests.count", "exact": 0}, [("tests:result", {"goal": "g", "tests": []})], True,
     False, "exactly 0", 0, "tests: 0 (exactly 0)"),
    ({"type": "tests.pass", "ids": ["x"]}, [("tests:result", {"goal": "g", "tests": []})], False,
     True, None, None, "no test results: the reports list no test"),
    (_diff("contains", "+y = 2"), TURNS, True, False, "+y = 2", "@@ ... @@\n x = 1\n+y = 2\n",
     "a.py: expectedDiff found in the actual diff"),
    (_diff("contains", "+y = 3"), TURNS, False, False, "+y = 3", "@@ ... @@\n x = 1\n+y = 2\n",
     "a.py: expected hunk 1 of 1 not found in the actual diff:\n  +y = 3\nactual diff:\n"
     "--- a/a.py\n+++ b/a.py\n@@ -1 +1,2 @@\n x = 1\n+y = 2\n"),
    (_diff("exact", "@@ -1 +1,2 @@\n x = 1\n+y = 2\n"), TURNS, True, False,
     "@@ -1 +1,2 @@\n x = 1\n+y = 2\n", "@@ ... @@\n x = 1\n+y = 2\n", "a.py: diff matches exactly"),
    ({**_diff("contains", "+y"), "path": "gone.py"}, TURNS, False, False, None, None,
     "file missing: gone.py exists neither before nor after the run"),
    ({**_diff("contains", "+y"), "path": "b.py"}, TURNS, False, True, None, None,
     "no baseline snapshot of b.py: a scenario takes it before the agentTask, so diff-match "
     "cannot be judged here"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("assertion", "signals", "passed", "errored", "expected", "actual", "message"),
    LATER,
    ids=[f"{i}-{case[0]['type']}" for i, case in enumerate(LATER)],
)
def test_later_types_verdict_flag_values_and_message(
    tmp_path: Path,
    assertion: dict[str, Any],
    signals: list[Any],
    passed: bool,
    errored: bool,
    expected: Any,
    actual: Any,
    message: str,
) -> None:
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    baselines = {("fixture", "a.py"): "x = 1\n", ("fixture", "gone.py"): None}
    ctx = EvalContext(trace(*signals), workspace=tmp_path, root=tmp_path, baselines=baselines)
    result = evaluate_assertion(assertion, ctx)
    assert pinned(result) == (passed, errored, expected, actual, message)
    negated = evaluate_assertion({"type": "not", "assertion": assertion}, ctx)
    assert (negated.passed, negated.errored) == (not passed and not errored, errored)


def test_a_diff_match_outside_a_scenario_cannot_be_judged() -> None:
    result = evaluate_assertion(_diff("contains", "+y"), trace(*RUN))
    assert (result.passed, result.errored, result.message) == (
        False,
        True,
        "diff-match needs a scenario workspace: it only runs inside a scenario",
    )
    repo = evaluate_assertion({**_diff("contains", "+y"), "scope": "repo"}, trace(*RUN))
    assert (repo.passed, repo.errored, repo.message) == (
        False,
        True,
        "diff-match needs a --root directory: it only runs inside a scenario",
    )


def test_test_lists_show_ten_ids_and_count_the_rest() -> None:
    def graded(assertion: dict[str, Any], tests: list[dict[str, Any]]) -> AssertionResult:
        return evaluate_assertion(assertion, trace(("tests:result", {"goal": "g", "tests": tests})))

    passing = [{"id": f"t{i:02d}", "status": "passed"} for i in range(11)]
    ten = graded({"type": "tests.pass", "ids": ["t0*"]}, passing)
    assert ten.message == "10 test(s) pass: " + ", ".join(f"t{i:02d}" for i in range(10))
    eleven = graded({"type": "tests.pass", "ids": ["t*"]}, passing)
    assert eleven.message == (
        "11 test(s) pass: " + ", ".join(f"t{i:02d}" for i in range(10)) + " (+1 more)"
    )
    failing = [{"id": f"f{i:02d}", "status": "failed", "message": f"{i}" * 130 + "\nnext"}
               for i in range(12)]  # fmt: skip
    result = graded({"type": "tests.pass", "ids": ["f*"]}, failing)
    described = result.message.removeprefix("tests that must pass: not passing: ").split("; ")
    assert described == [f"f{i:02d} (failed: {str(i) * 120})" for i in range(10)]
    assert result.actual == [f"f{i:02d}" for i in range(12)]


def test_now_is_an_iso_utc_timestamp_to_the_millisecond() -> None:
    before = datetime.now(timezone.utc)
    stamp = now_iso()
    after = datetime.now(timezone.utc)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp), stamp
    parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert before.replace(microsecond=before.microsecond // 1000 * 1000) <= parsed <= after


# -- survivors of the bench/mutation.py run with f-strings and tests.* -------------------------


def test_judge_verdicts_and_trace_metrics_are_immutable_values() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        JudgeVerdict({"x": 1.0}).scores = {}  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        trace(*RUN).metrics.cost = 0  # type: ignore[misc]


def test_a_type_registered_twice_is_refused() -> None:
    with pytest.raises(ValueError, match=re.escape("type 'tool.called' is registered twice")):
        assertion("tool.called")(lambda a, ctx: Outcome(True, "second"))
    assert evaluate_assertion({"type": "tool.called", "name": "Read"}, trace(*RUN)).passed


@pytest.mark.parametrize(
    "evil",
    [
        {"type": "output.matches", "regex": "(a+)+$"},  # exponential backtracking
        {
            "type": "signal.contains",
            "pattern": "text:*",
            "payload": {"content": {"matches": "(a+)+$"}},
        },
    ],
    ids=["output.matches", "a matches operand"],
)
def test_a_regex_over_its_budget_fails_as_errored_whatever_the_type(evil: dict[str, Any]) -> None:
    t = trace(("text:complete", {"content": "a" * 64 + "!"}))
    result = evaluate_assertion(evil, t)
    assert (result.passed, result.errored) == (False, True)
    assert result.message == (
        f"regex took longer than {REGEX_BUDGET_MS} ms (/(a+)+$/): rewrite it without nested "
        "quantifiers such as (a+)+"
    )
    assert result.to_dict()["errored"] is True
    negated = evaluate_assertion({"type": "not", "assertion": evil}, t)
    assert (negated.passed, negated.errored) == (False, True)


def test_booleans_never_equal_numbers_either_way() -> None:
    assert not values_equal(True, 1) and not values_equal(1, True)
    assert not values_equal(False, 0) and not values_equal(0.0, False)
    assert values_equal(True, True) and values_equal(1, 1.0)


def test_a_pattern_that_is_not_an_object_is_checked_as_a_matcher() -> None:
    assert pattern_problems([{"gte": "1"}]) == [("/0/gte", "'gte' needs a number, got '1'")]
    assert pattern_problems([{"x": {"lt": None}}], "/args") == [
        ("/args/0/x/lt", "'lt' needs a number, got None")
    ]


def test_js_number_writes_one_digit_mantissas_without_a_point() -> None:
    assert [js_number(v) for v in (1e21, 2e22, 1e-7, 1.5e-7, 1.5e21, -3e-9)] == [
        "1e+21", "2e+22", "1e-7", "1.5e-7", "1.5e+21", "-3e-9"
    ]  # fmt: skip


def test_js_stringify_writes_a_string_enum_member_as_its_value() -> None:
    class Kind(str, enum.Enum):  # str() of a member is 'Kind.A' on Python 3.11
        A = "a"

    assert js_stringify({"kind": Kind.A}) == '{"kind":"a"}'


def test_a_schema_mismatch_names_its_first_three_errors() -> None:
    t = trace(("text:complete", {"content": '{"a": 1, "b": 2, "c": 3, "d": 4}'}))
    schema = {"type": "object", "properties": {k: {"type": "string"} for k in "abcd"}}
    result = evaluate_assertion({"type": "output.json", "schema": schema}, t)
    assert result.message == (
        "output JSON does not match the schema: at /a: 1 is not of type 'string'; "
        "at /b: 2 is not of type 'string'; at /c: 3 is not of type 'string'"
    )


def test_a_strict_mode_trajectory_says_its_steps_match_exactly() -> None:
    t = trace("a", "b", "x", "c")  # x: no step names it
    a = {"type": "signal.trajectory", "mode": "strict", "patterns": ["a", "b", "c"]}
    result = evaluate_assertion(a, t)
    assert (result.passed, result.expected, result.actual, result.message) == (
        True,
        ["a", "b", "c"],
        ["a", "b", "c"],
        "strict: the 3 steps match exactly",
    )


def test_an_assertion_object_with_to_dict_is_read_as_its_dict() -> None:
    class Spec:
        def to_dict(self) -> dict[str, Any]:
            return {"type": "tool.called", "name": "Read", "exact": 1}

    result = evaluate_assertion(Spec(), trace(*RUN))
    assert (result.passed, result.assertion) == (
        True,
        {"type": "tool.called", "name": "Read", "exact": 1},
    )


def test_boolean_usage_is_not_summed_as_tokens_by_the_fast_path() -> None:
    t = trace(
        ("provider:end", {"usage": {"inputTokens": True, "outputTokens": 2}, "cost": 0.5}),
        ("provider:end", {"usage": {"inputTokens": 3, "outputTokens": 4}, "cost": 0.25}),
    )
    assert (t.metrics.input_tokens, t.metrics.output_tokens, t.metrics.cost) == (3, 6, 0.75)


def test_every_preview_in_a_message_is_capped_where_users_read_it(tmp_path: Path) -> None:
    def message(a: dict[str, Any], *signals: Any) -> str:
        return evaluate_assertion(a, EvalContext(trace(*signals), workspace=tmp_path)).message

    acts = [("agent:activated", {"agent": "a", "trigger": f"t{i}"}) for i in range(7)]
    caused = message({"type": "agent.causedBy", "agentId": "a", "triggerPattern": "x"}, *acts)
    assert caused.endswith("; triggers: t0, t1, t2, t3, t4")
    emits = [sig(f"e:{i}", {}, "a") for i in range(7)]
    emitted = message({"type": "agent.emitted", "agentId": "a", "signal": "x"}, *acts, *emits)
    assert emitted.endswith("; it emitted: e:0, e:1, e:2, e:3, e:4")
    handoffs = [("agent:handoff", {"from": f"f{i}", "to": "t"}) for i in range(7)]
    assert message({"type": "agent.handoff", "to": "x"}, *handoffs).endswith(
        "first matches: f0 → t, f1 → t, f2 → t, f3 → t, f4 → t"
    )
    steps = [f"s{i}" for i in range(7)]
    subset = {"type": "signal.trajectory", "mode": "subset", "patterns": ["s*", "none"]}
    assert (
        message(subset, *steps)
        == "subset: signals no step expects: #1 s1, #2 s2, #3 s3, #4 s4, #5 s5"
    )
    superset = {
        "type": "signal.trajectory",
        "mode": "superset",
        "patterns": [f"m{i}" for i in range(7)],
    }
    assert message(superset, *steps) == "superset: steps not found: m0, m1, m2, m3, m4"
    calls = [("tool:call", {"id": f"c{i}", "name": "Bash", "input": {"cmd": f"run {i} " + "z" * 60}})
             for i in range(7)]  # fmt: skip
    errors = [("tool:result", {"id": f"c{i}", "result": "", "error": f"e{i} " + "é" * 200})
              for i in range(7)]  # fmt: skip
    status = {"type": "tool.calledWith", "name": "Bash", "args": {"cmd": "nope"}, "status": "ok"}
    result = evaluate_assertion(status, trace(*calls))
    assert len(result.actual) == PREVIEW_ITEMS
    inputs = result.message.split("; inputs: ", 1)[1]
    assert len(inputs) == 300 and inputs.endswith("…") and inputs.startswith('[{"cmd": "run 0 z')
    seen = message({**status, "args": {}}, *calls)
    assert seen.endswith("but not with status ok: " + ", ".join(["no result"] * PREVIEW_ITEMS))
    failed = message({"type": "tool.failed", "max": 0}, *calls, *errors)
    shown = failed.split("; first matches: ", 1)[1].split(", Bash: ")
    assert len(shown) == 3 and shown[0] == "Bash: " + short(f"e0 {'é' * 200}")
    assert len(short(f"e0 {'é' * 200}")) == 120
    turns = [
        signal
        for i in range(7)
        for signal in (
            sig("provider:start", {}, id=f"p{i}"),
            sig("tool:call", {"id": f"k{i}", "name": f"tool-{i}-" + "w" * 60}, parent=f"p{i}"),
        )
    ]
    parallel = evaluate_assertion({"type": "tool.parallel", "tools": ["a", "b"]}, trace(*turns))
    assert len(parallel.actual) == PREVIEW_ITEMS
    by_turn = parallel.message.split("tool calls by turn: ", 1)[1]
    assert len(by_turn) == 300 and by_turn.endswith("…")
    runs = [
        ("tests:result", {"goal": "g", "baseline": True,
                          "tests": [{"id": f"t{i:02d}", "status": "passed"} for i in range(12)]}),
        ("tests:result", {"goal": "g",
                          "tests": [{"id": f"t{i:02d}", "status": "failed"} for i in range(12)]}),
    ]  # fmt: skip
    regressed = message({"type": "tests.stillPass", "all": True}, *runs)
    assert regressed == "12 of 12 test(s) that passed on the baseline no longer pass: " + "; ".join(
        f"t{i:02d} (failed)" for i in range(10)
    )
    counted = message({"type": "tests.count", "status": "failed", "max": 2}, *runs)
    assert counted == "expected at most 2 failed tests, found 12; first matches: t00, t01, t02"
    (tmp_path / "f.txt").write_text("hello")
    wanted = [str(i) * 100 for i in range(7)]
    missing = message({"type": "file-contains", "path": "f.txt", "includes": wanted}, "x")
    assert missing == "f.txt: 7 of 7 expected text(s) not found (0 found): " + ", ".join(
        '"' + str(i) * 78 + "…" for i in range(5)
    )


@pytest.mark.parametrize(
    ("assertion", "pins"),
    [
        ({"patterns": ["a", "b", "c"]}, ([0, 1], "c", 1)),
        ({"patterns": ["a", "b", "c"], "strict": True}, ([0, 1], "c", 1)),
        ({"patterns": ["x", "a", "b"], "strict": True}, ([2, 3, 4], None, None)),
        ({"patterns": ["a", "x", "a"]}, ([0, 2, 3], None, None)),
        ({"patterns": ["a", "x"], "strict": True}, ([0], "x", 0)),
        ({"patterns": ["q"]}, ([], "q", -1)),
        ({"patterns": ["q"], "after": "x"}, ([], "q", 2)),
        ({"patterns": ["b", "a", "zz"], "mode": "unordered"}, ([0, 1, 3, 4], "zz", None)),
        ({"patterns": ["b", "a"], "mode": "subset"}, ([0, 1, 3, 4], None, None)),
        ({"patterns": ["a", "b"], "after": "x"}, ([3, 4], None, None)),
        ({"patterns": []}, ([], None, None)),
    ],
)
def test_trajectory_pins_follow_the_verdicts_search(
    assertion: dict[str, Any], pins: tuple[list[int], str | None, int | None]
) -> None:
    t = trace("a", "b", "x", "a", "b", "c2", "y")
    assert tuple(trajectory_pins(assertion, t)) == pins
    if assertion["patterns"] and "mode" not in assertion:  # a mode may fail on extra signals
        verdict = evaluate_assertion({"type": "signal.trajectory", **assertion}, t)
        assert verdict.passed is (pins[1] is None)


def test_only_tests_result_signals_are_test_reports() -> None:
    t = trace(("harness:start", {"input": {}}), ("text:complete", {"content": "x"}))
    for a in ({"type": "tests.pass", "ids": ["a"]}, {"type": "tests.count", "min": 1}):
        result = evaluate_assertion(a, t)
        assert (result.passed, result.errored, result.message) == (False, True, WITHOUT), a
