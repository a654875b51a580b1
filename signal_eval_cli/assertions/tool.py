"""tool.* — which tools were called, how often, with what, in what order."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Annotated, Any, Literal

from signal_eval_cli.assertions.context import EvalContext
from signal_eval_cli.assertions.fields import Counted, Name, Notes
from signal_eval_cli.assertions.helpers import PREVIEW_ITEMS, count_outcome, short
from signal_eval_cli.assertions.options import Field, NotRequired
from signal_eval_cli.assertions.outcome import Outcome
from signal_eval_cli.assertions.registry import assertion
from signal_eval_cli.patterns import equal_to, match_pattern, values_equal, where_equal


def _called_names(ctx: EvalContext) -> list[Any]:
    return ctx.trace.tool_names


def _calls_of(name: Any, names: list[Any]) -> int:
    """How many calls are named ``name``: strictly, so ``5`` is not ``"5"``."""
    return len(where_equal(names, name))


class ToolOptions(Notes):
    """One tool, by name."""

    name: Annotated[Name, Field(description="The tool's name.")]


class CalledOptions(ToolOptions, Counted):
    """How often a tool was called."""


class CalledWithOptions(ToolOptions):
    """A call's input (a partial match) and its result's status."""

    args: Annotated[
        Mapping[str, Any], Field(description="What the call's input must match (matchers allowed).")
    ]
    status: NotRequired[
        Annotated[
            Literal["ok", "error"],
            Field(description="The call's tool:result: error (it carries an error) or ok."),
        ]
    ]


class SequenceOptions(Notes):
    """Tools in order."""

    tools: Annotated[list[Name], Field(description="Tool names, in the order they were called.")]


class ParallelOptions(Notes):
    """Tools called in one model turn."""

    tools: Annotated[
        list[Name], Field(minItems=2, description="Tool names called in one model turn.")
    ]


class _AnyTool(Notes, total=False):
    name: Annotated[Name, Field(description="Only this tool's calls (default: any tool's).")]


class FailedOptions(_AnyTool, Counted):
    """Failed calls of one tool, or of any."""


@assertion("tool.called", options=CalledOptions)
def tool_called(a: CalledOptions, ctx: EvalContext) -> Outcome:
    """How often the tool was called (default: at least once)."""
    names = _called_names(ctx)
    return count_outcome(
        f"calls of tool '{a['name']}'", _calls_of(a["name"], names), a, _first_distinct(names)
    )


@assertion("tool.notCalled", options=ToolOptions)
def tool_not_called(a: ToolOptions, ctx: EvalContext) -> Outcome:
    """The tool was never called."""
    count = _calls_of(a["name"], _called_names(ctx))
    if count == 0:
        return Outcome(True, f"tool '{a['name']}' was not called", 0, 0)
    return Outcome(False, f"tool '{a['name']}' was called {count} time(s)", 0, count)


@assertion("tool.calledWith", options=CalledWithOptions)
def tool_called_with(a: CalledWithOptions, ctx: EvalContext) -> Outcome:
    """Some call of the tool had input matching ``args`` (and that result ``status``)."""
    name, args, status = a["name"], a["args"], a.get("status")
    if status is not None:
        return _called_with_status(name, args, status, ctx)
    match = next((c for c in ctx.trace.iter_tool_inputs(name) if match_pattern(args, c)), None)
    if match is not None:
        return Outcome(True, f"'{name}' called with {short(match)}", args, match)
    calls = ctx.trace.tool_inputs(name)
    if not calls:
        return Outcome(False, f"tool '{name}' was never called", args)
    inputs = calls[:PREVIEW_ITEMS]
    return Outcome(
        False,
        f"no call of '{name}' matches {short(args)}; {len(calls)} call(s), inputs: {short(inputs, 300)}",
        args,
        inputs,
    )


def _called_with_status(name: str, args: Any, status: str, ctx: EvalContext) -> Outcome:
    """A call of ``name`` matching ``args`` whose result is ``status`` (``ok``/``error``)."""
    same = equal_to(name)
    calls = [c for c in ctx.trace.tool_calls if same(c.name)]
    matching = [c for c in calls if match_pattern(args, c.input)]
    hit = next((c for c in matching if c.status == status), None)
    expected = {"args": args, "status": status}
    if hit is not None:
        return Outcome(
            True, f"'{name}' called with {short(hit.input)}: {status}", expected, hit.input
        )
    if not calls:
        return Outcome(False, f"tool '{name}' was never called", expected)
    if not matching:
        inputs = [c.input for c in calls[:PREVIEW_ITEMS]]
        return Outcome(
            False,
            f"no call of '{name}' matches {short(args)}; inputs: {short(inputs, 300)}",
            expected,
            inputs,
        )
    seen = [c.status or "no result" for c in matching[:PREVIEW_ITEMS]]
    return Outcome(
        False,
        f"'{name}' was called with {short(args)} but not with status {status}: {', '.join(seen)}",
        expected,
        seen,
    )


@assertion("tool.sequence", options=SequenceOptions)
def tool_sequence(a: SequenceOptions, ctx: EvalContext) -> Outcome:
    """The tools were called in this order (other calls may come between)."""
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


@assertion("tool.failed", options=FailedOptions)
def tool_failed(a: FailedOptions, ctx: EvalContext) -> Outcome:
    """Calls (of ``name``, or of any tool) whose ``tool:result`` carries an ``error``."""
    name = a.get("name")
    failed = [
        c for c in ctx.trace.tool_calls if c.status == "error" and (name is None or c.name == name)
    ]
    what = f"failed calls of tool '{name}'" if name else "failed tool calls"
    return count_outcome(what, len(failed), a, [f"{c.name}: {short(c.error)}" for c in failed[:3]])


@assertion("tool.parallel", options=ParallelOptions)
def tool_parallel(a: ParallelOptions, ctx: EvalContext) -> Outcome:
    """The tools were called in one model turn (tool calls sharing ``source.parent``)."""
    expected = list(a["tools"])
    turns: dict[str, list[str]] = {}
    for call in ctx.trace.tool_calls:
        if call.turn is not None:
            turns.setdefault(call.turn, []).append(call.name)
    for names in turns.values():
        if len(names) > 1 and _contains_all(names, expected):
            return Outcome(
                True, f"called together in one turn: {', '.join(names)}", expected, names
            )
    shown = list(turns.values())[:PREVIEW_ITEMS]
    return Outcome(
        False,
        f"no model turn called {', '.join(expected)} together; tool calls by turn: {short(shown, 300)}",
        expected,
        shown,
    )


def _contains_all(names: list[str], wanted: list[str]) -> bool:
    """``names`` holds every item of ``wanted`` (as many times as it is listed)."""
    pool = list(names)
    for name in wanted:
        if name not in pool:
            return False
        pool.remove(name)
    return True


def _first_distinct(names: list[Any]) -> Iterator[str]:
    """The first distinct names, for a message (a name that is not a string is shown as
    JSON): a generator, so a check that passes, whose message lists none, reads no name."""
    try:  # at C speed, when every distinct name is a string (True would be 1, and 1.0)
        distinct = list(dict.fromkeys(names))
        names = distinct if all(isinstance(name, str) for name in distinct) else names
    except TypeError:  # a name that is a list or an object: no hash
        pass
    shown = dict.fromkeys(name if isinstance(name, str) else short(name) for name in names)
    yield from list(shown)[:PREVIEW_ITEMS]
