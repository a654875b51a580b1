"""What every journaled run shares: its journal beside the results JSON, and a stop.

A run of a dataset, a matrix or scenarios (:func:`~signal_eval_cli.configured_dataset.run_configured`,
:mod:`~signal_eval_cli.configured_runs`) opens its journal before anything runs
(:class:`JournaledRun`: ``resume`` keeps what finished, ``retry`` runs the errored or
failed again), records each unit as it finishes, and returns what the journal holds.
Cancelled (Ctrl-C in the command), it returns what finished, marked ``interrupted``
(:func:`partial_when_cancelled`), instead of losing it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from signal_eval_cli.interrupts import UNWIND_LIMIT_S, unwound
from signal_eval_cli.journal import JournalHeader, Key
from signal_eval_cli.results import CaseResult
from signal_eval_cli.resume import JournalPlan, open_journal
from signal_eval_cli.run_journals import case_entry
from signal_eval_cli.sharding import Shard, parse_shard

__all__ = [
    "JournaledRun",
    "RunChoices",
    "as_shard",
    "executor_of",
    "journal_of",
    "partial_when_cancelled",
    "starting",
]

_T = TypeVar("_T")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class RunChoices(TypedDict, total=False):
    """What every run (a dataset, a matrix, scenarios) takes as keywords, as the commands'
    options: ``output``, the results JSON the caller writes, gets a journal beside it, which
    ``resume``, ``retry`` (``"errored"``/``"failed"``: those run again) and ``force`` (a
    changed dataset, harness or version) continue, saying so through ``note`` (else the
    policy's); the result is then what the journal holds. ``shard`` (``"1/4"``) runs one
    shard; ``executor``: ``"local"`` (the default) or ``"ray"`` (on ``ray_address``,
    ``ray_actors`` actors); ``on_start(n)`` hears how many units are about to run (those
    the journal keeps are not)."""

    output: Path | str | None
    resume: bool
    retry: str | None
    force: bool
    shard: Shard | str | None
    executor: str
    ray_address: str | None
    ray_actors: int | None
    on_start: Callable[[int], None] | None
    note: Callable[[str], None] | None


def journal_of(
    choices: RunChoices, header: JournalHeader, note: Callable[[str], None]
) -> JournaledRun:
    """The run's journal as ``choices`` ask (none without an ``output``)."""
    output = choices.get("output")
    return JournaledRun(
        Path(output) if output is not None else None,
        header,
        resume=choices.get("resume", False),
        retry=choices.get("retry"),
        force=choices.get("force", False),
        note=choices.get("note") or note,
    )


def executor_of(choices: RunChoices) -> tuple[str, dict[str, Any]]:
    """The executor ``choices`` name and its options (for :mod:`~signal_eval_cli.executors`)."""
    where = {"ray_address": choices.get("ray_address"), "ray_actors": choices.get("ray_actors")}
    return choices.get("executor", "local"), where


def starting(choices: RunChoices, count: int) -> None:
    """Tell ``on_start``, if any, that ``count`` units are about to run."""
    on_start = choices.get("on_start")
    if on_start is not None:
        on_start(count)


def as_shard(shard: Shard | str | None) -> Shard | None:
    """``shard`` as given, or parsed from ``INDEX/COUNT`` (:class:`InputError` if bad)."""
    return parse_shard(shard) if isinstance(shard, str) else shard


class JournaledRun:
    """A run's journal beside ``output`` (the results JSON; none without it): opened, or
    resumed, before anything runs, saying so through ``note``; written as each unit
    finishes; its units, as written, build the results. A journal that cannot be resumed (another
    run's, unless ``force``) is an :class:`InputError`."""

    def __init__(
        self,
        output: Path | None,
        header: JournalHeader,
        *,
        resume: bool = False,
        retry: str | None = None,
        force: bool = False,
        note: Callable[[str], None] = _stderr,
    ) -> None:
        self.header = header
        self.plan: JournalPlan = open_journal(
            output, header, resume=resume, retry=retry, force=force
        )
        if self.plan.fresh:
            note(f"no journal beside {output}: starting from the beginning")
        elif resume or retry:
            kept = self.plan.kept_of(header.own_ids())
            note(
                f"resuming {self.plan.journal.path if self.plan.journal else ''}: "
                f"{kept} finished kept"
                + (f", {len(self.plan.retried)} to run again" if retry else "")
            )

    def record(self, key: Key, data: dict[str, Any], *, settled: bool = True) -> None:
        """In the journal (written and flushed) before the unit is reported anywhere else;
        ``settled``: nothing still running may change ``data`` (:meth:`Journal.record`)."""
        self.plan.record(key, data, settled=settled)

    def record_case(self, result: CaseResult, variant: str = "") -> None:
        """A finished case (of a matrix's ``variant``); one fail-fast kept from starting
        is left out, for a resumed run to run. A case that errored may have left its
        harness running (a timed-out thread), still changing what the case holds."""
        entry = case_entry(result, variant)
        if entry is not None:
            key, data = entry
            self.plan.record(key, data, settled=result.error is None, signals=result.signals)

    def result(self, ran: _T) -> _T:
        """The results: what the journal holds, built with the timings of ``ran`` (the run
        that wrote it); ``ran`` when there is no journal (:meth:`JournalPlan.result`)."""
        return self.plan.result(self.header, ran)

    def __enter__(self) -> JournaledRun:
        return self

    def __exit__(self, *exc: object) -> None:
        """Closed however the run ends: a run that raised (a callback of the caller's, a
        proxy that would not start) left the file open, and its fsync thread waiting,
        for the life of the process. :meth:`result` still reads what it holds."""
        self.plan.close()


async def partial_when_cancelled(run: Awaitable[_T], partial: Callable[[], _T]) -> _T:
    """``run``'s result; cancelled, once the tasks still unwinding have ended (goals
    killed, workspaces removed), ``partial()``: what finished, marked interrupted."""
    task = asyncio.current_task()
    assert task is not None
    before = asyncio.all_tasks()  # not the run's: left alone
    try:
        return await run
    except asyncio.CancelledError:
        await unwound(task, UNWIND_LIMIT_S, besides=before)
        return partial()
