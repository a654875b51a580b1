"""``deadline.guarded``: the one line, for a dataset's case and a scenario's agent alike,
between what a harness raised (its own failure, returned) and what is the run's (raised)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from signal_eval_cli.deadline import guarded


async def _raises(exc: BaseException) -> None:
    raise exc


async def _hangs() -> None:
    await asyncio.sleep(60)


async def _returns() -> int:
    return 1


def _run(
    make: Callable[[], Awaitable[Any]], seconds: float = 30
) -> tuple[bool, BaseException | None]:
    async def main() -> tuple[bool, BaseException | None]:
        return await guarded(make(), seconds)  # type: ignore[arg-type]

    return asyncio.run(main())


def test_a_harness_that_returns_neither_timed_out_nor_failed() -> None:
    assert _run(_returns) == (False, None)


def test_the_deadline_is_a_timeout_and_no_failure() -> None:
    assert _run(_hangs, seconds=0.05) == (True, None)


@pytest.mark.parametrize(
    "exc",
    [
        ValueError("bad"),
        TimeoutError("its own deadline"),
        SystemExit(3),
        asyncio.CancelledError(),
        GeneratorExit(),
    ],
    ids=["error", "own-timeout", "exit", "own-cancel", "generator-exit"],
)
def test_what_the_harness_raises_itself_is_returned_as_its_failure(exc: BaseException) -> None:
    timed_out, failure = _run(lambda: _raises(exc))
    assert not timed_out
    assert failure is exc


def test_the_run_being_cancelled_propagates() -> None:
    async def main() -> None:
        task = asyncio.ensure_future(guarded(_hangs(), 30))
        await asyncio.sleep(0)  # let it start
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
