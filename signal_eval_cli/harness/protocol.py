"""The harness protocol and the context every run gets.

A harness is an object with ``run(input, ctx)`` or a plain callable
``(input, ctx)``. ``run`` may be an async or sync generator of signals (or plain
dicts), a coroutine or function returning a list of them, or may emit through
``ctx.emit`` — :func:`collect` accepts all of these. A harness object whose model
calls never go through the run's model proxy (``ctx.proxy``, ``ctx.openai()``, the
exported base URLs) may say so with ``model_proxy = False``: ``run`` then starts none.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from signal_eval_cli.signals import Signal, as_signal, new_signal_id, now_iso

if TYPE_CHECKING:  # a run without a model proxy, or whose harness makes no SDK client, has none
    from signal_eval_cli.proxy.route import CaseRoute

__all__ = [
    "Harness",
    "HarnessContext",
    "HarnessRaised",
    "RunFunction",
    "collect",
    "kept_on_failure",
    "runs_on_loop",
    "wants_proxy",
]

RunFunction = Callable[[Any, "HarnessContext"], Any]


@runtime_checkable
class Harness(Protocol):
    def run(self, input: Any, ctx: HarnessContext) -> Any: ...


@dataclass
class HarnessContext:
    """What a harness may use while it runs one case."""

    case_id: str
    params: dict[str, Any] = field(default_factory=dict)
    signals: list[Signal] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    run: int = 0
    """Which run of a repeated case this is (0: the first)."""
    proxy: CaseRoute | None = None
    """This case's address on the run's model proxy (``None`` when the run has none):
    ``proxy.openai_base_url``, ``proxy.anthropic_base_url``, ``proxy.env`` for subprocesses."""

    def openai(self, *, async_: bool = False, **kwargs: Any) -> Any:
        """An ``openai.OpenAI`` (``async_=True``: ``AsyncOpenAI``) client; through the run's
        proxy when there is one, so its calls are recorded, replayed and traced."""
        if self.proxy is not None:
            return self.proxy.openai(async_=async_, **kwargs)
        from signal_eval_cli.proxy.route import sdk_client

        return sdk_client("openai", "AsyncOpenAI" if async_ else "OpenAI", None, "", **kwargs)

    def anthropic(self, *, async_: bool = False, **kwargs: Any) -> Any:
        """An ``anthropic.Anthropic`` (``async_=True``: ``AsyncAnthropic``) client, as
        :meth:`openai`."""
        if self.proxy is not None:
            return self.proxy.anthropic(async_=async_, **kwargs)
        name = "AsyncAnthropic" if async_ else "Anthropic"
        from signal_eval_cli.proxy.route import sdk_client

        return sdk_client("anthropic", name, None, "", **kwargs)

    workspace: Path | None = None
    """The directory a scenario's agent edits (None outside scenarios)."""

    def emit(
        self,
        name: str,
        payload: Any = None,
        *,
        agent: str | None = None,
        parent: str | Signal | None = None,
    ) -> Signal:
        """Record a signal now (id and timestamp filled in) and return it."""
        parent_id = parent.id if isinstance(parent, Signal) else parent
        signal = Signal(name, payload, new_signal_id(), now_iso(), agent, parent_id)
        if name == "harness:start":
            _copy_starting_state(signal)
        self.signals.append(signal)
        return signal

    def record(self, item: Signal | Mapping[str, Any]) -> Signal:
        """Record a signal the harness built itself, filling a missing id or timestamp."""
        signal = as_signal(item)
        if not signal.id:
            signal.id = new_signal_id()
        if signal.timestamp is None:
            signal.timestamp = now_iso()
        if signal.name == "harness:start":
            _copy_starting_state(signal)
        self.signals.append(signal)
        return signal

    async def sleep(self, seconds: float) -> None:
        """Wait, but wake at once (with ``CancelledError``) when the case is cancelled."""
        if self.cancelled.is_set():
            raise asyncio.CancelledError
        await asyncio.sleep(seconds)


def _copy_starting_state(signal: Signal) -> None:
    """``harness:start`` carries the state the run starts from (the trace's initial
    state); a harness that goes on changing that object in place would rewrite it, so
    the ``state`` is copied as it is recorded (when it can be: a lock cannot)."""
    payload = signal.payload
    if isinstance(payload, Mapping) and "state" in payload:
        with contextlib.suppress(Exception):  # an uncopyable state is kept as it is
            signal.payload = {**payload, "state": _deep_copy(payload["state"])}


_ATOMS = frozenset({str, int, float, bool, type(None)})


