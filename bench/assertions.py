"""Evaluate assertions on a 1,000,000-signal trace, against one plain ``for`` loop over it.

Two traces, each with its own assertion list:

- the TypeScript reference's (``shared/peer-bench/ts-reference/bench.cjs``, ported exactly:
  its mulberry32 seed 42, 20 agents, 41% text deltas, tool calls, activations, state
  changes and custom signals, the ``milestone:half`` marker) with the reference's 26
  assertions; the reference engine took 1,094 ms for them on this machine (60x its loop);
- this bench's older mix (95% text deltas) with one assertion of every type.

Prints, for each, the evaluation time (trace indexing included) over the time of the
plain loop (``reference_vs_floor`` and ``assertions_vs_floor``): the reference's floor, a
``for`` loop that reads each signal's name and counts the tool calls (bench.cjs), ported
as it is; the loop that touches nothing is printed beside it, and the trace's memory
relative to the bare list of Signal objects. Times are CPU times. Targets: ≤ 5 and ≤ 2.

Run: .venv/bin/python bench/assertions.py [N]
"""

from __future__ import annotations

import gc
import random
import sys
import time
import tracemalloc
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

# bench/ itself must not be on the path: bench/html.py would shadow the stdlib's html
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from signal_eval_cli import Signal, Trace, evaluate_assertion, known_types  # noqa: E402
from signal_eval_cli.assertions import JudgeRequest, JudgeVerdict  # noqa: E402

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


# -- the TypeScript reference's trace (bench.cjs: buildTrace, mainAssertions) ---------------

REF_AGENTS = [f"agent-{i}" for i in range(20)]
REF_TOOLS = ["Read", "Grep", "Glob", "Edit", "Bash", "Write"]
REF_STATE_KEYS = ["plan", "files", "review", "progress", "notes"]
REF_WORDS = [
    "the",
    "patch",
    "looks",
    "good",
    "refactor",
    "module",
    "test",
    "passes",
    "fix",
    "import",
    "type",
    "error",
]
REF_CUSTOM = ["review:complete", "analysis:complete", "plan:updated", "task:done"]
REF_REPORT = (
    "## Summary\n"
    + "\n".join(
        f"- step {i}: updated src/mod-{i}.ts, files changed: {(i % 7) + 1}, tests ok"
        for i in range(40)
    )
    + "\nAll checks passed.\n"
)
_M32 = 0xFFFFFFFF


def mulberry32(seed: int) -> Any:
    """The reference's PRNG, bit for bit (JS int32 arithmetic on unsigned values)."""
    state = seed & _M32

    def rnd() -> float:
        nonlocal state
        state = (state + 0x6D2B79F5) & _M32
        t = ((state ^ (state >> 15)) * (1 | state)) & _M32
        t = ((t + (((t ^ (t >> 7)) * (61 | t)) & _M32)) & _M32) ^ t
        return ((t ^ (t >> 14)) & _M32) / 4294967296

    return rnd


