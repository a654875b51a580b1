"""A harness run under a deadline, told apart from the harness's own failures.

On Python 3.11+ ``asyncio.timeout`` runs the harness in the calling task and knows its
own expiry; 3.10 has neither, so there the harness runs in a task of our own and what it
raised itself (a ``CancelledError``, a ``SystemExit``) comes out wrapped
(:func:`raised_by_harness` unwraps it).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Coroutine, Iterator
from typing import Any, NoReturn

from signal_eval_cli.harness.protocol import HarnessRaised

__all__ = [
    "HarnessExit",
    "cancelled_by_us",
    "exits_refused",
    "guarded",
    "raised_by_harness",
    "refusals_ended",
    "within",
]


if sys.version_info >= (3, 11):

    async def within(run: Coroutine[Any, Any, Any], seconds: float) -> bool:
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

    async def within(run: Coroutine[Any, Any, Any], seconds: float) -> bool:
        """3.10 has no ``asyncio.timeout``, and ``wait_for`` cannot tell its own
        cancellation from the harness's: run the harness in a task we cancel ourselves."""
        ours = False

        async def guarded() -> None:
            try:
                await run
            except (asyncio.CancelledError, SystemExit) as exc:
                # KeyboardInterrupt is left alone: here it cannot be told from Ctrl-C.
                if ours and isinstance(exc, asyncio.CancelledError):
                    raise
                raise HarnessRaised(exc) from exc

        task = asyncio.ensure_future(guarded())
        try:
            done, _ = await asyncio.wait({task}, timeout=seconds)
        except asyncio.CancelledError:  # the run itself is cancelled: take the harness along
            ours = True
            task.cancel()
            raise
        if not done:
            ours = True
            task.cancel()
            await asyncio.wait({task})
            return True
        task.result()
        return False


def cancelled_by_us(exc: BaseException) -> bool:
    """Whether a ``CancelledError``/``KeyboardInterrupt``/``SystemExit`` that reached the
    runner is our own (a timeout, Ctrl-C, the run being cancelled) rather than the
    harness's. On 3.10 a task cannot tell, so a cancellation or interrupt counts as ours."""
    if sys.version_info >= (3, 11):
        task = asyncio.current_task()
        return task is not None and task.cancelling() > 0
    return isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt))  # pragma: no cover


def raised_by_harness(exc: BaseException) -> BaseException:
    """What the harness raised: a ``GeneratorExit`` out of a sync harness's thread comes
    wrapped (:class:`HarnessRaised`), and so, on Python 3.10, does a cancellation or exit
    it raised itself (by :func:`within`)."""
    if isinstance(exc, HarnessRaised) and exc.__cause__ is not None:
        return exc.__cause__
    return exc


class HarnessExit(SystemExit):
    """``os._exit`` called by a harness while a case runs: refused, the case's failure."""


_refusing = 0  # harnesses running under exits_refused (all on the event loop's thread)
_refuser_pid = os.getpid()  # the process that refuses (a forked child exits its own way)
_real_exit = os._exit


def _refused_exit(status: int) -> NoReturn:
    if os.getpid() != _refuser_pid:  # a child forked meanwhile (multiprocessing): its own
        _real_exit(status)
    raise HarnessExit(f"the harness called os._exit({status}), which would end the run")


def exit_process(status: int) -> NoReturn:
    """End the process now with ``os._exit``, also while a harness runs: our own ends
    (the CLI's, the watchdog's when a harness blocks the loop for good, leaving its
    refusal in place) must not be refused. Any other ``os._exit`` is called as it is."""
    (_real_exit if os._exit is _refused_exit else os._exit)(status)
    raise AssertionError("os._exit returned")  # pragma: no cover - a stand-in's


@contextlib.contextmanager
def exits_refused() -> Iterator[None]:
    """While a harness runs, ``os._exit`` raises :class:`HarnessExit` instead of ending
    the process: it would end the run with the harness's status (0: no results, a silent
    pass). Counted, so that cases overlapping in time restore it once, after the last."""
    global _refusing, _refuser_pid
    if _refusing == 0:
        _refuser_pid = os.getpid()
        os._exit = _refused_exit
    _refusing += 1
    try:
        yield
    finally:
        _refusing = max(0, _refusing - 1)  # 0 already if refusals_ended() came first
        if _refusing == 0:
            os._exit = _real_exit


def refusals_ended() -> None:
    """Give ``os._exit`` back now, though harnesses still run under :func:`exits_refused`:
    one stuck for good (the watchdog's report) never leaves it, and a process that goes
    on after it (pytest, past the stuck dataset) must be able to end itself."""
    global _refusing
    _refusing = 0
    os._exit = _real_exit


async def guarded(
    run: Coroutine[Any, Any, Any], seconds: float
) -> tuple[bool, BaseException | None]:
    """Run a harness (``run``) under the deadline, as every run does (a dataset's case, a
    scenario's agent): whether it timed out, and what it raised itself (unwrapped), which
    is its own failure, not the run's. A cancellation, Ctrl-C or exit that is ours (the
    run cancelled, interrupted) propagates; any other ``BaseException`` (``GeneratorExit``,
    a library's own) is the harness's too: it must not end the run and lose the other cases."""
    try:
        with exits_refused():
            return await within(run, seconds), None
    except Exception as exc:
        return False, raised_by_harness(exc)
    except BaseException as exc:
        if cancelled_by_us(exc):
            raise
        return False, raised_by_harness(exc)
