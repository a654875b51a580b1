"""Threads for sync harnesses: one daemon thread per harness in flight.

A sync harness (a function, a sync SDK call) runs off the event loop so that it cannot
serialise every case or make its timeout unenforceable (:func:`~signal_eval_cli.harness.protocol.collect`);
these threads are where it runs.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

__all__ = ["HarnessThreads"]

_P = ParamSpec("_P")
_T = TypeVar("_T")
_WorkItem = tuple["Future[Any]", Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class HarnessThreads(Executor):
    """Daemon threads for sync harnesses, one per harness in flight.

    Unlike :class:`~concurrent.futures.ThreadPoolExecutor`: a harness stuck for good
    (``time.sleep(100)`` past its timeout) neither keeps the process alive at exit
    (daemon threads are not joined) nor keeps a pool slot — ``submit`` starts a new
    worker whenever none is idle, so later cases never queue behind a stuck one. The
    number of harnesses in flight is bounded by the runner's semaphore, not here.
    """

    def __init__(self, name: str = "signal-eval-harness") -> None:
        self._name = name
        self._work: queue.SimpleQueue[_WorkItem | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._started = 0
        self._closed = False

    def submit(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
        future: Future[_T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._work.put((future, fn, args, kwargs))
            if self._idle:
                self._idle -= 1  # that idle worker will take this item
                return future
            self._started += 1
            number = self._started
        threading.Thread(target=self._worker, name=f"{self._name}-{number}", daemon=True).start()
        return future

    def _worker(self) -> None:
        work, lock = self._work, self._lock
        while True:
            item = work.get()
            if item is None:
                return
            future, fn, args, kwargs = item
            del item
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:  # the caller gets it, whatever it is
                    future.set_exception(exc)
                    del exc
                else:
                    future.set_result(result)
                    del result
            del future, fn, args, kwargs
            with lock:
                if self._closed:
                    return
                self._idle += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Stop idle workers (busy ones stop when done); never waits for a stuck one."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, 0
            if cancel_futures:
                while True:
                    try:
                        item = self._work.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        item[0].cancel()
                        idle += 1  # the worker reserved for it is left idle
        for _ in range(idle):
            self._work.put(None)
