"""snapshot.* — state mid-run (right after a signal) and at the end."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from signal_eval_cli.assertions.context import EvalContext
from signal_eval_cli.assertions.fields import Notes, Pattern, StatePath, Value
from signal_eval_cli.assertions.helpers import short
from signal_eval_cli.assertions.options import Field, NotRequired
from signal_eval_cli.assertions.outcome import Outcome
from signal_eval_cli.assertions.registry import assertion
from signal_eval_cli.patterns import get_path, match_value


class State(TypedDict):
    """A value in the state (a dot path), compared or matched, or only (not) existing."""

    path: StatePath
    value: NotRequired[Value]
    exists: NotRequired[
        Annotated[bool, Field(description="false: the path must not exist; true: it must.")]
    ]


def _check_state(state: Any, a: State, where: str) -> Outcome:
    path = a["path"]
    found, value = get_path(state, path)
    if a.get("exists") is False:
        if found:
            return Outcome(False, f"'{path}' exists {where} ({short(value)})", False, value)
        return Outcome(True, f"'{path}' does not exist {where}", False)
    if not found:
        return Outcome(False, f"'{path}' does not exist {where}", a.get("value", True))
    if "value" not in a:
        return Outcome(True, f"'{path}' exists {where}", True, value)
    expected = a["value"]
    if match_value(expected, value):
        return Outcome(True, f"'{path}' = {short(value)} {where}", expected, value)
    return Outcome(
        False, f"'{path}' is {short(value)} {where}, expected {short(expected)}", expected, value
    )


class _AfterSignal(Notes):
    afterSignal: Annotated[
        Pattern, Field(description="The state right after the first signal matching this glob.")
    ]


class AtOptions(_AfterSignal, State):
    """The state right after a signal."""


@assertion("snapshot.at", options=AtOptions)
def snapshot_at(a: AtOptions, ctx: EvalContext) -> Outcome:
    """The state right after the first matching signal: mid-run, before later writes."""
    pattern = a["afterSignal"]
    index = ctx.trace.find(pattern)
    if index is None:
        return Outcome(
            False, f"signal '{pattern}' never fired, so there is no state to inspect", pattern
        )
    where = f"after #{index} '{ctx.trace[index].name}'"
    return _check_state(ctx.trace.state_after(index), a, where)


class FinalOptions(Notes, State):
    """The state at the end."""


@assertion("snapshot.final", options=FinalOptions)
def snapshot_final(a: FinalOptions, ctx: EvalContext) -> Outcome:
    """The state at the end of the run."""
    return _check_state(ctx.trace.final_state, a, "in the final state")
