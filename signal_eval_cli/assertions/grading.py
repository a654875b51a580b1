"""tests.* — per-test grading from the ``tests:result`` signals a scenario records.

A goal with ``report: junit <path>`` leaves one ``tests:result`` signal per run:
``{goal, report, baseline, tests: [{id, status, message?}], error?}``. ``baseline``
is true for the run on the untouched fixture copy. Ids in assertions are globs
(``fnmatch``: ``*``, ``?``, ``[...]``) over test ids such as ``test_mod::test_x``.

- ``tests.pass {ids}`` — every glob matches a test and every matched test passed
  (SWE-bench's FAIL_TO_PASS).
- ``tests.stillPass {ids}`` or ``{all: true}`` — those tests, or every test that
  passed on the baseline, still pass (PASS_TO_PASS).
- ``tests.count {status?, ids?, min/max/exact}`` — how many tests (with that status).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Annotated, Any, Literal

from signal_eval_cli.assertions.context import EvalContext
from signal_eval_cli.assertions.fields import NAME, Counted, Name, Notes
from signal_eval_cli.assertions.helpers import count_outcome
from signal_eval_cli.assertions.options import Field
from signal_eval_cli.assertions.outcome import Outcome
from signal_eval_cli.assertions.registry import assertion

__all__ = ["test_outcomes"]

SIGNAL = "tests:result"
_SHOWN = 10


def test_outcomes(
    ctx: EvalContext, *, baseline: bool = False, goal: str | None = None
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """``{id: test}`` from the run's reports (a later goal's outcome wins) and the errors;
    without any report at all, the error says no goal has one."""
    tests: dict[str, dict[str, Any]] = {}
    errors = []
    reports = 0
    for signal in ctx.trace.signals:
        payload = signal.payload
        if signal.name != SIGNAL or not isinstance(payload, Mapping):
            continue
        if bool(payload.get("baseline")) != baseline:
            continue
        if goal is not None and payload.get("goal") != goal:
            continue
        reports += 1
        if payload.get("error"):
            errors.append(f"goal '{payload.get('goal')}': {payload['error']}")
        for test in payload.get("tests") or []:
            tests[str(test["id"])] = dict(test)
    if not reports:
        errors.append(f"goal '{goal}' has no report" if goal else _NO_REPORT)
    return tests, errors


def _names(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_SHOWN])
    return shown + (f" (+{len(ids) - _SHOWN} more)" if len(ids) > _SHOWN else "")


def _describe(test: Mapping[str, Any]) -> str:
    message = str(test.get("message") or "").strip().splitlines()
    return f"{test['id']} ({test['status']}{': ' + message[0][:120] if message else ''})"


_NO_REPORT = "no goal has 'report: junit <path>'"


def _no_reports(errors: list[str], what: str) -> Outcome:
    detail = "; ".join(errors) or "the reports list no test"
    return Outcome(False, f"no test results{what}: {detail}", errored=True)


def _must_pass(globs: Sequence[str], tests: Mapping[str, Mapping[str, Any]], label: str) -> Outcome:
    missing = [g for g in globs if not any(fnmatchcase(t, g) for t in tests)]
    matched = [t for t in tests if any(fnmatchcase(t, g) for g in globs)]
    failing = [tests[t] for t in matched if tests[t]["status"] != "passed"]
    if not missing and not failing:
        return Outcome(True, f"{len(matched)} test(s) pass: {_names(matched)}", list(globs))
    problems = []
    if failing:
        problems.append(f"not passing: {'; '.join(_describe(t) for t in failing[:_SHOWN])}")
    if missing:
        known = _names(sorted(tests))
        problems.append(f"no test matches {_names(missing)} (tests: {known or 'none'})")
    return Outcome(
        False,
        f"{label}: " + " · ".join(problems),
        list(globs),
        [t["id"] for t in failing] + missing,
    )


Ids = Annotated[
    list[str],
    {
        "type": "array",
        "minItems": 1,
        "items": NAME,
        "description": "Test ids or globs (fnmatch), e.g. test_mod::test_x, suite::*.",
    },
]


class OfGoal(Notes, total=False):
    """The reports of one goal, or (default) of every goal."""

    goal: Annotated[Name, Field(description="Only this goal's report (default: every goal's).")]


class PassOptions(OfGoal):
    """Tests that must pass."""

    ids: Ids


class SomeTests(OfGoal, total=False):
    ids: Ids


class StillPassOptions(SomeTests, total=False):
    """Tests (``ids``, or ``all`` that passed on the baseline) that must still pass."""

    all: Annotated[
        Literal[True],
        Field(
            description="Every test that passed on the baseline (the untouched fixture) "
            "still passes."
        ),
    ]


class _WithStatus(SomeTests, total=False):
    status: Annotated[
        Literal["passed", "failed", "skipped", "any"],
        Field(description="Only tests with this status (default: any)."),
    ]


class CountOptions(_WithStatus, Counted):
    """How many tests (with that status)."""


@assertion("tests.pass", options=PassOptions)
def tests_pass(a: PassOptions, ctx: EvalContext) -> Outcome:
    """Every glob matches a test, and every matched test passed (FAIL_TO_PASS)."""
    tests, errors = test_outcomes(ctx, goal=a.get("goal"))
    if not tests:
        return _no_reports(errors, "")
    return _must_pass(list(a["ids"]), tests, "tests that must pass")


@assertion(
    "tests.stillPass",
    options=StillPassOptions,
    schema={"oneOf": [{"required": ["ids"]}, {"required": ["all"]}]},
)
def tests_still_pass(a: StillPassOptions, ctx: EvalContext) -> Outcome:
    """Those tests, or all that passed on the baseline, still pass (PASS_TO_PASS)."""
    tests, errors = test_outcomes(ctx, goal=a.get("goal"))
    if not tests:
        return _no_reports(errors, "")
    if not a.get("all"):
        return _must_pass(list(a["ids"]), tests, "tests that must still pass")
    before, baseline_errors = test_outcomes(ctx, baseline=True, goal=a.get("goal"))
    if not before:
        return _no_reports(baseline_errors, " on the baseline")
    passed_before = [t for t, test in before.items() if test["status"] == "passed"]
    regressed = [
        tests.get(t, {"id": t, "status": "missing"})
        for t in passed_before
        if t not in tests or tests[t]["status"] != "passed"
    ]
    if not regressed:
        return Outcome(
            True, f"all {len(passed_before)} test(s) that passed on the baseline still pass"
        )
    return Outcome(
        False,
        f"{len(regressed)} of {len(passed_before)} test(s) that passed on the baseline no longer "
        f"pass: {'; '.join(_describe(t) for t in regressed[:_SHOWN])}",
        passed_before,
        [t["id"] for t in regressed],
    )


@assertion("tests.count", options=CountOptions)
def tests_count(a: CountOptions, ctx: EvalContext) -> Outcome:
    """How many tests (of those ids, with that status) the reports list."""
    tests, errors = test_outcomes(ctx, goal=a.get("goal"))
    if not tests and errors:
        return _no_reports(errors, "")
    status = a.get("status", "any")
    globs = a.get("ids")
    chosen = [
        t
        for t, test in tests.items()
        if (status == "any" or test["status"] == status)
        and (globs is None or any(fnmatchcase(t, g) for g in globs))
    ]
    what = "tests" if status == "any" else f"{status} tests"
    return count_outcome(what, len(chosen), a, chosen[:3], at_least_once=False)
