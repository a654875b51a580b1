"""Ctrl-C, SIGTERM and SIGHUP during a run: stop, keep every finished case, exit 128+N.

One handler serves all three, for the whole of a command's run-and-write block. The
first signal cancels the running event loop's main task once (:meth:`Interrupts.run`
then raises ``KeyboardInterrupt``, and the command writes what finished); every later
one is only recorded, so a second Ctrl-C a few milliseconds after the first, or a
SIGTERM following a SIGHUP, can neither cut the unwinding short nor skip the write.
A signal before anything ran stops at once (``KeyboardInterrupt``); one after the run
ended lets the results be written. Exit codes follow the shell's 128 + signal number:
130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP).

asyncio's own SIGINT handling is not used: it raises ``KeyboardInterrupt`` at the
second Ctrl-C wherever the main thread happens to be (in the cancellation, in the
write), and hands SIGINT back to Python's default handler as soon as the loop closes.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
from collections.abc import Callable, Coroutine, Iterator, Set
from contextlib import contextmanager
from types import FrameType
from typing import Any, TypeVar

from signal_eval_cli.signal_wakeup import signal_wakeup

__all__ = ["HANDLED", "UNWIND_LIMIT_S", "Interrupts", "interrupts", "unwound"]

HANDLED = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)

_T = TypeVar("_T")

UNWIND_LIMIT_S = 30.0
"""How long a stopped run waits for its tasks to unwind (goals killed, workspaces
removed) before the rest are cancelled outright."""


class Interrupts:
    """Which signal stopped the run (``received``) and the exit code it calls for."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.later: list[int] = []
        self._cancel: Callable[[], object] | None = None  # set while a run's loop turns
        self._started = False

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None:
            self.later.append(signum)  # the run is already unwinding: let it write
            return
        self.received = signum
        if self._cancel is not None:
            self._cancel()
        elif not self._started:
            raise KeyboardInterrupt  # nothing ran yet: stop at once, as Ctrl-C always did

    def run(self, main: Coroutine[Any, Any, _T]) -> _T:
        """``asyncio.run(main)``, cancelled by the first signal: then ``KeyboardInterrupt``
        is raised here, once every task has unwound."""
        self._started = True

        async def cancellable() -> _T:
            loop = asyncio.get_running_loop()
            task = asyncio.current_task()
            assert task is not None
            self._cancel = lambda: loop.call_soon_threadsafe(task.cancel)
            try:
                with _woken_by_signals(loop):
                    if self.received is not None:  # came while the loop was being made
                        raise asyncio.CancelledError
                    try:
                        return await main
                    except asyncio.CancelledError:
                        await unwound(task, UNWIND_LIMIT_S)
                        raise
            finally:
                self._cancel = None
                main.close()  # never awaited when the signal came first: no warning

        try:
            return asyncio.run(cancellable())
        except asyncio.CancelledError:
            if self.received is None:
                raise
            raise KeyboardInterrupt from None

    @property
    def exit_code(self) -> int:
        return 128 + (self.received if self.received is not None else signal.SIGINT)

    @property
    def name(self) -> str:
        return signal.Signals(self.received or signal.SIGINT).name


async def unwound(
    main: asyncio.Task[Any], limit_s: float, *, besides: Set[asyncio.Task[Any]] = frozenset()
) -> None:
    """Wait for the tasks still unwinding from the cancellation (a goal being killed, a
    workspace being removed) instead of letting ``asyncio.run`` cancel them again: a
    second cancellation drops a cleanup still queued for a thread. Only tasks never
    cancelled (a ticker, a watcher) are cancelled here; after ``limit_s`` what is left
    is ``asyncio.run``'s to cancel. Tasks in ``besides`` (not the run's) are left alone."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_s
    while (left := deadline - loop.time()) > 0:
        others = {
            t for t in asyncio.all_tasks() if t is not main and t not in besides and not t.done()
        }
        if not others:
            return
        for other in others:
            if not _cancelling(other):
                other.cancel()
        await asyncio.wait(others, timeout=left)


def _cancelling(task: asyncio.Task[Any]) -> bool:
    """Whether ``task`` is being cancelled already (Python 3.10 cannot tell: no)."""
    cancelling = getattr(task, "cancelling", None)
    return cancelling is not None and cancelling() > 0


@contextmanager
def _woken_by_signals(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Wake ``loop`` when a signal arrives: one delivered to another thread would
    otherwise wait, unhandled, until the main thread's ``select`` returned by itself."""
    with signal_wakeup() as reader:
        if reader is None:  # signals are the main thread's alone
            yield
            return
        loop.add_reader(reader.fileno(), _drain, reader)
        try:
            yield
        finally:
            loop.remove_reader(reader.fileno())


def _drain(reader: socket.socket) -> None:
    try:
        while reader.recv(4096):
            pass
    except BlockingIOError:
        pass


@contextmanager
def interrupts() -> Iterator[Interrupts]:
    """Route SIGINT, SIGTERM and SIGHUP to one :class:`Interrupts` for the block (in the
    main thread only: elsewhere signals cannot be handled, and nothing changes).

    A signal ignored when the block starts stays ignored, as Python leaves an ignored
    SIGINT: ``nohup signal-eval run …`` must survive the terminal closing (SIGHUP), and a
    job a script started in the background is not stopped by the Ctrl-C meant for it.

    Once a signal came, later ones are ignored after the block: the command is ending,
    and a late second Ctrl-C must neither turn its exit into a ``KeyboardInterrupt``
    traceback nor, once Python finalises its handlers, kill it before it exits 128+N."""
    caught = Interrupts()
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    previous: dict[int, Any] = {
        sig: signal.signal(sig, caught.handle)
        for sig in HANDLED
        if signal.getsignal(sig) is not signal.SIG_IGN
    }
    try:
        yield caught
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if caught.received is None else signal.SIG_IGN)
