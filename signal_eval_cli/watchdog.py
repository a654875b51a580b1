"""Noticing an event loop that has stopped turning, and where it is stuck.

An ``async`` harness that calls something blocking (``time.sleep``, a sync SDK)
holds the loop: no timeout can fire, no progress is printed, Ctrl-C is not seen.
:class:`LoopWatchdog` is a daemon thread that the loop pings; when no ping has come
for longer than ``limit_s`` it reads the loop thread's stack
(``sys._current_frames``) and calls ``on_stall`` with the harness's ``file:line``.
Only a loop stuck in user code counts: while the frames the loop is running are all
ours or the stdlib's (assertions over a huge trace, say) it keeps waiting.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Callable

from signal_eval_cli.frames import running_location

__all__ = ["LoopWatchdog"]


class LoopWatchdog:
    """Use as ``async with LoopWatchdog(limit_s, on_stall):`` inside the loop it guards.

    ``on_stall(location, seconds)`` runs on the watchdog thread, at most once; it may
    end the process (the loop thread cannot be interrupted).
    """

    def __init__(
        self, limit_s: float, on_stall: Callable[[str, float], None], *, tick_s: float = 0.1
    ) -> None:
        self.limit_s, self.on_stall, self.tick_s = limit_s, on_stall, tick_s
        self._beat = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop_thread = threading.get_ident()

    async def __aenter__(self) -> LoopWatchdog:
        self._loop_thread = threading.get_ident()
        self._beat = time.monotonic()
        self._pinger = asyncio.ensure_future(self._ping())
        self._thread = threading.Thread(
            target=self._watch, name="signal-eval-watchdog", daemon=True
        )
        self._thread.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        self._pinger.cancel()

    async def _ping(self) -> None:
        while True:
            self._beat = time.monotonic()
            await asyncio.sleep(self.tick_s)

    def _watch(self) -> None:
        while not self._stop.wait(self.tick_s):
            stalled = time.monotonic() - self._beat
            if stalled > self.limit_s:
                location = running_location(sys._current_frames().get(self._loop_thread))
                if location is None:
                    continue  # busy in our own code, not stuck in the user's
                self._stop.set()
                self.on_stall(location, stalled)
                return
