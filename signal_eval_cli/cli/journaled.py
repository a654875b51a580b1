"""The options every running command shares for journals, resume, retry and shards:
what to keep and rerun is the library's (:mod:`signal_eval_cli.journaled`, called by each
run); here a bad ``--shard`` exits 2 and what the journal says is printed."""

from __future__ import annotations

import os
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from signal_eval_cli.cli.common import Progress, err, fail_input
from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.interrupts import Interrupts
from signal_eval_cli.sharding import Shard, parse_shard

__all__ = [
    "ForceOpt",
    "ResumeOpt",
    "RetryOpt",
    "ShardOpt",
    "check_journal_free",
    "journal_note",
    "ran",
    "shard_option",
]

_T = TypeVar("_T")

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


def check_journal_free(reports: Mapping[str, Path | None]) -> None:
    """Exit 2 when a report would be written over the run's journal (``-o r.json --junit
    r.json.journal.jsonl``): the report replaced it at the end, and ``--resume`` then
    refused it as no journal; cut off, the run would have lost what it had finished."""
    from signal_eval_cli.resume import journal_beside  # not at --help: the run's modules

    journal = journal_beside(reports.get("json"))
    if journal is None:
        return
    taken = [
        Problem(
            str(path),
            0,
            0,
            f"is the journal of the run writing {reports['json']}: "
            "writing a report there would replace it",
        )
        for name, path in reports.items()
        if name != "json"
        and path is not None
        and os.path.realpath(path) == os.path.realpath(journal)
    ]
    if taken:
        fail_input(InputError(taken))


def shard_option(text: str | None) -> Shard | None:
    """The parsed ``--shard``, or exit 2 with the reason."""
    if text is None:
        return None
    try:
        return parse_shard(text)
    except InputError as exc:
        fail_input(exc)


def ran(caught: Interrupts, progress: Progress, running: Coroutine[Any, Any, _T]) -> _T:
    """``running`` (a library run) under the command's signals, its progress shown: bad
    input exits 2; a signal before it began (nothing ran) exits 128+N."""
    try:
        with progress:
            return caught.run(running)
    except InputError as exc:
        fail_input(exc)
    except KeyboardInterrupt:
        err.print("interrupted", style="yellow")
        raise typer.Exit(caught.exit_code) from None


def journal_note(message: str) -> None:
    """What a run says of its journal (``no journal beside …``, ``resuming …``), on stderr."""
    err.print(message, highlight=False)