def build_reference_signals(n: int) -> list[Signal]:
    """``buildTrace(n)`` of bench.cjs, then its ``milestone:half`` marker."""
    rnd = mulberry32(42)
    base = datetime(2026, 1, 1, tzinfo=timezone.utc)
    signals: list[Signal] = []

    def push(name: str, payload: Any, source: dict[str, Any]) -> None:
        i = len(signals)
        stamp = (base + timedelta(milliseconds=i * 3)).isoformat(timespec="milliseconds")
        extra = {"source": {"provider": source["provider"]}} if "provider" in source else None
        signals.append(
            Signal(
                name,
                payload,
                f"sig_{i:012x}",
                stamp.replace("+00:00", "Z"),
                agent=source.get("agent"),
                extra=extra,
            )
        )

    last = n - 2  # the report's text:complete and harness:end come last
    push("harness:start", {"input": {"task": "refactor the repo"}, "agents": 20}, {})
    turn = tool_id = 0
    trigger = "harness:start"
    state_values = dict.fromkeys(REF_STATE_KEYS, 0)
    while True:
        agent = REF_AGENTS[turn % 20]
        src = {"agent": agent}
        psrc = {"agent": agent, "provider": "claude"}
        steps: list[tuple[str, Any, dict[str, Any]]] = []
        if turn % 5000 == 999:
            skipped = {"agent": "agent-19", "reason": "guard: nothing to review"}
            steps.append(("agent:skipped", skipped, {"agent": "agent-19"}))
        steps.append(("agent:activated", {"agent": agent, "trigger": trigger}, src))
        steps.append(("provider:start", {"model": "claude-sonnet", "agent": agent}, psrc))
        words = []
        for _ in range(3 + int(rnd() * 7)):
            word = REF_WORDS[int(rnd() * len(REF_WORDS))]
            words.append(word)
            steps.append(("text:delta", {"content": f"{word} "}, psrc))
        steps.append(("text:complete", {"content": " ".join(words)}, psrc))
        for _ in range(1 if rnd() < 0.7 else 2):
            call_id = f"tc_{tool_id}"
            tool_id += 1
            tool = REF_TOOLS[int(rnd() * len(REF_TOOLS))]
            file_path = f"src/mod-{int(rnd() * 500)}.ts"
            call = {"id": call_id, "name": tool, "input": {"file_path": file_path}}
            steps.append(("tool:call", call, psrc))
            result = {"id": call_id, "name": tool, "result": f"ok: {file_path}"}
            steps.append(("tool:result", result, psrc))
        tokens_in = 200 + int(rnd() * 2000)
        tokens_out = 20 + int(rnd() * 400)
        end = {
            "usage": {"inputTokens": tokens_in, "outputTokens": tokens_out},
            "cost": (tokens_in * 3 + tokens_out * 15) / 1e6,
            "durationMs": 50 + int(rnd() * 900),
        }
        steps.append(("provider:end", end, psrc))
        key = REF_STATE_KEYS[int(rnd() * len(REF_STATE_KEYS))]
        old = state_values[key]
        state_values[key] = old + 1
        change = {"key": key, "oldValue": old, "newValue": old + 1, "agent": agent}
        steps.append((f"state:{key}:changed", change, src))
        custom = REF_CUSTOM[turn % 4]
        if custom == "review:complete":
            approved = rnd() < 0.8
            score = _js_round(rnd() * 100)
            payload = {
                "agent": agent,
                "approved": approved,
                "score": score / 100 if score % 100 else score // 100,
            }
        else:
            payload = {"agent": agent, "turn": turn}
        steps.append((custom, payload, src))
        if len(signals) + len(steps) > last:
            for step in steps[: last - len(signals)]:
                push(*step)
            break
        for step in steps:
            push(*step)
        trigger = f"state:{key}:changed"
        turn += 1
    push("text:complete", {"content": REF_REPORT}, {"agent": "agent-0", "provider": "claude"})
    final_state = {
        "plan": {"steps": ["analyze", "edit", "test", "review"], "version": state_values["plan"]},
        "files": [f"src/mod-{k}.ts" for k in range(100)],
        "review": {"approved": True, "score": 0.92},
        "iterations": turn,
        "progress": 1,
    }
    push("harness:end", {"durationMs": n * 3, "state": final_state}, {})
    middle = n >> 1
    while signals[middle].name != "text:delta":
        middle += 1
    marker = signals[middle]
    marker.name, marker.payload = "milestone:half", {"at": middle}
    return signals


def _js_round(x: float) -> int:
    """``Math.round``: halves round up (Python's ``round`` rounds them to even)."""
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)


