"""tool.* — which tools were called, how often, with what, in what order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signal_eval_cli.assertions._helpers import PREVIEW_ITEMS, count_outcome, short
from signal_eval_cli.assertions._registry import EvalContext, Outcome, assertion
from signal_eval_cli.patterns import match_pattern, values_equal


def _called_names(ctx: EvalContext) -> list[Any]:
    return ctx.trace.tool_names


def _calls_of(name: Any, names: list[Any]) -> int:
    """How many calls are named ``name``: strictly, so ``5`` is not ``"5"``."""
    return sum(values_equal(name, called) for called in names)


@assertion("tool.called")
def tool_called(a: Mapping[str, Any], ctx: EvalContext) -> Outcome:
    names = _called_names(ctx)
    return count_outcome(
        f"calls of tool '{a['name']}'", _calls_of(a["name"], names), a, _first_distinct(names)
    )


@assertion("tool.notCalled")
def tool_not_called(a: Mapping[str, Any], ctx: EvalContext) -> Outcome:
    count = _calls_of(a["name"], _called_names(ctx))
    if count == 0:
        return Outcome(True, f"tool '{a['name']}' was not called", 0, 0)
    return Outcome(False, f"tool '{a['name']}' was called {count} time(s)", 0, count)


@assertion("tool.calledWith")
def tool_called_with(a: Mapping[str, Any], ctx: EvalContext) -> Outcome:
    name, args = a["name"], a["args"]
    calls = ctx.trace.tool_inputs(name)
    match = next((c for c in calls if match_pattern(args, c)), None)
    if match is not None:
        return Outcome(True, f"'{name}' called with {short(match)}", args, match)
    if not calls:
        return Outcome(False, f"tool '{name}' was never called", args)
    inputs = calls[:PREVIEW_ITEMS]
    return Outcome(
        False,
        f"no call of '{name}' matches {short(args)}; {len(calls)} call(s), inputs: {short(inputs, 300)}",
        args,
        inputs,
    )


@assertion("tool.sequence")
def tool_sequence(a: Mapping[str, Any], ctx: EvalContext) -> Outcome:
    expected = list(a["tools"])
    names = _called_names(ctx)
    step = 0
    for name in names:
        if step < len(expected) and values_equal(expected[step], name):
            step += 1
    if step == len(expected):
        order = " → ".join(map(str, expected))
        return Outcome(True, f"tools called in order: {order}", expected, names)
    after = f" after '{expected[step - 1]}'" if step else ""
    return Outcome(
        False,
        f"matched {step} of {len(expected)} tools; '{expected[step]}' not called{after}; "
        f"calls: {short(names, 300)}",
        expected,
        names,
    )


def _first_distinct(names: list[Any]) -> list[str]:
    """The first distinct names, for a message (a name that is not a string is shown as JSON)."""
    shown = dict.fromkeys(name if isinstance(name, str) else short(name) for name in names)
    return list(shown)[:PREVIEW_ITEMS]
