"""Running cases and datasets: concurrency, timeouts, filters, fail-fast, repeats.

A harness that raises, hangs or times out yields a failed case carrying the
error; the other cases go on. Results come back in dataset order whatever the
completion order.
"""

from __future__ import annotations

import asyncio
import dataclasses
import fnmatch
import functools
import logging
import re
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from signal_eval_cli.assertions import AssertionResult, EvalContext, Judge, evaluate_guarded
from signal_eval_cli.assertions.registry import uses_judge, uses_regex
from signal_eval_cli.case_runs import case_run
from signal_eval_cli.collector import rare_collections
from signal_eval_cli.dataset import NO_CASES, EvalCase, EvalDataset
from signal_eval_cli.deadline import guarded
from signal_eval_cli.errors import InputError, closest
from signal_eval_cli.frames import user_location
from signal_eval_cli.harness.protocol import (
    Harness,
    HarnessContext,
    RunFunction,
    collect,
    runs_on_loop,
)
from signal_eval_cli.harness.threads import HarnessThreads
from signal_eval_cli.results import CaseMetrics, CaseResult, DatasetResult
from signal_eval_cli.sharding import Shard, take_shard
from signal_eval_cli.signals import Signal, Trace, new_signal_id, now_iso

_log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from signal_eval_cli.proxy.server import ModelProxy

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "HarnessThreads",
    "RunOptions",
    "check_filters",
    "dataset_result",
    "in_pool",
    "never_ran",
    "not_run",
    "run_case",
    "run_dataset",
    "select_cases",
    "stall_limit_s",
    "with_lifecycle",
]

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
    proxy: ModelProxy | None = None
    """The run's model proxy: each case run gets ``ctx.proxy`` and its calls as signals."""
    executor: Executor | None = None
    """Threads for sync harnesses; else :func:`run_dataset` makes a :class:`HarnessThreads`
    per run (the loop's default pool has only ``cpu_count + 4`` threads, which would
    silently cap the concurrency of sync harnesses that block on I/O)."""
    shard: Shard | None = None
    """Run only this slice of the selected cases (``--shard i/N``)."""
    finished: Mapping[str, CaseResult] = field(default_factory=dict)
    """Cases already finished (read back from a journal): kept as they are, not run again,
    and not passed to ``on_case_complete``."""
    running: dict[object, tuple[str, float]] = field(default_factory=dict)
    """A token per case run in progress → (case id, ``time.perf_counter()`` at its start):
    what a run ended from outside (a stuck event loop) measured of its unfinished cases."""


def case_matcher(patterns: Sequence[str]) -> Callable[[str], bool]:
    """``--case``: whether an id is one of ``patterns``, or matches one as a shell glob
    (``sql-*``, ``*-[0-9]``). Asked of every id of a dataset, 100,000 in a large one: an
    id is looked up among the patterns, and only those with a glob character are
    matched (one without matches its own text only)."""
    exact = frozenset(patterns)
    globs = [re.compile(fnmatch.translate(p)).match for p in exact if not _GLOB.isdisjoint(p)]
    if not globs:
        return exact.__contains__
    return lambda case_id: case_id in exact or any(glob(case_id) for glob in globs)


_GLOB = frozenset("*?[")


def select_cases(dataset: EvalDataset, options: RunOptions) -> list[EvalCase]:
    """``only`` first, then tags (any overlap), then case ids, then the shard."""
    cases = dataset.cases
    if any(c.only for c in cases):
        cases = [c for c in cases if c.only]
    if options.tags:
        wanted = set(options.tags)
        cases = [c for c in cases if wanted & set(c.tags)]
    if options.case_ids:
        matches = case_matcher(options.case_ids)
        cases = [c for c in cases if matches(c.id)]
    return take_shard(cases, [c.id for c in cases], options.shard)


def stall_limit_s(dataset: EvalDataset, options: RunOptions) -> float:
    """How long the event loop may go without turning before the run is declared stuck:
    the longest case timeout of the run (each case's own timeout fires before that on a
    loop that turns), plus a second of grace."""
    timeouts = [
        c.timeout or dataset.default_timeout or options.timeout or DEFAULT_TIMEOUT_MS
        for c in select_cases(dataset, options)
    ]
    return max(timeouts, default=DEFAULT_TIMEOUT_MS) / 1000 + 1.0