def reference_assertions(signals: list[Signal]) -> list[dict[str, Any]]:
    """``mainAssertions`` of bench.cjs: 26, one per type of the reference's list."""
    provider_count = sum(1 for s in signals if s.name.startswith("provider:"))
    return [
        {
            "type": "signal.contains",
            "pattern": "tool:*",
            "payload": {"name": "Edit", "input": {"file_path": {"endsWith": ".ts"}}},
        },
        {"type": "signal.not", "pattern": "agent:error"},
        {"type": "signal.count", "pattern": "provider:*", "exact": provider_count},
        {
            "type": "signal.trajectory",
            "patterns": [
                "harness:start",
                {"pattern": "agent:activated", "payload": {"agent": "agent-3"}},
                "tool:call",
                {"pattern": "review:complete", "payload": {"approved": True}},
                "harness:end",
            ],
            "strict": False,
        },
        {"type": "signal.first", "pattern": "agent:activated", "payload": {"agent": "agent-0"}},
        {"type": "signal.last", "pattern": "harness:*", "payload": {"durationMs": {"gt": 0}}},
        {"type": "snapshot.final", "path": "review.score", "value": {"gte": 0.8}},
        {"type": "agent.activated", "agentId": "agent-7", "min": 1},
        {"type": "agent.completed", "agentId": "agent-7"},
        {"type": "agent.causedBy", "agentId": "agent-3", "triggerPattern": "state:*:changed"},
        {"type": "agent.emitted", "agentId": "agent-12", "signal": "review:*"},
        {"type": "agent.skipped", "agentId": "agent-19", "reason": "guard: nothing to review"},
        {"type": "metric.latency.max", "value": 10_000_000},
        {"type": "metric.cost.max", "value": 10_000},
        {"type": "metric.tokens.max", "value": 1e10, "field": "total"},
        {"type": "metric.activations", "min": 1},
        {"type": "output.contains", "text": "All checks passed"},
        {"type": "output.matches", "regex": "files? changed: \\d+", "flags": "i"},
        {"type": "output.length", "min": 100, "max": 100_000},
        {"type": "tool.called", "name": "Edit", "min": 1},
        {"type": "tool.notCalled", "name": "DeleteFile"},
        {"type": "tool.calledWith", "name": "Edit", "args": {"file_path": "src/mod-17.ts"}},
        {"type": "tool.sequence", "tools": ["Read", "Grep", "Edit", "Bash", "Write"]},
        {
            "type": "all",
            "assertions": [
                {"type": "signal.contains", "pattern": "harness:start"},
                {"type": "tool.called", "name": "Read"},
            ],
        },
        {
            "type": "any",
            "assertions": [
                {"type": "signal.contains", "pattern": "agent:error"},
                {"type": "signal.contains", "pattern": "review:complete"},
            ],
        },
        {"type": "not", "assertion": {"type": "signal.contains", "pattern": "agent:error"}},
    ]


REFERENCE_EXTRAS: list[dict[str, Any]] = [  # bench.cjs extraAssertions: timed apart there too
    {
        "type": "snapshot.at",
        "afterSignal": "milestone:half",
        "path": "provider.text.deltaCount",
        "value": {"gte": 0},
    },
    {"type": "output.notContains", "text": "Traceback"},
]


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
    {"type": "tool.failed", "name": "Bash"},
    {"type": "tool.parallel", "tools": ["Read", "Edit"]},
    {"type": "agent.handoff", "from": "agent1", "to": "agent2"},
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
    """The least CPU time of ``runs`` calls: on a shared machine, wall time mostly
    measures the other processes."""
    times = []
    for _ in range(runs):
        gc.collect()
        started = time.process_time()
        fn()
        times.append(time.process_time() - started)
    return min(times)


def evaluate_all(signals: list[Signal], assertions: list[dict[str, Any]]) -> list[bool]:
    """Index the trace and evaluate every assertion once: the verdicts."""
    trace = Trace(signals)
    judge = ScriptedJudge()
    return [evaluate_assertion(a, trace, judge=judge).passed for a in assertions]


# Nothing in the older mix is skipped, handed off, failed, run in parallel or JSON: these
# scan the whole trace and fail.
EXPECTED_TO_FAIL = {"agent.skipped", "output.json", "tool.failed", "tool.parallel", "agent.handoff"}


def check_passed(assertions: list[dict[str, Any]], verdicts: list[bool]) -> None:
    for a, passed in zip(assertions, verdicts, strict=True):
        if not passed and a["type"] not in EXPECTED_TO_FAIL:
            raise AssertionError(f"{a['type']} failed: {a}")


