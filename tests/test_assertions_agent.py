"""agent.activated / completed / causedBy / emitted / skipped."""

from __future__ import annotations

import pytest
from conftest import fails, passes, sig, trace

from signal_eval_cli import Trace


def run() -> Trace:
    return trace(
        ("harness:start", {}),
        ("agent:activated", {"agent": "reviewer", "trigger": "harness:start"}, "reviewer"),
        ("review:complete", {"ok": True}, "reviewer"),
        ("agent:activated", {"agent": "fixer", "trigger": "review:complete"}, "fixer"),
        ("fix:applied", {}, "fixer"),
        ("agent:activated", {"agent": "reviewer", "trigger": "fix:applied"}, "reviewer"),
        ("agent:error", {"agent": "fixer", "error": "boom"}, "fixer"),
        ("agent:skipped", {"agent": "judge", "reason": "guard"}),
        ("agent:skipped", {"agent": "judge", "reason": "budget"}),
        ("agent:activated", {"agent": "judge", "trigger": "fix:applied"}, "ignored-source"),
        ("harness:end", {}),
    )


# -- agent.activated ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "bounds", "ok"),
    [
        ("reviewer", {}, True),  # no bounds: at least once
        ("nobody", {}, False),
        ("reviewer", {"count": 2}, True),
        ("reviewer", {"count": 1}, False),
        ("reviewer", {"exact": 2}, True),
        ("reviewer", {"min": 2}, True),
        ("reviewer", {"min": 3}, False),
        ("reviewer", {"max": 1}, False),
        ("reviewer", {"max": 2}, True),
        ("nobody", {"max": 0}, True),  # max alone: no implicit minimum
        ("nobody", {"count": 0}, True),
        ("reviewer", {"count": 0}, False),
        ("reviewer", {"count": 2, "min": 5}, True),  # count overrides min/max
        ("reviewer", {"count": 2, "max": 0}, True),
        ("fixer", {"min": 1, "max": 1}, True),
    ],
)
def test_agent_activated(agent: str, bounds: dict[str, int], ok: bool) -> None:
    assertion = {"type": "agent.activated", "agentId": agent, **bounds}
    if ok:
        passes(assertion, run())
    else:
        result = fails(assertion, run())
        assert agent in result.message


def test_agent_activated_reads_payload_agent_not_source() -> None:
    # the judge activation carries source.agent "ignored-source"
    passes({"type": "agent.activated", "agentId": "judge", "exact": 1}, run())
    fails({"type": "agent.activated", "agentId": "ignored-source"}, run())


def test_agent_activated_failure_message_has_count() -> None:
    result = fails({"type": "agent.activated", "agentId": "reviewer", "count": 3}, run())
    assert "exactly 3" in result.message and "found 2" in result.message
    assert result.actual == 2


# -- agent.completed --------------------------------------------------------------------


def test_agent_completed() -> None:
    passes({"type": "agent.completed", "agentId": "reviewer"}, run())
    errored = fails({"type": "agent.completed", "agentId": "fixer"}, run())
    assert "error" in errored.message and "boom" in errored.message
    never = fails({"type": "agent.completed", "agentId": "nobody"}, run())
    assert "never activated" in never.message


def test_agent_completed_error_without_activation_is_still_never_activated() -> None:
    t = trace(("agent:error", {"agent": "x", "error": "e"}))
    assert "never activated" in fails({"type": "agent.completed", "agentId": "x"}, t).message


def test_agent_completed_error_of_another_agent_does_not_count() -> None:
    t = trace(("agent:activated", {"agent": "a"}), ("agent:error", {"agent": "b", "error": "e"}))
    passes({"type": "agent.completed", "agentId": "a"}, t)


# -- agent.causedBy ------------------------------------------------------------------------


def test_caused_by_any_activation() -> None:
    passes(
        {"type": "agent.causedBy", "agentId": "reviewer", "triggerPattern": "harness:start"},
        run(),
    )
    # the second activation (not the first) was triggered by fix:applied
    passes({"type": "agent.causedBy", "agentId": "reviewer", "triggerPattern": "fix:*"}, run())
    passes({"type": "agent.causedBy", "agentId": "fixer", "triggerPattern": "*:complete"}, run())