def check_filters(dataset: EvalDataset, options: RunOptions) -> None:
    """Raise :class:`InputError` for an unknown ``case_ids`` entry, or when the filters
    select no case at all, or the dataset has none: a run of nothing must not go green."""
    known = [c.id for c in dataset.cases]
    if not known:
        raise InputError(f"{dataset.path or dataset.name}: {NO_CASES}")
    unknown = [p for p in dict.fromkeys(options.case_ids) if not any(map(case_matcher([p]), known))]
    if unknown:
        parts = []
        for pattern in unknown:
            guess = closest(pattern, known)
            parts.append(f"{pattern!r}" + (f" (did you mean {guess!r}?)" if guess else ""))
        raise InputError(
            f"{dataset.path or dataset.name}: no case id matches --case {', '.join(parts)}"
            f" (the dataset has {len(known)} case(s))"
        )
    if (options.tags or options.case_ids) and not select_cases(dataset, options):
        wanted = [f"--tag {t}" for t in options.tags] + [f"--case {c}" for c in options.case_ids]
        tags = sorted({t for c in dataset.cases for t in c.tags})
        raise InputError(
            f"{dataset.path or dataset.name}: no case matches {' '.join(wanted)}"
            + (f" (tags in the dataset: {', '.join(tags)})" if tags else " (no case has tags)")
        )


def _harness_failed(case: EvalCase, exc: BaseException) -> str:
    """The case's error line; the full traceback goes to the log (``--verbose``)."""
    _log.debug("case %r: the harness raised", case.id, exc_info=exc)
    return _describe(exc)


