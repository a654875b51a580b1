"""One case's run through the proxy: what it may replay, what it recorded, what missed.

Replay looks a request up by its key among the case's recorded calls; identical
requests replay in the order they were recorded. A miss explains itself: the case,
the request, and what changed against the recorded call it most likely stands for
(the next unused one on the same path).

A call is *in flight* from the moment the proxy takes it until its recording and its
``provider:end`` are done, which is after the client has read the end of the answer: a
streaming client's harness may return first. :meth:`CaseSession.settled` is what the
runners await before closing the case, so no call is lost from the trace or cassette.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from signal_eval_cli.proxy.cassette import Interaction, SessionKey
from signal_eval_cli.proxy.matching import changes, key_name, request_key

__all__ = ["CaseSession", "Emit"]

Emit = Callable[..., Any]
"""``ctx.emit``: ``emit(name, payload, *, agent=None, parent=None) -> Signal``."""


@dataclass
class CaseSession:
    """Created when a case starts, closed when it ends (by the runner)."""

    case: str
    run: int
    emit: Emit | None
    recorded: list[Interaction] = field(default_factory=list)
    match: Sequence[str] | None = None
    borrowed: bool = False
    """``recorded`` is run 0's: this repeat has no recording of its own."""
    new: list[Interaction] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)
    calls: int = 0
    _by_key: dict[str, list[Interaction]] | None = None
    _used: dict[int, int | None] = field(default_factory=dict)
    """``id`` of each recording replayed: at which call of this run."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _in_flight: int = 0
    _waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = field(
        default_factory=list
    )

    @property
    def key(self) -> SessionKey:
        return (self.case, self.run)

    @property
    def may_tell(self) -> bool:
        """Whether the run's end has something of this session to tell: a miss, a failure,
        or a call in flight that may still add one."""
        with self._lock:
            return bool(self.misses or self.failures or self._in_flight)

    def next_call(self) -> int:
        """Number the call and count it in flight until :meth:`call_done`."""
        with self._lock:
            self.calls += 1
            self._in_flight += 1
            return self.calls - 1

    def call_done(self) -> None:
        """The call's recording and signals are done (from the proxy's thread)."""
        with self._lock:
            self._in_flight -= 1
            if self._in_flight:
                return
            waiters, self._waiters = self._waiters, []
        for loop, waiter in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
                loop.call_soon_threadsafe(_wake, waiter)

    async def settled(self, timeout_s: float) -> bool:
        """Wait until no call of this case is in flight (at most ``timeout_s``);
        whether none is."""
        with self._lock:
            if not self._in_flight:
                return True
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append((asyncio.get_running_loop(), waiter))
        try:
            await asyncio.wait_for(waiter, timeout_s)
        except asyncio.TimeoutError:
            with self._lock:
                return not self._in_flight
        return True

    def take(self, key: str, call: int | None = None) -> Interaction | None:
        """The next unused recording of this request, in recorded order (for this run's
        call ``call``)."""
        with self._lock:
            for item in self._keyed().get(key, ()):
                if id(item) not in self._used:
                    self._used[id(item)] = call
                    return item
        return None

    def miss(self, what: str, path: str, body: Any, key: str, call: int) -> str:
        """Why nothing answers this request (``what``: how to name it), with what changed
        since recording."""
        with self._lock:
            same = list(self._keyed().get(key, ()))
        if same:
            because = f"it was recorded {len(same)} time(s) and this is repeat #{len(same) + 1}"
        else:
            with self._lock:
                unused = [i for i in self.recorded if id(i) not in self._used and i.path == path]
            nearest = next((i for i in unused if i.call == call), unused[0] if unused else None)
            paths = sorted({i.path for i in self.recorded})
            if nearest is not None:
                diff = changes(nearest.body, body, self.match)
                because = f"changed since call #{nearest.call} was recorded: " + "; ".join(diff)
            elif path in paths:
                because = f"all {len(self.recorded)} recorded call(s) of this case are used up"
            elif paths:
                because = (
                    f"nothing is recorded for {path} in this case (only for {', '.join(paths)})"
                )
            else:
                because = "nothing is recorded for this case"
        message = (
            f"no recorded answer for case '{self.case}'"
            + (f" run {self.run}" if self.run else "")
            + f": {what} (request {key_name(key)}); {because}. Re-record with --record "
            "(or --record-missing)"
        )
        with self._lock:
            self.misses.append(message)
        return message

    def _keyed(self) -> dict[str, list[Interaction]]:
        """The recorded calls by request key (call with the lock held), made at the first
        lookup: on the proxy's thread, not the runner's as every case starts; a case that
        records, or calls nothing, never needs it."""
        if self._by_key is None:
            self._by_key = {}
            for item in self.recorded:
                key = request_key(item.method, item.path, item.body, self.match)
                self._by_key.setdefault(key, []).append(item)
        return self._by_key

    def add(self, interaction: Interaction) -> None:
        with self._lock:
            self.new.append(interaction)

    def fail(self, message: str) -> None:
        with self._lock:
            self.failures.append(message)

    def kept(self) -> list[Interaction]:
        """What of the old recording stays in this case run's new one (``record-missing``):
        all of it, or of run 0's that a repeat borrowed, the calls it used, as its own."""
        if not self.borrowed:
            return list(self.recorded)
        with self._lock:
            used = [(i, self._used[id(i)]) for i in self.recorded if id(i) in self._used]
        return [replace(i, run=self.run, call=i.call if at is None else at) for i, at in used]

    def recording(self) -> list[Interaction]:
        """What this session recorded, in the order its calls were made."""
        return sorted(self.new, key=lambda i: i.call)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