def test_caused_by_fails_listing_the_triggers() -> None:
    result = fails(
        {"type": "agent.causedBy", "agentId": "reviewer", "triggerPattern": "deploy:*"}, run()
    )
    assert "deploy:*" in result.message
    assert "harness:start" in result.message and "fix:applied" in result.message
    assert result.actual == ["harness:start", "fix:applied"]


def test_caused_by_trigger_glob_is_whole_name() -> None:
    fails({"type": "agent.causedBy", "agentId": "fixer", "triggerPattern": "review"}, run())
    fails({"type": "agent.causedBy", "agentId": "fixer", "triggerPattern": "review:*:x"}, run())


def test_caused_by_a_trigger_that_is_no_name_is_no_trigger() -> None:
    t = trace(("agent:activated", {"agent": "w", "trigger": 5}, "w"))
    result = fails({"type": "agent.causedBy", "agentId": "w", "triggerPattern": "**"}, t)
    assert (result.errored, result.actual) == (False, [None])


def test_caused_by_reads_the_name_of_a_trigger_recorded_whole() -> None:
    t = trace(
        ("agent:activated", {"agent": "w", "trigger": {"name": "task:ready", "id": "s0"}}, "w")
    )
    passes({"type": "agent.causedBy", "agentId": "w", "triggerPattern": "task:*"}, t)


def test_caused_by_never_activated() -> None:
    result = fails({"type": "agent.causedBy", "agentId": "nobody", "triggerPattern": "**"}, run())
    assert "never activated" in result.message


def test_caused_by_reads_payload_trigger_not_the_parent_link() -> None:
    """Issue 2: causedBy reads ``payload.trigger``; a parent link alone is not a trigger."""
    t = trace(
        ("task:ready", {}),
        sig("agent:activated", {"agent": "worker"}, "worker", parent="s0"),
    )
    fails({"type": "agent.causedBy", "agentId": "worker", "triggerPattern": "task:*"}, t)
    with_trigger = trace(
        ("task:ready", {}),
        sig("agent:activated", {"agent": "worker", "trigger": "task:ready"}, "worker", parent="s0"),
    )
    passes(
        {"type": "agent.causedBy", "agentId": "worker", "triggerPattern": "task:*"}, with_trigger
    )


def test_caused_by_without_any_trigger_info_fails() -> None:
    t = trace(("agent:activated", {"agent": "worker"}))
    fails({"type": "agent.causedBy", "agentId": "worker", "triggerPattern": "**"}, t)


# -- agent.emitted -----------------------------------------------------------------------


def test_agent_emitted_reads_source_agent() -> None:
    passes({"type": "agent.emitted", "agentId": "reviewer", "signal": "review:complete"}, run())
    passes({"type": "agent.emitted", "agentId": "fixer", "signal": "fix:*"}, run())
    # fixer did not emit review:complete (reviewer did)
    result = fails(
        {"type": "agent.emitted", "agentId": "fixer", "signal": "review:complete"}, run()
    )
    assert "never emitted 'review:complete'" in result.message
    assert "fix:applied" in result.message  # what it did emit


def test_agent_emitted_ignores_payload_agent() -> None:
    # agent:skipped carries payload.agent "judge" but no source.agent
    result = fails({"type": "agent.emitted", "agentId": "judge", "signal": "agent:skipped"}, run())
    assert "it emitted: nothing" in result.message


# -- agent.skipped ---------------------------------------------------------------------


def test_agent_skipped() -> None:
    passes({"type": "agent.skipped", "agentId": "judge"}, run())
    passes({"type": "agent.skipped", "agentId": "judge", "reason": "guard"}, run())
    passes({"type": "agent.skipped", "agentId": "judge", "reason": "budget"}, run())  # any skip
    wrong = fails({"type": "agent.skipped", "agentId": "judge", "reason": "Guard"}, run())
    assert "not for reason 'Guard'" in wrong.message
    assert "guard" in wrong.message and "budget" in wrong.message
    never = fails({"type": "agent.skipped", "agentId": "reviewer"}, run())
    assert "never skipped" in never.message


def test_agent_skipped_reason_must_be_exact() -> None:
    t = trace(("agent:skipped", {"agent": "a", "reason": "guard returned false"}))
    fails({"type": "agent.skipped", "agentId": "a", "reason": "guard"}, t)
    passes({"type": "agent.skipped", "agentId": "a", "reason": "guard returned false"}, t)