def _describe(exc: BaseException) -> str:
    """``Type: message (at file.py:LINE in function)``: the innermost frame of the
    harness's own code where it was raised (no location when none is the user's)."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    where = user_location(traceback.extract_tb(exc.__traceback__))
    return f"{text} (at {where})" if where else text


async def _run_once(
    harness: Harness | RunFunction,
    case: EvalCase,
    assertions: list[dict[str, Any]],
    timeout_ms: float,
    options: RunOptions,
    run: int = 0,
) -> CaseResult:
    ctx = HarnessContext(case.id, dict(options.params), metadata=dict(case.metadata), run=run)
    proxy = options.proxy
    settle = None
    if proxy is not None:
        ctx.proxy = proxy.open(case.id, run, ctx.emit)
        settle = functools.partial(proxy.settled, ctx.proxy)
    started, started_at = time.perf_counter(), now_iso()
    token = object()  # several runs (repeats, a matrix's variants) of one case may overlap
    options.running[token] = (case.id, started)
    error: str | None = None
    with case_run(case.id, run) as recording:  # in-process recorders close theirs at its end
        try:
            timed_out, failure = await guarded(
                collect(harness, case.input, ctx, executor=options.executor, settle=settle),
                timeout_ms / 1000,
            )
        except BaseException:  # ours (the run cancelled, Ctrl-C): the harness's are returned
            recording.end(completed=False)  # cut short: record nothing of it
            if proxy is not None and ctx.proxy is not None:
                proxy.close(ctx.proxy, completed=False)
            raise
        finally:
            del options.running[token]
    if failure is not None:  # the harness's failure is the case's failure, not ours
        error = _harness_failed(case, failure)
    recording.end(completed=not timed_out and error is None)
    if proxy is not None and ctx.proxy is not None:
        # a crashed or timed-out case keeps its old recording: never half a new one
        if timed_out:
            session = proxy.close(ctx.proxy, completed=False)
        else:  # its calls' recordings and signals may still be finishing: wait for them
            session = await proxy.finish(ctx.proxy, completed=error is None)
        if error is None and session is not None and session.misses:
            error = session.misses[0]  # the harness swallowed the miss: still the case's failure
    if timed_out:
        ctx.cancelled.set()
        error = f"timed out after {timeout_ms:g} ms"
    wall_ms = (time.perf_counter() - started) * 1000
    if error is None and wall_ms > timeout_ms and runs_on_loop(harness):
        # The deadline could not fire: the harness held the event loop past it.
        timed_out = True
        error = (
            f"timed out after {timeout_ms:g} ms "
            f"(the harness blocked the event loop for {wall_ms:.0f} ms)"
        )
    # A timed-out sync harness may still be emitting from its thread: freeze what we have.
    signals = ctx.signals if not timed_out else list(ctx.signals)
    if not getattr(harness, "emits_lifecycle", False):
        signals = with_lifecycle(signals, case.input, started_at, wall_ms)
    trace = Trace(signals, case.input)
    results = []
    if error is None:
        eval_ctx = EvalContext(trace, judge=options.judge, judge_model=options.judge_model, run=run)
        if (options.judge is not None and uses_judge(assertions)) or uses_regex(assertions):
            results = await asyncio.to_thread(_evaluate_all, assertions, eval_ctx)
        else:
            results = _evaluate_all(assertions, eval_ctx)
    return CaseResult(
        case_id=case.id,
        name=case.name,
        passed=error is None and all(r.passed for r in results),
        assertions=results,
        signals=signals,
        final_state=trace.final_state,
        metrics=CaseMetrics.from_trace(trace, wall_ms, finished=error is None),
        duration_ms=wall_ms,
        error=error,
        tags=list(case.tags),
    )


def _evaluate_all(assertions: list[Any], ctx: EvalContext) -> list[AssertionResult]:
    return [evaluate_guarded(a, ctx) for a in assertions]


def with_lifecycle(
    signals: list[Signal], input: Any, started_at: str, duration_ms: float
) -> list[Signal]:
    """``harness:start {input}`` … ``harness:end {durationMs}`` around the signals of a
    harness that emitted neither, so the derived views that read them (trajectory,
    latency, initial state) work for any harness. A harness that emits either one is
    left exactly as it is."""
    if any(s.name in ("harness:start", "harness:end") for s in signals):
        return signals
    start = Signal("harness:start", {"input": input}, new_signal_id(), started_at)
    end = Signal(
        "harness:end",
        {"durationMs": round(duration_ms, 3)},
        new_signal_id(),
        now_iso(),
        None,
        start.id,
    )
    return [start, *signals, end]


async def run_case(
    harness: Harness | RunFunction,
    case: EvalCase,
    options: RunOptions | None = None,
    *,
    assertions: list[dict[str, Any]] | None = None,
    default_timeout: float | None = None,
    repeat: int | None = None,
) -> CaseResult:
    """Run one case (``repeat`` times, independently) and evaluate its assertions.

    With repeats the result carries every outcome; it passes only when all runs
    pass (pass^k), and the details shown are those of the first failing run. Its
    metrics cover every run: cost, tokens and activations are summed (what the case
    spent), latency is the median run's, and the duration is the runs' total.
    """
    options = options or RunOptions()
    if case.skip:
        return _skipped(case)
    checks = case.assertions if assertions is None else assertions
    timeout = case.timeout or default_timeout or options.timeout or DEFAULT_TIMEOUT_MS
    runs = repeat or case.repeat or options.repeat or 1
    chosen: CaseResult | None = None
    outcomes: list[bool] = []
    metrics: list[CaseMetrics] = []
    duration_ms = 0.0
    for run in range(runs):
        await _let_cancellation_in()
        result = await _run_once(harness, case, checks, timeout, options, run)
        if runs == 1:
            return result
        if chosen is None or (chosen.passed and not result.passed):
            chosen = result  # the run shown is the only one kept whole: the others' signals
            # went with them (--repeat 20000 of a 3-case dataset kept 480 MB of them)
        outcomes.append(result.passed)
        metrics.append(result.metrics)
        duration_ms += result.duration_ms
    assert chosen is not None
    chosen.outcomes = outcomes
    chosen.passed = all(outcomes)
    chosen.metrics = CaseMetrics.of_runs(metrics)
    chosen.duration_ms = duration_ms
    return chosen


async def run_dataset_case(
    harness: Harness | RunFunction, dataset: EvalDataset, case: EvalCase, options: RunOptions
) -> CaseResult:
    """One case of ``dataset``: its assertions, timeout and repeats as the dataset sets them."""
    return await run_case(
        harness,
        case,
        options,
        assertions=dataset.assertions_for(case),
        default_timeout=dataset.default_timeout,
        repeat=case.repeat or dataset.repeat,
    )


async def in_pool(
    indexes: Sequence[int],
    limit: int,
    run_one: Callable[[int], Awaitable[None]],
    stop: asyncio.Event | None = None,
) -> None:
    """Await ``run_one(i)`` for each of ``indexes``, in order, ``limit`` at a time; none
    starts once ``stop`` is set. The concurrency of every run (cases, scenarios).

    A fixed pool of workers pulling the next index, rather than one task per item queued
    on a semaphore: no thousands of idle tasks, fewer loop hops per item.
    """
    pending = iter(indexes)

    async def worker() -> None:
        for index in pending:
            if stop is not None and stop.is_set():
                return
            await run_one(index)

    await asyncio.gather(*(worker() for _ in range(min(max(1, limit), len(indexes)))))


async def _let_cancellation_in() -> None:
    """Turn the loop once before each run of a case. A harness that never suspends (a
    replay answered in process) would hold the loop for a whole dataset and all of a
    case's repeats, and a cancellation (Ctrl-C, SIGTERM) would wait: --repeat 100000000
    ran on, filling memory, until killed, and a long replayed dataset could not be stopped."""
    await asyncio.sleep(0)


async def run_dataset(
    harness: Harness | RunFunction, dataset: EvalDataset, options: RunOptions | None = None
) -> DatasetResult:
    """Run the selected cases with bounded concurrency; results in dataset order."""
    options = options or RunOptions()
    cases = select_cases(dataset, options)
    started_at, started = now_iso(), time.perf_counter()
    limit = options.concurrency if options.parallel else 1
    threads = None
    if options.executor is None:
        threads = HarnessThreads()
        options = dataclasses.replace(options, executor=threads)
    semaphore = options.semaphore or asyncio.Semaphore(max(1, limit))
    results: list[CaseResult | None] = [options.finished.get(c.id) for c in cases]
    stop = asyncio.Event()

    async def run_one(index: int) -> None:
        case = cases[index]
        async with semaphore:
            if stop.is_set():
                return
            result = await run_dataset_case(harness, dataset, case, options)
        results[index] = result
        if options.fail_fast and not result.passed and not result.skipped:
            stop.set()
        if options.on_case_complete is not None:
            options.on_case_complete(result)

    try:
        todo = [i for i, result in enumerate(results) if result is None]
        with rare_collections():
            await in_pool(todo, limit, run_one, stop)
    finally:
        if threads is not None:  # don't wait: a hung sync harness must not hang the run
            threads.shutdown(wait=False, cancel_futures=True)
    return dataset_result(dataset, cases, results, options, started_at, started)


def dataset_result(
    dataset: EvalDataset,
    cases: Sequence[EvalCase],
    results: Sequence[CaseResult | None],
    options: RunOptions,
    started_at: str,
    started: float,
) -> DatasetResult:
    """The run's result (whatever executed it): a case that never started (fail-fast) is
    still reported, N/N; ``started`` is the ``time.perf_counter()`` at the start."""
    finished: list[CaseResult] = []
    for result, case in zip(results, cases, strict=True):
        if result is None:
            result = not_run(case)
            if options.on_case_complete is not None:
                options.on_case_complete(result)
        finished.append(result)
    return DatasetResult(
        name=dataset.name,
        cases=finished,
        duration_ms=(time.perf_counter() - started) * 1000,
        started_at=started_at,
        completed_at=now_iso(),
        metadata=dict(dataset.metadata),
    )


def _skipped(case: EvalCase) -> CaseResult:
    return CaseResult(case.id, passed=True, name=case.name, skipped=True, tags=list(case.tags))


def not_run(case: EvalCase) -> CaseResult:
    """A case fail-fast kept from starting, reported skipped with :data:`NOT_RUN`."""
    skipped = _skipped(case)
    if not case.skip:  # a skip: case keeps its own reason, not fail-fast's
        skipped.error = NOT_RUN
    return skipped


NOT_RUN = "not run (fail-fast)"


def never_ran(result: CaseResult) -> bool:
    """A case fail-fast stopped before it started: not finished (a resume runs it)."""
    return result.skipped and result.error == NOT_RUN