def floor_of(signals: list[Signal]) -> float:
    """The reference's floor, ported as it is (bench.cjs: ``for (...) if
    (signals[i].name === "tool:call") c++``): one plain loop that reads each signal's name."""

    def floor() -> int:
        count = 0
        for signal in signals:
            if signal.name == "tool:call":
                count += 1
        return count

    return best_of(5, floor)


def bare_loop_of(signals: list[Signal]) -> float:
    """A loop that touches nothing (``for _ in signals: pass``): printed beside the floor."""

    def bare() -> None:
        for _signal in signals:
            pass

    return best_of(5, bare)


def print_floor(signals: list[Signal], floor_s: float) -> None:
    bare_s = bare_loop_of(signals)
    print(f"floor (plain for loop reading each name, as the reference's): {floor_s * 1000:.1f} ms")
    print(f"bare loop (touching nothing): {bare_s * 1000:.1f} ms")


def reference_figures(n: int) -> None:
    """The reference's trace and assertions: the total, each type, and the extras."""
    signals = build_reference_signals(n)
    assertions = reference_assertions(signals)
    check_passed(assertions, evaluate_all(signals, assertions))
    floor_s = floor_of(signals)
    index_s = best_of(3, lambda: Trace(signals))
    eval_s = best_of(3, lambda: evaluate_all(signals, assertions))
    mix = Counter(s.name for s in signals)
    print(f"== the TypeScript reference's trace: {len(signals):,} signals, seed 42")
    print("mix: " + ", ".join(f"{name} {count:,}" for name, count in mix.most_common(8)))
    print_floor(signals, floor_s)
    print(f"indexing the trace: {index_s * 1000:.1f} ms; then each type on a fresh trace:")
    for a in [*assertions, *REFERENCE_EXTRAS]:
        alone = best_of(3, lambda a=a: evaluate_all(signals, [a])) - index_s
        note = ""
        if a in REFERENCE_EXTRAS:
            verdict = "passes" if evaluate_all(signals, [a])[0] else "fails"
            note = f"  (extra, not in the total; {verdict})"
        print(f"  {a['type']:20s} {alone * 1000:8.1f} ms {alone / floor_s:6.2f}x{note}")
    print(f"index + evaluate the reference's {len(assertions)}: {eval_s * 1000:.1f} ms")
    print(f"reference_ms: {eval_s * 1000:.0f}  (the TypeScript reference: 1094 ms)")
    print(f"reference_vs_bare_loop: {eval_s / bare_loop_of(signals):.2f}")
    print(f"reference_vs_floor: {eval_s / floor_s:.2f}")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    covered = {a["type"] for a in ASSERTIONS}
    scenario_only = {"file-exists", "file-contains", "diff-match"}  # need a workspace
    scenario_only |= {"tests.count", "tests.pass", "tests.stillPass"}  # and its test runs
    missing = set(known_types()) - covered - scenario_only
    assert not missing, f"bench misses types: {sorted(missing)}"
    reference_figures(n)
    gc.collect()

    tracemalloc.start()
    signals = build_signals(n)
    bare = tracemalloc.get_traced_memory()[0]
    trace = Trace(signals)
    for a in ASSERTIONS:  # warm every lazily built index, then measure what the trace holds
        evaluate_assertion(a, trace, judge=ScriptedJudge())
    with_trace = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del trace

    floor_s = floor_of(signals)
    check_passed(ASSERTIONS, evaluate_all(signals, ASSERTIONS))
    eval_s = best_of(3, lambda: evaluate_all(signals, ASSERTIONS))
    mix = Counter(
        s.name
        if not s.name.startswith(("state:", "agent")) or s.name.startswith("agent:")
        else s.name.split(":")[0] + ":*"
        for s in signals
    )
    print(f"== this bench's older mix: {len(signals):,} signals, assertion types: {len(covered)}")
    print("mix: " + ", ".join(f"{name} {count:,}" for name, count in mix.most_common(8)))
    print_floor(signals, floor_s)
    print(f"index + evaluate all types: {eval_s * 1000:.1f} ms")
    print(f"trace_memory_vs_signals: {with_trace / bare:.3f}")
    print(f"assertions_vs_floor: {eval_s / floor_s:.2f}")


if __name__ == "__main__":
    main()
