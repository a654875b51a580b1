"""Running cases and datasets: concurrency, timeouts, filters, fail-fast, repeats.

A harness that raises, hangs or times out yields a failed case carrying the
error; the other cases go on. Results come back in dataset order whatever the
completion order.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from signal_eval_cli.assertions import EvalContext, Judge, evaluate_assertions
from signal_eval_cli.dataset import EvalCase, EvalDataset
from signal_eval_cli.harness.protocol import HarnessContext, collect
from signal_eval_cli.results import CaseMetrics, CaseResult, DatasetResult
from signal_eval_cli.signals import Trace, now_iso

__all__ = ["DEFAULT_TIMEOUT_MS", "RunOptions", "run_case", "run_dataset", "select_cases"]

DEFAULT_TIMEOUT_MS = 60_000.0


@dataclass
class RunOptions:
    """Options of :func:`run_dataset` (and :func:`run_case`, which uses a few)."""

    parallel: bool = True
    concurrency: int = 4
    timeout: float | None = None
    """Milliseconds; used when neither the case nor the dataset sets one."""
    tags: Sequence[str] = ()
    case_ids: Sequence[str] = ()
    fail_fast: bool = False
    """Stop starting new cases after the first failure; running cases finish."""
    repeat: int | None = None
    params: dict[str, Any] = field(default_factory=dict)
    judge: Judge | None = None
    judge_model: str | None = None
    on_case_complete: Callable[[CaseResult], None] | None = None
    semaphore: asyncio.Semaphore | None = None
    """Share one limit across several datasets (a matrix); else one is made."""
    executor: Executor | None = None
    """Threads for sync harnesses; else :func:`run_dataset` makes one per run, sized to
    ``concurrency`` (the loop's default pool has only ``cpu_count + 4`` threads, which
    would silently cap the concurrency of sync harnesses that block on I/O)."""


def select_cases(dataset: EvalDataset, options: RunOptions) -> list[EvalCase]:
    """``only`` first, then tags (any overlap), then case ids."""
    cases = dataset.cases
    if any(c.only for c in cases):
        cases = [c for c in cases if c.only]
    if options.tags:
        wanted = set(options.tags)
        cases = [c for c in cases if wanted & set(c.tags)]
    if options.case_ids:
        ids = set(options.case_ids)
        cases = [c for c in cases if c.id in ids]
    return cases


if sys.version_info >= (3, 11):

    async def _within(run: Coroutine[Any, Any, Any], seconds: float) -> bool:
        """Run ``run`` in this task, cancelled after ``seconds``; True if it timed out.

        ``asyncio.timeout`` needs no extra task per case (``wait_for`` makes one), and
        ``expired()`` tells our deadline from a ``TimeoutError`` the harness raised itself.
        """
        deadline = asyncio.timeout(seconds)
        try:
            async with deadline:
                await run
        except TimeoutError:
            if deadline.expired():
                return True
            raise
        return False

else:  # pragma: no cover - Python 3.10

    async def _within(run: Coroutine[Any, Any, Any], seconds: float) -> bool:
        try:
            await asyncio.wait_for(run, seconds)
        except asyncio.TimeoutError:
            return True
        return False


async def _run_once(
    harness: Any,
    case: EvalCase,
    assertions: list[dict[str, Any]],
    timeout_ms: float,
    options: RunOptions,
) -> CaseResult:
    ctx = HarnessContext(case.id, dict(options.params), metadata=dict(case.metadata))
    started = time.perf_counter()
    error: str | None = None
    try:
        timed_out = await _within(
            collect(harness, case.input, ctx, executor=options.executor), timeout_ms / 1000
        )
    except Exception as exc:  # the harness's failure is the case's failure, not ours
        timed_out = False
        error = f"{type(exc).__name__}: {exc}"
    if timed_out:
        ctx.cancelled.set()
        error = f"timed out after {timeout_ms:g} ms"
    wall_ms = (time.perf_counter() - started) * 1000
    # A timed-out sync harness may still be emitting from its thread: freeze what we have.
    signals = ctx.signals if not timed_out else list(ctx.signals)
    trace = Trace(signals, case.input)
    results = []
    if error is None:
        eval_ctx = EvalContext(trace, judge=options.judge, judge_model=options.judge_model)
        if options.judge is not None and any("llm.judge" in str(a) for a in assertions):
            results = await asyncio.to_thread(evaluate_assertions, assertions, eval_ctx)
        else:
            results = evaluate_assertions(assertions, eval_ctx)
    return CaseResult(
        case_id=case.id,
        name=case.name,
        passed=error is None and all(r.passed for r in results),
        assertions=results,
        signals=signals,
        final_state=trace.final_state,
        metrics=CaseMetrics.from_trace(trace, wall_ms),
        duration_ms=wall_ms,
        error=error,
        tags=list(case.tags),
    )


async def run_case(
    harness: Any,
    case: EvalCase,
    options: RunOptions | None = None,
    *,
    assertions: list[dict[str, Any]] | None = None,
    default_timeout: float | None = None,
    repeat: int | None = None,
) -> CaseResult:
    """Run one case (``repeat`` times, independently) and evaluate its assertions.

    With repeats the result carries every outcome; it passes only when all runs
    pass (pass^k), and the details shown are those of the first failing run.
    """
    options = options or RunOptions()
    if case.skip:
        return CaseResult(case.id, passed=True, name=case.name, skipped=True, tags=list(case.tags))
    checks = case.assertions if assertions is None else assertions
    timeout = case.timeout or default_timeout or options.timeout or DEFAULT_TIMEOUT_MS
    runs = repeat or case.repeat or options.repeat or 1
    results = [await _run_once(harness, case, checks, timeout, options) for _ in range(runs)]
    if runs == 1:
        return results[0]
    chosen = next((r for r in results if not r.passed), results[0])
    chosen.outcomes = [r.passed for r in results]
    chosen.passed = all(chosen.outcomes)
    return chosen


async def run_dataset(
    harness: Any, dataset: EvalDataset, options: RunOptions | None = None
) -> DatasetResult:
    """Run the selected cases with bounded concurrency; results in dataset order."""
    options = options or RunOptions()
    cases = select_cases(dataset, options)
    started_at, started = now_iso(), time.perf_counter()
    limit = options.concurrency if options.parallel else 1
    threads = None
    if options.executor is None:
        threads = ThreadPoolExecutor(max(1, limit), thread_name_prefix="signal-eval-harness")
        options = dataclasses.replace(options, executor=threads)
    semaphore = options.semaphore or asyncio.Semaphore(max(1, limit))
    results: list[CaseResult | None] = [None] * len(cases)
    stop = asyncio.Event()

    async def run_one(index: int) -> None:
        case = cases[index]
        async with semaphore:
            if stop.is_set():
                return
            result = await run_case(
                harness,
                case,
                options,
                assertions=dataset.assertions_for(case),
                default_timeout=dataset.default_timeout,
                repeat=case.repeat or dataset.repeat,
            )
        results[index] = result
        if options.fail_fast and not result.passed and not result.skipped:
            stop.set()
        if options.on_case_complete is not None:
            options.on_case_complete(result)

    async def worker() -> None:
        for index in pending:
            if stop.is_set():
                return
            await run_one(index)

    # A fixed pool of workers pulling the next index, rather than one task per case
    # queued on the semaphore: no thousands of idle tasks, fewer loop hops per case.
    pending = iter(range(len(cases)))
    try:
        await asyncio.gather(*(worker() for _ in range(min(max(1, limit), len(cases)))))
    finally:
        if threads is not None:  # don't wait: a hung sync harness must not hang the run
            threads.shutdown(wait=False, cancel_futures=True)
    return DatasetResult(
        name=dataset.name,
        cases=[r or _not_run(c) for r, c in zip(results, cases, strict=True)],
        duration_ms=(time.perf_counter() - started) * 1000,
        started_at=started_at,
        completed_at=now_iso(),
        metadata=dict(dataset.metadata),
    )


def _not_run(case: EvalCase) -> CaseResult:
    return CaseResult(
        case.id,
        passed=True,
        name=case.name,
        skipped=True,
        error="not run (fail-fast)",
        tags=list(case.tags),
    )
