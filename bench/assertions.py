"""Evaluate one assertion of every type on a 1,000,000-signal trace.

Prints the evaluation time (trace indexing included) divided by the time of one
plain Python ``for`` loop over the same list of signals, and the trace's memory
relative to the bare list of Signal objects. Targets: ≤ 5 and ≤ 2.

Run: .venv/bin/python bench/assertions.py [N]
"""

from __future__ import annotations

import gc
import random
import sys
import time
import tracemalloc
from collections import Counter
from typing import Any

from signal_eval_cli import Signal, Trace, evaluate_assertion, known_types
from signal_eval_cli.assertions import JudgeRequest, JudgeVerdict

AGENTS = [f"agent{i}" for i in range(20)]
TOOLS = ["Read", "Edit", "Write", "Bash", "Grep"]


def build_signals(n: int, seed: int = 7) -> list[Signal]:
    """A realistic mix for 20 agents: each activation makes 1-3 streamed model calls
    (40-160 text deltas each, as real token streams are), calls a tool half the time,
    changes state and emits a custom signal."""
    rng = random.Random(seed)
    signals: list[Signal] = [
        Signal("harness:start", {"agents": AGENTS, "state": {"step": 0}}, "s0")
    ]
    i = 0
    while len(signals) < n - 1:
        i += 1
        agent = AGENTS[i % len(AGENTS)]
        signals.append(
            Signal(
                "agent:activated",
                {"agent": agent, "trigger": "harness:start"},
                f"a{i}",
                agent=agent,
            )
        )
        for call in range(rng.randint(1, 3)):
            signals.append(
                Signal(
                    "provider:start",
                    {"provider": "mock", "model": "m"},
                    f"p{i}.{call}",
                    agent=agent,
                )
            )
            for _ in range(rng.randint(40, 160)):
                signals.append(Signal("text:delta", {"content": "tok "}, agent=agent))
            signals.append(
                Signal("text:complete", {"content": f"answer {i} from {agent}"}, agent=agent)
            )
            if rng.random() < 0.5:
                tool = rng.choice(TOOLS)
                signals.append(
                    Signal(
                        "tool:call",
                        {
                            "id": f"t{i}.{call}",
                            "name": tool,
                            "input": {"file_path": f"src/f{i}.ts"},
                        },
                        agent=agent,
                    )
                )
                signals.append(
                    Signal("tool:result", {"id": f"t{i}.{call}", "result": "ok"}, agent=agent)
                )
            signals.append(
                Signal(
                    "provider:end",
                    {
                        "usage": {"inputTokens": 100, "outputTokens": 20},
                        "cost": 0.001,
                        "durationMs": 5,
                    },
                    agent=agent,
                )
            )
        signals.append(
            Signal(
                f"state:{agent}:changed",
                {"key": agent, "oldValue": i - 1, "newValue": i, "agent": agent},
                agent=agent,
            )
        )
        signals.append(Signal(f"{agent}:done", {"ok": True}, agent=agent))
    del signals[n - 1 :]
    signals.append(
        Signal("harness:end", {"durationMs": 1234, "activations": i, "state": {"step": i}}, "end")
    )
    return signals


class ScriptedJudge:
    def judge(self, request: JudgeRequest) -> JudgeVerdict:
        return JudgeVerdict({c: 1.0 for c in request.criteria})


