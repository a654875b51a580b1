"""``deadline.guarded``: the one line, for a dataset's case and a scenario's agent alike,
between what a harness raised (its own failure, returned) and what is the run's (raised)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from signal_eval_cli.deadline import HarnessExit, guarded


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


async def _exits(status: int) -> None:
    os._exit(status)


async def _exits_in_a_thread(status: int) -> None:
    await asyncio.get_running_loop().run_in_executor(None, os._exit, status)


@pytest.mark.parametrize("make", [_exits, _exits_in_a_thread], ids=["async", "sync-thread"])
def test_os_exit_in_a_harness_is_its_failure_not_the_end_of_the_run(
    make: Callable[[int], Awaitable[None]],
) -> None:
    """os._exit(0) ended the whole run with exit 0 and no results file: a silent pass.
    While a harness runs it raises instead, and it is os._exit again afterwards."""
    real = os._exit
    timed_out, failure = _run(lambda: make(0))
    assert not timed_out
    assert isinstance(failure, HarnessExit)
    assert str(failure) == "the harness called os._exit(0), which would end the run"
    assert os._exit is real


def test_overlapping_cases_restore_os_exit_once_after_the_last() -> None:
    real = os._exit

    async def main() -> list[tuple[bool, BaseException | None]]:
        async def slow_then_exit() -> None:
            await asyncio.sleep(0.05)
            os._exit(1)

        first = asyncio.ensure_future(guarded(_returns(), 30))  # ends first
        second = asyncio.ensure_future(guarded(slow_then_exit(), 30))
        return list(await asyncio.gather(first, second))

    (fine, refused) = asyncio.run(main())
    assert fine == (False, None)
    assert isinstance(refused[1], HarnessExit)
    assert os._exit is real


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
def test_a_child_the_harness_forks_still_exits_its_own_way() -> None:
    """multiprocessing's forked child ends with os._exit: the refusal is the run's
    process's only, never a child's (which would run its parent's exit handlers)."""

    async def forks() -> int | None:
        pid = os.fork()
        if pid == 0:
            os._exit(7)  # the child, under the parent's refusal
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    async def main() -> tuple[tuple[bool, BaseException | None], int | None]:
        codes: list[int | None] = []

        async def harness() -> None:
            codes.append(await forks())

        result = await guarded(harness(), 30)
        return result, codes[0]

    result, code = asyncio.run(main())
    assert result == (False, None)
    assert code == 7
