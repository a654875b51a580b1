"""Ctrl-C, SIGTERM and SIGHUP during a run: stop, keep every finished case, exit 128+N.

One handler serves all three. The first signal unwinds the run (as Ctrl-C always
did: a ``KeyboardInterrupt``); every later one is only recorded, so a second Ctrl-C a
few milliseconds after the first, or a SIGTERM following a SIGHUP, cannot cut short
the writing of what finished. Exit codes follow the shell's 128 + signal number:
130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["HANDLED", "Interrupts", "interrupts"]

HANDLED = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class Interrupts:
    """Which signal stopped the run (``received``) and the exit code it calls for."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.later: list[int] = []

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum
            # Stop the way Ctrl-C does: inside asyncio.run its own SIGINT handler cancels the
            # run gracefully (a KeyboardInterrupt raised here, mid-loop, could leave it hung).
            os.kill(os.getpid(), signal.SIGINT)
            return
        self.later.append(signum)  # the run is already unwinding: let it write

    @property
    def exit_code(self) -> int:
        return 128 + (self.received if self.received is not None else signal.SIGINT)

    @property
    def name(self) -> str:
        return signal.Signals(self.received or signal.SIGINT).name


@contextmanager
def interrupts() -> Iterator[Interrupts]:
    """Route SIGINT, SIGTERM and SIGHUP to one :class:`Interrupts` for the block (in the
    main thread only: elsewhere signals cannot be handled, and nothing changes)."""
    caught = Interrupts()
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    previous: dict[int, Any] = {
        sig: signal.signal(sig, caught.handle) for sig in HANDLED if sig != signal.SIGINT
    }
    try:
        yield caught
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
