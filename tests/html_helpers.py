"""Results made in Python for the HTML report tests: exact numbers, any size."""

from __future__ import annotations

from signal_eval_cli.assertions import AssertionResult
from signal_eval_cli.results import CaseMetrics, CaseResult, DatasetResult
from signal_eval_cli.signals import Signal


def agent_signals(n: int, *, agents: int = 3, step_ms: float = 5.0) -> list[Signal]:
    """``n`` signals of a multi-agent run: activations, model calls, tool calls, state."""
    base = 1_700_000_000_000.0
    out = [Signal("harness:start", {"state": {"count": 0, "items": []}}, "s0", base)]
    i = 1
    while len(out) < n - 1:
        agent = f"agent-{i % agents}"
        t = base + len(out) * step_ms
        block = [
            Signal("agent:activated", {"agent": agent}, f"s{i}a", t, agent),
            Signal("provider:start", {"model": "m-1"}, f"s{i}p", t + 1, agent),
            Signal(
                "provider:end",
                {"model": "m-1", "usage": {"totalTokens": 42}, "durationMs": 2},
                f"s{i}q",
                t + 3,
                agent,
                f"s{i}p",
            ),
            Signal(
                "tool:call",
                {"id": f"t{i}", "name": "grep", "arguments": {"q": i}},
                f"s{i}t",
                t + 3,
                agent,
            ),
            Signal("tool:result", {"id": f"t{i}", "result": [i]}, f"s{i}r", t + 4, agent),
            Signal("state:count:changed", {"key": "count", "newValue": i}, f"s{i}c", t + 4, agent),
            Signal("agent:completed", {"agent": agent}, f"s{i}d", t + 5, agent),
        ]
        out += block
        i += 1
    out = out[: n - 1]
    out.append(Signal("harness:end", {"durationMs": n * step_ms}, "end", base + n * step_ms))
    return out


def case(
    case_id: str,
    passed: bool,
    *,
    signals: list[Signal] | None = None,
    tags: list[str] | None = None,
    latency: float = 100.0,
    cost: float = 0.001,
    error: str | None = None,
    outcomes: list[bool] | None = None,
    message: str = "",
) -> CaseResult:
    assertion = AssertionResult(
        {"type": "signal.trajectory", "patterns": ["harness:start", "never:seen"]}
        if not passed
        else {"type": "signal.exists", "pattern": "harness:start"},
        passed,
        message
        or (
            "matched 1 of 2 steps; step 2 'never:seen' not found after #0 'harness:start'"
            if not passed
            else "found"
        ),
    )
    return CaseResult(
        case_id,
        passed,
        [assertion],
        signals or [],
        None,
        CaseMetrics(latency_ms=latency, total_tokens=100, cost=cost),
        error=error,
        tags=tags or [],
        outcomes=outcomes,
    )


def dataset(cases: list[CaseResult], name: str = "synthetic") -> DatasetResult:
    return DatasetResult(
        name, cases, started_at="2026-01-01T00:00:00Z", completed_at="2026-01-01T00:00:01Z"
    )
