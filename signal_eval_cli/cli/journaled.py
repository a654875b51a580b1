"""The options every running command shares for journals, resume, retry and shards,
and the glue between a command and its journal: what to keep and rerun is
:mod:`signal_eval_cli.resume`'s; here its refusals exit 2 and its choices are printed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from signal_eval_cli.cli.common import err, fail_input
from signal_eval_cli.errors import InputError
from signal_eval_cli.journal import JournalHeader, Key
from signal_eval_cli.resume import JournalPlan, open_journal
from signal_eval_cli.sharding import Shard, parse_shard

__all__ = ["ForceOpt", "JournaledRun", "ResumeOpt", "RetryOpt", "ShardOpt", "shard_option"]

_R = TypeVar("_R")

ResumeOpt = Annotated[
    bool,
    typer.Option(
        "--resume",
        help="Continue the run whose journal is beside --output: finished cases are kept.",
    ),
]
RetryOpt = Annotated[
    str | None,
    typer.Option(
        metavar="errored|failed",
        help="Like --resume, and run again the cases that errored (or failed).",
    ),
]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force", help="Resume even though the dataset, harness, params or version changed."
    ),
]
ShardOpt = Annotated[
    str | None,
    typer.Option(
        metavar="INDEX/COUNT",
        help="Run only shard INDEX of COUNT (1/4 … 4/4); join shards with 'signal-eval merge'.",
    ),
]


def shard_option(text: str | None) -> Shard | None:
    """The parsed ``--shard``, or exit 2 with the reason."""
    if text is None:
        return None
    try:
        return parse_shard(text)
    except InputError as exc:
        fail_input(exc)


class JournaledRun:
    """A command's journal: opened (or resumed) before anything runs, written as each
    unit finishes, read back to build the results."""

    def __init__(
        self,
        output: Path | None,
        header: JournalHeader,
        *,
        resume: bool,
        retry: str | None,
        force: bool,
    ) -> None:
        self.header = header
        try:
            self.plan: JournalPlan = open_journal(
                output, header, resume=resume, retry=retry, force=force
            )
        except InputError as exc:
            fail_input(exc)
        if self.plan.fresh:
            err.print(f"no journal beside {output}: starting from the beginning")
        elif resume or retry:
            kept = self.plan.kept_of(header.own_ids())
            err.print(
                f"resuming {self.plan.journal.path if self.plan.journal else ''}: "
                f"{kept} finished kept"
                + (f", {len(self.plan.retried)} to run again" if retry else ""),
                highlight=False,
            )

    def record(self, key: Key, data: dict[str, Any]) -> None:
        """In the journal (written and flushed) before the unit is reported anywhere else."""
        self.plan.record(key, data)

    def result(self, ran: _R) -> _R:
        """The results: what the journal holds, built with the timings of ``ran`` (the run
        that wrote it); ``ran`` when there is no journal (:meth:`JournalPlan.result`)."""
        try:
            return self.plan.result(self.header, ran)
        except InputError as exc:
            fail_input(exc)
