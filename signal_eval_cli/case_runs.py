"""The case run the runner is running in this task, for what must happen when it ends.

A front end that cannot see when a case ends (the in-process recording provider sees
requests, not the case) asks for the current :class:`CaseRun` (:func:`current_case_run`)
and is told when it ends, and whether well (see :mod:`~signal_eval_cli.proxy.recorder`).
Here, apart from the recorder, because every run enters one per case while only a run
with a cassette records: a live run does not import the recording machinery.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextvars import ContextVar, Token

__all__ = ["CaseRun", "case_run", "current_case_run"]


class CaseRun:
    """The case run the runner is running in this task (:func:`case_run`): what must
    happen when it ends (:meth:`on_end`), told whether it ended well. As a context
    manager, it is the current one (:func:`current_case_run`) inside."""

    def __init__(self, case_id: str, run: int = 0) -> None:
        self.key: tuple[str, int] = (case_id, run)
        self._ending: list[Callable[[bool], object]] = []
        self._ended = False
        self._lock = threading.Lock()
        self._token: Token[CaseRun | None] | None = None

    def __enter__(self) -> CaseRun:
        self._token = _CASE_RUN.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _CASE_RUN.reset(self._token)

    def on_end(self, then: Callable[[bool], object]) -> bool:
        """Call ``then(completed)`` when the case ends; False (and never) if it has ended."""
        with self._lock:
            if not self._ended:
                self._ending.append(then)
            return not self._ended

    def end(self, *, completed: bool) -> None:
        with self._lock:
            ending, self._ending, self._ended = self._ending, [], True
        for then in ending:
            then(completed)


_CASE_RUN: ContextVar[CaseRun | None] = ContextVar("signal_eval_case_run", default=None)


def case_run(case_id: str, run: int = 0) -> CaseRun:
    """The runner's case run, for the code it runs (tasks it starts inherit it), as a
    context manager (a class, not a generator: one is entered for every case)."""
    return CaseRun(case_id, run)


def current_case_run() -> CaseRun | None:
    return _CASE_RUN.get()
