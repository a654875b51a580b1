"""A dataset run as ``signal-eval run`` makes it, in one call from Python: configured
(:mod:`~signal_eval_cli.run_config`: harness, provider, cassettes, judge, proxy),
journaled beside its results JSON (resumed, retried, sharded), on the chosen executor,
and stopped with what finished::

    policy = ProviderPolicy(replay=True, judge_model="openai:gpt-4o-mini")
    result = asyncio.run(run_configured("datasets/code-review.yaml", policy))
    result = asyncio.run(run_configured(path, output=Path("out.json"), resume=True))
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from signal_eval_cli.dataset import EvalDataset, load_dataset
from signal_eval_cli.executors import dataset_run
from signal_eval_cli.journaled import (
    JournaledRun,
    RunChoices,
    as_shard,
    executor_of,
    journal_of,
    partial_when_cancelled,
    starting,
)
from signal_eval_cli.partial import partial_dataset, stall_reason, stalled_dataset
from signal_eval_cli.results import CaseResult, DatasetResult
from signal_eval_cli.resume import journal_beside
from signal_eval_cli.run_config import ProviderPolicy, prepare_run
from signal_eval_cli.run_journals import dataset_header, kept_cases
from signal_eval_cli.runner import RunOptions, select_cases, stall_limit_s
from signal_eval_cli.signals import now_iso
from signal_eval_cli.watchdog import LoopWatchdog

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["run_configured"]

_T = TypeVar("_T")


async def run_configured(
    dataset: EvalDataset | str | Path,
    policy: ProviderPolicy | None = None,
    options: RunOptions | None = None,
    *,
    harness: str | None = None,
    params: Mapping[str, Any] | None = None,
    traces: Path | None = None,
    on_stall: Callable[[DatasetResult, str], None] | None = None,
    **choices: Unpack[RunChoices],
) -> DatasetResult:
    """Run ``dataset`` as ``signal-eval run`` does: its harness built under ``policy``
    (provider, cassettes, record or replay), its judge, the run's model proxy; every
    recording saved and the proxy stopped at the end, even on failure.

    ``choices`` (:class:`~signal_eval_cli.journaled.RunChoices`): ``output`` (its journal:
    ``resume``, ``retry``, ``force``), ``shard``, ``executor``, ``on_start`` (the cases
    about to run); ``options.on_case_complete`` hears of each that finishes.
    Cancelled, it returns the cases that finished, ``interrupted``. ``on_stall(result,
    reason)`` (where given) is called from a watchdog thread when the loop is stuck in a
    harness for good, with the result so far (the rest failed with ``reason``): the loop
    cannot be interrupted, so it should end the process."""
    if not isinstance(dataset, EvalDataset):
        dataset = load_dataset(dataset)
    policy = policy or ProviderPolicy()
    options = replace(options) if options is not None else RunOptions()
    executor, where = executor_of(choices)
    if choices.get("shard") is not None:
        options.shard = as_shard(choices.get("shard"))
    given = dict(params or {})
    prepared = prepare_run(  # on Ray: each actor points its own SDKs at the proxy
        dataset,
        policy,
        options,
        harness=harness,
        params=given,
        traces=traces,
        export_env=executor == "local",
    )
    try:
        output = choices.get("output")
        header = dataset_header(
            dataset,
            options,
            policy,
            harness=harness,
            params=given,
            traces=traces,
            journaled=journal_beside(Path(output) if output is not None else None) is not None,
        )
        with journal_of(choices, header, policy.note) as journal:  # closed on a crash too
            options.finished = {**options.finished, **kept_cases(journal.plan)}
            selected = select_cases(dataset, options)
            done = _recorded(options, journal)
            starting(
                choices, len(selected) - len(options.finished.keys() & {c.id for c in selected})
            )
            started = now_iso()
            running = dataset_run(
                executor,
                dataset,
                prepared.harness,
                options,
                spec=prepared.spec,
                **where,
            )
            if on_stall is not None:

                def stalled(location: str, seconds: float) -> None:
                    kept = [options.finished[c.id] for c in selected if c.id in options.finished]
                    reason = stall_reason(location, seconds)
                    running = list(options.running.values())
                    result = stalled_dataset(
                        dataset, selected, [*kept, *done], started, reason, running=running
                    )
                    on_stall(result, reason)

                running = _watched(running, stall_limit_s(dataset, options), stalled)
            result = await partial_when_cancelled(
                running, lambda: partial_dataset(dataset, selected, done, started)
            )
    finally:  # also on a crash: the proxy never outlives the run
        policy.finish(options)
    return journal.result(result)


def _recorded(options: RunOptions, journal: JournaledRun) -> list[CaseResult]:
    """The cases that finish from now on, each in the journal before ``options``'s own
    ``on_case_complete`` hears of it."""
    done: list[CaseResult] = []
    then = options.on_case_complete

    def finished(result: CaseResult) -> None:
        journal.record_case(result)
        done.append(result)
        if then is not None:
            then(result)

    options.on_case_complete = finished
    return done


async def _watched(
    run: Awaitable[_T], limit_s: float, on_stall: Callable[[str, float], None]
) -> _T:
    """``run`` under a :class:`LoopWatchdog`."""
    async with LoopWatchdog(limit_s, on_stall):
        return await run