def _deep_copy(state: Any) -> Any:
    """``copy.deepcopy(state)``; a dict of text, numbers and None (a case's usual input)
    is copied as ``dict`` copies it, which is the same copy, without deepcopy's memo and
    dispatch per value (a few microseconds a case)."""
    flat = type(state) is dict and all(type(k) is str for k in state)
    if flat and _ATOMS.issuperset(map(type, state.values())):
        return dict(state)
    return copy.deepcopy(state)


def wants_proxy(harness: Any) -> bool:
    """Whether a run of ``harness`` starts a model proxy: yes, unless the harness says
    ``model_proxy = False`` (its model calls never go through one, as the built-in
    reactive harness, which calls its provider itself)."""
    return bool(getattr(harness, "model_proxy", True))


def run_function(harness: Any) -> RunFunction:
    if callable(getattr(harness, "run", None)):
        return harness.run  # type: ignore[no-any-return]
    if callable(harness):
        return harness  # type: ignore[no-any-return]
    raise TypeError(
        f"a harness must have a run(input, ctx) method or be callable, got {type(harness).__name__}"
    )


def runs_on_loop(harness: Any) -> bool:
    """Whether :func:`collect` runs this harness in the event loop (async) rather than
    on a thread: only such a harness can block the loop past its own timeout."""
    run = run_function(harness)
    return inspect.isasyncgenfunction(run) or inspect.iscoroutinefunction(run)


async def collect(
    harness: Any,
    input: Any,
    ctx: HarnessContext,
    *,
    executor: Executor | None = None,
    settle: Callable[[], Awaitable[Any]] | None = None,
) -> list[Signal]:
    """Run the harness to the end and return every signal it emitted or yielded.

    Async harnesses run in the calling task. Sync ones (functions, sync generators)
    run on ``executor`` (default: the loop's), because a sync harness may block —
    typically a sync SDK call — and on the event loop that would serialise every
    case and make its timeout unenforceable. The hop costs tens of microseconds.

    ``settle`` (the model proxy's) is awaited before what a harness *returns* is recorded:
    the calls it made are in the trace before the signals that follow them. Not before
    each item a generator yields: one yielding as its stream arrives has that call still
    open, and waiting for it there would wait for a stream nobody reads.
    """
    run = run_function(harness)
    if inspect.isasyncgenfunction(run):
        async for item in run(input, ctx):
            ctx.record(item)
        return ctx.signals
    if inspect.iscoroutinefunction(run):
        result = await run(input, ctx)
        if settle is not None:
            await settle()
        _record_all(ctx, result)
        return ctx.signals
    call = functools.partial(contextvars.copy_context().run, _run_sync, run, input, ctx)
    result = await asyncio.get_running_loop().run_in_executor(executor, call)
    if inspect.isawaitable(result):
        result = await result
    if settle is not None:
        await settle()
    if isinstance(result, AsyncIterator):
        async for signal in result:
            ctx.record(signal)
    else:
        _record_all(ctx, result)
    return ctx.signals


async def kept_on_failure(
    ctx: HarnessContext,
    run: Awaitable[Any],
    signals: Callable[[BaseException | None], list[Signal]],
) -> list[Signal]:
    """``signals(None)`` once ``run`` has finished: a live harness that maps what a
    framework reported at the end. When the framework raises mid-run (max turns passed, a
    node's exception, a refused model call), or the case's timeout cancels it, it has
    still done part of the work: ``signals(error)`` are recorded in the case's trace
    before the error fails the case, as a harness that emits as it goes keeps them. The
    framework's error stays the case's: one from mapping what it left is not raised in
    its place."""
    try:
        await run
    except (Exception, asyncio.CancelledError) as failure:
        with contextlib.suppress(Exception):
            for signal in signals(failure):
                ctx.record(signal)
        raise
    return signals(None)


class HarnessRaised(Exception):
    """A ``BaseException`` the harness raised itself, carried to the runner as an
    ordinary exception (its ``__cause__``, which ``deadline.raised_by_harness`` unwraps).

    A ``GeneratorExit`` out of a sync harness's thread: a task woken with one is closed
    rather than given it (CPython's coroutine ``throw``), so it skipped every handler
    up to the run's own task and ended the run. (On Python 3.10, also what ``deadline``
    cannot tell from its own cancellation.)"""


def _run_sync(run: RunFunction, input: Any, ctx: HarnessContext) -> Any:
    """Call a sync harness off the event loop; drain a sync generator there too."""
    try:
        result = run(input, ctx)
        if inspect.isgenerator(result):
            _record_all(ctx, result)
            return None
    except GeneratorExit as exc:
        raise HarnessRaised(exc) from exc
    return result


def _record_all(ctx: HarnessContext, items: Any) -> None:
    if items is None:
        return
    if isinstance(items, (str, bytes, Mapping)):
        raise TypeError("a harness must return a list of signals, not a single value")
    for item in items:
        ctx.record(item)
