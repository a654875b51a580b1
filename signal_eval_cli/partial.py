"""What a stopped run keeps: the results that finished, in order, marked ``interrupted``.

Ctrl-C, SIGTERM or SIGHUP (:mod:`~signal_eval_cli.interrupts`) stop a run of a
dataset, a matrix or scenarios; what finished is reported and written all the same,
built here for each kind of run. A dataset run whose event loop is stuck in a harness
for good ends too (:func:`stalled_dataset`): there the cases that did not finish fail,
saying where the harness is stuck.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from signal_eval_cli.dataset import EvalCase, EvalDataset
from signal_eval_cli.results import CaseMetrics, CaseResult, DatasetResult
from signal_eval_cli.signals import elapsed_ms, now_iso

if TYPE_CHECKING:  # imported where used: `run` must not pay for matrices and scenarios
    from signal_eval_cli.matrix import MatrixResult, VariantResult
    from signal_eval_cli.scenarios.model import Scenario
    from signal_eval_cli.scenarios.runner import ScenarioResult, ScenarioRunResult

__all__ = [
    "partial_dataset",
    "partial_matrix",
    "partial_scenarios",
    "stall_reason",
    "stalled_dataset",
]


def partial_dataset(
    dataset: EvalDataset,
    selected: Sequence[EvalCase],
    finished: Sequence[CaseResult],
    started: str,
    *,
    interrupted: bool = True,
) -> DatasetResult:
    """What finished before Ctrl-C (or a stuck loop), in dataset order; ``started`` is
    the run's start (ISO)."""
    order = {c.id: i for i, c in enumerate(selected)}
    cases = sorted(finished, key=lambda r: order.get(r.case_id, len(order)))
    completed = now_iso()
    return DatasetResult(
        dataset.name,
        cases,
        duration_ms=elapsed_ms(started, completed),
        started_at=started,
        completed_at=completed,
        metadata=dict(dataset.metadata),
        interrupted=interrupted,
    )


def stall_reason(location: str, seconds: float) -> str:
    """Why the cases of a run whose loop is stuck did not finish: where it is stuck (a
    :class:`~signal_eval_cli.watchdog.LoopWatchdog`'s report), and what to do about it."""
    return (
        f"the event loop was blocked at {location} for {seconds:.1f} s, longer than the case "
        "timeout: an async harness called blocking code (time.sleep, a sync SDK); await an "
        "async call instead, or run the blocking one with asyncio.to_thread"
    )


def stalled_dataset(
    dataset: EvalDataset,
    selected: Sequence[EvalCase],
    finished: Sequence[CaseResult],
    started: str,
    reason: str,
    *,
    running: Sequence[tuple[str, float]],
) -> DatasetResult:
    """The run whose loop is stuck: what finished, and every other selected case failed
    with ``reason`` (a skipped case stays skipped). A case that was ``running`` (case id,
    its ``time.perf_counter()`` start) has the wall time it ran as its latency."""
    now = time.perf_counter()
    ran_ms: dict[str, float] = {}
    for case_id, began in running:
        ran_ms[case_id] = max(ran_ms.get(case_id, 0.0), (now - began) * 1000)
    done = list(finished)
    ids = {r.case_id for r in done}
    for case in selected:
        if case.id not in ids:
            error = f"not finished: {reason}" if not case.skip else None
            wall = ran_ms.get(case.id, 0.0)
            done.append(
                CaseResult(
                    case.id,
                    passed=case.skip,
                    name=case.name,
                    metrics=CaseMetrics(latency_ms=wall),
                    duration_ms=wall,
                    skipped=case.skip,
                    error=error,
                    tags=list(case.tags),
                )
            )
    return partial_dataset(dataset, selected, done, started, interrupted=False)


def partial_matrix(name: str, finished: Sequence[VariantResult], started: str) -> MatrixResult:
    """The variants that finished before Ctrl-C (nothing is recommended from them)."""
    from signal_eval_cli.matrix import MatrixResult

    return MatrixResult.of(
        name, list(finished), started_at=started, completed_at=now_iso(), interrupted=True
    )


def partial_scenarios(
    scenarios: Sequence[Scenario],
    finished: Sequence[ScenarioResult],
    started_at: str,
    started: float,
) -> ScenarioRunResult:
    """The scenario runs that finished before Ctrl-C, in the order given; ``started`` is
    the run's ``time.perf_counter()`` start."""
    from signal_eval_cli.scenarios.runner import ScenarioRunResult

    order = {s.id: i for i, s in enumerate(scenarios)}
    done = sorted(finished, key=lambda r: (order.get(r.id, len(order)), r.run))
    return ScenarioRunResult.of(
        done,
        duration_ms=(time.perf_counter() - started) * 1000,
        started_at=started_at,
        completed_at=now_iso(),
        interrupted=True,
    )
