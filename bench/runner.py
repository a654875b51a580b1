"""Runner benchmarks (not tests): scheduling efficiency and per-case overhead.

(a) 2,000 cases whose harness awaits 50 ms (``ctx.sleep``), concurrency 200: the
    ideal wall time is 2,000 / 200 × 50 ms = 0.5 s; prints ``wall_vs_ideal``
    (target ≤ 1.2).
(b) 10,000 cases of a sync harness that emits 20 signals and returns at once,
    5 assertions each; prints ``overhead_ms_per_case`` (target ≤ 0.5 ms) as the
    last line.

Run: ``.venv/bin/python bench/runner.py`` (``make bench`` runs every bench).
"""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Any

from signal_eval_cli import EvalCase, EvalDataset, HarnessContext, RunOptions, run_dataset

SLEEP_CASES, SLEEP_S, CONCURRENCY = 2_000, 0.05, 200
FAST_CASES, SIGNALS_PER_CASE = 10_000, 20

ASSERTIONS: list[dict[str, Any]] = [
    {"type": "signal.contains", "pattern": "agent:activated", "payload": {"agent": "worker"}},
    {"type": "signal.not", "pattern": "error:*"},
    {"type": "signal.count", "pattern": "step:*", "min": 10},
    {
        "type": "signal.trajectory",
        "patterns": ["harness:start", "agent:activated", "step:done", "harness:end"],
    },
    {"type": "metric.latency.max", "value": 1000},
]


async def sleeping(input: Any, ctx: HarnessContext) -> None:
    """Harness (a): one case that waits 50 ms the cancellation-aware way."""
    ctx.emit("harness:start", {"state": input})
    await ctx.sleep(SLEEP_S)
    ctx.emit("harness:end", {"durationMs": SLEEP_S * 1000})


def emitting(input: Any, ctx: HarnessContext) -> None:
    """Harness (b): a plain function that emits 20 signals and returns."""
    start = ctx.emit("harness:start", {"state": input})
    activated = ctx.emit("agent:activated", {"agent": "worker", "trigger": "harness:start"})
    for i in range(SIGNALS_PER_CASE - 4):
        ctx.emit(f"step:{i}", {"i": i}, agent="worker", parent=activated)
    ctx.emit("step:done", {"n": SIGNALS_PER_CASE - 4}, agent="worker", parent=activated)
    ctx.emit("harness:end", {"durationMs": 1.0, "activations": 1}, parent=start)


def dataset(n: int, assertions: list[dict[str, Any]]) -> EvalDataset:
    cases = [EvalCase(id=f"case-{i}", assertions=[], input={"n": i}) for i in range(n)]
    return EvalDataset(name="bench", cases=cases, default_assertions=assertions)


def bench_concurrency() -> float:
    data = dataset(SLEEP_CASES, [{"type": "signal.contains", "pattern": "harness:end"}])
    options = RunOptions(concurrency=CONCURRENCY)
    started = time.perf_counter()
    result = asyncio.run(run_dataset(sleeping, data, options))
    wall = time.perf_counter() - started
    assert result.passed_cases == SLEEP_CASES, result.failed_cases
    ideal = SLEEP_CASES / CONCURRENCY * SLEEP_S
    print(
        f"concurrency: {SLEEP_CASES} cases × {SLEEP_S * 1000:.0f} ms at {CONCURRENCY}: {wall:.3f} s"
    )
    return wall / ideal


def bench_overhead() -> float:
    data = dataset(FAST_CASES, ASSERTIONS)
    options = RunOptions(concurrency=CONCURRENCY)
    asyncio.run(run_dataset(emitting, dataset(200, ASSERTIONS), options))  # warm caches
    gc.collect()
    started = time.perf_counter()
    result = asyncio.run(run_dataset(emitting, data, options))
    wall = time.perf_counter() - started
    assert result.passed_cases == FAST_CASES, result.cases[0].failed_assertions
    assert all(len(c.signals) == SIGNALS_PER_CASE for c in result.cases)
    print(f"overhead: {FAST_CASES} cases × {SIGNALS_PER_CASE} signals × 5 assertions: {wall:.3f} s")
    return wall / FAST_CASES * 1000


def main() -> None:
    ratio = bench_concurrency()
    print(f"wall_vs_ideal: {ratio:.3f}")
    overhead = bench_overhead()
    print(f"overhead_ms_per_case: {overhead:.3f}")


if __name__ == "__main__":
    main()
