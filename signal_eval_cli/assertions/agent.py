"""agent.* — activations, completion, causality, emissions and skips of one agent."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from typing import Annotated, Any, TypedDict

from signal_eval_cli.assertions.context import EvalContext
from signal_eval_cli.assertions.fields import Counted, Name, Notes, Pattern
from signal_eval_cli.assertions.helpers import PREVIEW_ITEMS, count_outcome
from signal_eval_cli.assertions.options import Field, NotRequired
from signal_eval_cli.assertions.outcome import Outcome
from signal_eval_cli.assertions.registry import assertion
from signal_eval_cli.patterns import compile_glob, equal_to
from signal_eval_cli.signals import Signal, Trace


def _payload_agent(signal: Signal) -> Any:
    payload = signal.payload
    return payload.get("agent") if isinstance(payload, Mapping) else None


def _of_agent(trace: Trace, name: str, agent: str) -> Iterator[Signal]:
    """Signals named ``name`` whose ``payload.agent`` is ``agent``."""
    same = equal_to(agent)
    return (s for s in trace.matching(name) if same(_payload_agent(s)))


def _trigger(activation: Signal) -> str | None:
    """``payload.trigger``: the name of the signal that activated the agent. (Read for
    each of an agent's thousands of activations on a long run: a name in a dict, the
    usual shape, takes no ``Mapping`` check.)"""
    payload = activation.payload
    if type(payload) is dict and type(trigger := payload.get("trigger")) is str:
        return trigger or None
    trigger = payload.get("trigger") if isinstance(payload, Mapping) else None
    if isinstance(trigger, Mapping):  # some runtimes record the whole triggering signal
        trigger = trigger.get("name")
    return trigger if isinstance(trigger, str) and trigger else None


class OfAgent(Notes):
    """An assertion about the agent ``agentId``."""

    agentId: Annotated[Name, Field(description="The agent's id.")]


class ActivatedOptions(OfAgent, Counted):
    """How often the agent was activated."""


class CausedByOptions(OfAgent):
    triggerPattern: Annotated[
        Pattern, Field(description="The signal that activated the agent: a name glob.")
    ]


class EmittedOptions(OfAgent):
    signal: Annotated[Pattern, Field(description="The signal the agent emitted: a name glob.")]


class SkippedOptions(OfAgent):
    reason: NotRequired[
        Annotated[str, Field(description="The reason the agent:skipped signal gives.")]
    ]


_Ends = TypedDict(
    "_Ends",
    {
        "from": Annotated[Name, Field(description="The agent handing off.")],
        "to": Annotated[Name, Field(description="The agent handed to.")],
    },
    total=False,
)


class HandoffOptions(Notes, _Ends, Counted):
    """Handoffs between two agents (either end may be left out)."""


@assertion("agent.activated", options=ActivatedOptions)
def agent_activated(a: ActivatedOptions, ctx: EvalContext) -> Outcome:
    """How often the agent was activated (default: at least once)."""
    agent = a["agentId"]
    count = len(ctx.trace.activations_of(agent))
    return count_outcome(f"activations of '{agent}'", count, a)


@assertion("agent.completed", options=OfAgent)
def agent_completed(a: OfAgent, ctx: EvalContext) -> Outcome:
    """The agent activated and raised no ``agent:error``."""
    agent = a["agentId"]
    trace = ctx.trace
    if not trace.activated(agent):
        return Outcome(False, f"agent '{agent}' never activated")
    same = equal_to(agent)
    errors = [s for s in trace.matching("agent:error") if same(_payload_agent(s)) or same(s.agent)]
    if errors:
        payload = errors[0].payload
        detail = payload.get("error") if isinstance(payload, Mapping) else payload
        return Outcome(False, f"agent '{agent}' raised an error: {detail}", actual=detail)
    return Outcome(True, f"agent '{agent}' activated and raised no error")


@assertion("agent.causedBy", options=CausedByOptions)
def agent_caused_by(a: CausedByOptions, ctx: EvalContext) -> Outcome:
    """Some activation of the agent was triggered by a signal matching the pattern."""
    agent, pattern = a["agentId"], a["triggerPattern"]
    glob = compile_glob(pattern)
    triggers = [_trigger(s) for s in ctx.trace.activations_of(agent)]
    if not triggers:
        return Outcome(False, f"agent '{agent}' never activated", expected=pattern)
    if any(t is not None and glob.fullmatch(t) for t in triggers):
        return Outcome(True, f"agent '{agent}' was triggered by '{pattern}'", pattern, triggers)
    shown = ", ".join(str(t) for t in triggers[:PREVIEW_ITEMS])
    return Outcome(
        False,
        f"no activation of '{agent}' was triggered by '{pattern}'; triggers: {shown}",
        pattern,
        triggers,
    )


@assertion("agent.emitted", options=EmittedOptions)
def agent_emitted(a: EmittedOptions, ctx: EvalContext) -> Outcome:
    """The agent emitted a signal matching the pattern (``source.agent``)."""
    agent, pattern = a["agentId"], a["signal"]
    trace = ctx.trace
    same = equal_to(agent)
    if any(same(s.agent) for s in trace.matching(pattern)):
        return Outcome(True, f"agent '{agent}' emitted '{pattern}'")
    emitted = {s.name for s in itertools.islice((s for s in trace if same(s.agent)), 1000)}
    shown = ", ".join(sorted(emitted)[:PREVIEW_ITEMS]) or "nothing"
    return Outcome(
        False, f"agent '{agent}' never emitted '{pattern}'; it emitted: {shown}", pattern
    )


@assertion("agent.skipped", options=SkippedOptions)
def agent_skipped(a: SkippedOptions, ctx: EvalContext) -> Outcome:
    """The agent was skipped (``agent:skipped``), for the given reason if one is given."""
    agent, reason = a["agentId"], a.get("reason")
    skips = list(_of_agent(ctx.trace, "agent:skipped", agent))
    reasons = [s.payload.get("reason") for s in skips]
    if not skips:
        return Outcome(False, f"agent '{agent}' was never skipped", reason)
    if reason is None or reason in reasons:
        return Outcome(True, f"agent '{agent}' was skipped ({reasons[0]})", reason, reasons)
    return Outcome(
        False,
        f"agent '{agent}' was skipped but not for reason {reason!r}; reasons: {reasons}",
        reason,
        reasons,
    )


@assertion(
    "agent.handoff",
    options=HandoffOptions,
    schema={"anyOf": [{"required": ["from"]}, {"required": ["to"]}]},
)
def agent_handoff(a: HandoffOptions, ctx: EvalContext) -> Outcome:
    """``agent:handoff {from, to}`` signals matching the given ends (either may be omitted)."""
    source, target = a.get("from"), a.get("to")
    handoffs = [p for p in ctx.trace.payloads("agent:handoff") if isinstance(p, Mapping)]
    hits = [
        p
        for p in handoffs
        if (source is None or p.get("from") == source) and (target is None or p.get("to") == target)
    ]
    ends = " → ".join(str(x) if x is not None else "*" for x in (source, target))
    seen = [f"{p.get('from')} → {p.get('to')}" for p in handoffs[:PREVIEW_ITEMS]]
    return count_outcome(f"handoffs {ends}", len(hits), a, seen)