ASSERTIONS: list[dict[str, Any]] = [
    {"type": "signal.contains", "pattern": "tool:call", "payload": {"name": "Edit"}},
    {"type": "signal.not", "pattern": "error:*"},
    {"type": "signal.count", "pattern": "agent:activated", "min": 1},
    {
        "type": "signal.trajectory",
        "patterns": [
            "harness:start",
            {"pattern": "agent:activated", "payload": {"agent": "agent3"}},
            "agent3:done",
            "harness:end",
        ],
    },
    {"type": "signal.first", "pattern": "agent:*", "payload": {"agent": "agent1"}},
    {"type": "signal.last", "pattern": "harness:*", "payload": {"durationMs": {"gt": 0}}},
    {"type": "snapshot.at", "afterSignal": "agent5:done", "path": "agent5", "value": {"gte": 1}},
    {"type": "snapshot.final", "path": "step", "exists": True},
    {"type": "agent.activated", "agentId": "agent7", "min": 2},
    {"type": "agent.completed", "agentId": "agent2"},
    {"type": "agent.causedBy", "agentId": "agent4", "triggerPattern": "harness:*"},
    {"type": "agent.emitted", "agentId": "agent9", "signal": "agent9:done"},
    {"type": "agent.skipped", "agentId": "agent1"},
    {"type": "metric.latency.max", "value": 30000},
    {"type": "metric.latency.min", "value": 1},
    {"type": "metric.cost.max", "value": 1e9},
    {"type": "metric.cost.min", "value": 0},
    {"type": "metric.tokens.max", "value": 1e12, "field": "total"},
    {"type": "metric.tokens.min", "value": 1, "field": "input"},
    {"type": "metric.activations", "min": 1},
    {"type": "output.contains", "text": "answer"},
    {"type": "output.notContains", "text": "error"},
    {"type": "output.matches", "regex": "answer \\d+", "flags": "i"},
    {"type": "output.json"},
    {"type": "output.length", "min": 1, "max": 1000},
    {"type": "tool.called", "name": "Edit", "min": 1},
    {"type": "tool.notCalled", "name": "Delete"},
    {"type": "tool.calledWith", "name": "Write", "args": {"file_path": {"endsWith": ".ts"}}},
    {"type": "tool.sequence", "tools": ["Read", "Edit", "Bash"]},
    {"type": "llm.judge", "criteria": ["correct"], "minScore": 0.5},
    {
        "type": "all",
        "assertions": [
            {"type": "signal.contains", "pattern": "harness:end"},
            {"type": "output.contains", "text": "from"},
        ],
    },
    {
        "type": "any",
        "assertions": [
            {"type": "signal.contains", "pattern": "nope"},
            {"type": "tool.called", "name": "Bash"},
        ],
    },
    {"type": "not", "assertion": {"type": "signal.contains", "pattern": "error:**"}},
]


def best_of(runs: int, fn: Any) -> float:
    times = []
    for _ in range(runs):
        gc.collect()
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    covered = {a["type"] for a in ASSERTIONS}
    scenario_only = {"file-exists", "file-contains", "diff-match"}  # need a workspace
    missing = set(known_types()) - covered - scenario_only
    assert not missing, f"bench misses types: {sorted(missing)}"

    tracemalloc.start()
    signals = build_signals(n)
    bare = tracemalloc.get_traced_memory()[0]
    trace = Trace(signals)
    for a in ASSERTIONS:  # warm every lazily built index, then measure what the trace holds
        evaluate_assertion(a, trace, judge=ScriptedJudge())
    with_trace = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del trace

    def floor() -> None:
        for _signal in signals:
            pass

    def evaluate() -> None:
        trace = Trace(signals)
        judge = ScriptedJudge()
        for a in ASSERTIONS:
            result = evaluate_assertion(a, trace, judge=judge)
            if not result.passed and a["type"] not in ("agent.skipped", "output.json"):
                raise AssertionError(f"{a['type']}: {result.message}")

    floor_s = best_of(5, floor)
    eval_s = best_of(3, evaluate)
    mix = Counter(
        s.name
        if not s.name.startswith(("state:", "agent")) or s.name.startswith("agent:")
        else s.name.split(":")[0] + ":*"
        for s in signals
    )
    print(f"signals: {len(signals):,}  assertion types: {len(covered)}")
    print("mix: " + ", ".join(f"{name} {count:,}" for name, count in mix.most_common(8)))
    print(f"floor (plain for loop): {floor_s * 1000:.1f} ms")
    print(f"index + evaluate all types: {eval_s * 1000:.1f} ms")
    print(f"trace_memory_vs_signals: {with_trace / bare:.3f}")
    print(f"assertions_vs_floor: {eval_s / floor_s:.2f}")


if __name__ == "__main__":
    main()
