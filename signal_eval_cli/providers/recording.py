"""The built-in providers' calls on the run's one record/replay path.

:class:`RecordingProvider` puts a :class:`~signal_eval_cli.proxy.recorder.Recorder`
(the model proxy's, without HTTP: a call in process costs no loopback hop) in front of a
real provider, for the reactive harness and the LLM judge. Its cassette is the
``entries`` format (:mod:`signal_eval_cli.providers.cassette`). Modes as the proxy's:

- ``replay``: answers only from the cassette; a request it has no recording for (or
  whose prompt changed since) is a :class:`ProviderError` (``cassette_miss``) naming the
  case, agent, call and what changed. The real provider is never built: no key needed.
- ``record``: every call goes to the real provider; a case run's new recording replaces
  its old one when none of its calls failed (a failed recording never overwrites one).
- ``record-missing``: replays what it can and records the rest.

A case run's calls are kept when it is closed: when the case ends, by the runner
(:func:`~signal_eval_cli.proxy.recorder.case_run`: kept only if the case ended well), or
right after its call for a judge (``one_call_cases``: each verdict is its own case); one
used outside a runner's case, by :func:`save_all` at the end of the run (also at
interpreter exit). A call that raises (failed, cancelled) fails its case run's recording.
Kept recordings go to the cassette's backlog at once and into the cassette at the end
(see :class:`~signal_eval_cli.proxy.backlog.Backlog`).

On a Ray actor (after :func:`hand_over`, or for a pickled copy) a recorder never writes
its file, which the run's own recorder of that cassette owns (the driver's):
:func:`take_handed` collects what the actor's recorders did, it travels back with the
results, and :func:`absorb_handed` gives it to the driver's recorders, which save it once.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import weakref
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from signal_eval_cli.providers.base import (
    Provider,
    ProviderError,
    ProviderRequest,
    ProviderResponse,
)
from signal_eval_cli.providers.cassette import AGENT_CALL, Cassette, CassetteFile
from signal_eval_cli.proxy.cassette import Interaction
from signal_eval_cli.proxy.matching import request_key
from signal_eval_cli.proxy.recorder import Handover, Mode, Recorder, current_case_run
from signal_eval_cli.proxy.session import CaseSession

__all__ = ["RecordingProvider", "absorb_handed", "hand_over", "save_all", "take_handed"]

_OPEN: weakref.WeakSet[RecordingProvider] = weakref.WeakSet()
_COPIES: weakref.WeakSet[RecordingProvider] = weakref.WeakSet()
"""Recorders that never write: what they record is handed over (:func:`take_handed`)."""
_ADOPTED: list[RecordingProvider] = []
_HAND_OVER = [False]


class _Run(NamedTuple):
    case_id: str
    run: int


class RecordingProvider(Recorder):
    """A cassette in front of a real provider (see the module doc for the modes).
    ``latency_scale`` > 0 makes a replay sleep that fraction of the recorded latency."""

    def __init__(
        self,
        cassette: CassetteFile,
        inner: Provider | None = None,
        *,
        mode: Mode = "replay",
        name: str | None = None,
        latency_scale: float = 0.0,
        one_call_cases: bool = False,
    ) -> None:
        if mode == "live" or (mode != "replay" and inner is None):
            raise ValueError(f"mode {mode!r} needs the real provider to record from")
        if latency_scale < 0:
            raise ValueError("latency_scale must be >= 0")
        super().__init__(cassette, mode)
        self.path = cassette.path
        self.inner = inner
        self.name = name or (inner.name if inner is not None else "cassette")
        self.latency_scale = latency_scale
        self.one_call_cases = one_call_cases
        self.recorded = 0
        self._register(not _HAND_OVER[0])
        self._load()  # a broken cassette is bad input now, before any case runs

    @classmethod
    def replaying(
        cls, path: str | Path, *, latency_scale: float = 0.0, name: str = "cassette"
    ) -> RecordingProvider:
        """Replay only (``provider: cassette``): a cassette that is not there is bad input."""
        if not Path(path).is_file():
            Cassette.load(path)  # raises the located "cannot read file" error
        return cls(CassetteFile(path), mode="replay", name=name, latency_scale=latency_scale)

    def _register(self, writes: bool) -> None:
        self.writes = writes
        (_OPEN if writes else _COPIES).add(self)

    def settings(self) -> dict[str, Any]:
        return {
            **super().settings(),
            "name": self.name,
            "latency_scale": self.latency_scale,
            "one_call_cases": self.one_call_cases,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A copy replays (its owner gives it the real provider back: :meth:`with_inner`)."""
        settings = dict(state["settings"])
        for name in ("match", "case_order", "settle_s"):
            settings.pop(name)
        cassette, mode = settings.pop("cassette"), settings.pop("mode")
        Recorder.__init__(self, cassette, mode)
        self.path = cassette.path
        self.inner, self.recorded = None, 0
        self.name, self.latency_scale = settings["name"], settings["latency_scale"]
        self.one_call_cases = settings["one_call_cases"]
        self._recorded, self._loaded = state["recorded"], True
        self._register(False)

    def with_inner(self, inner: Provider) -> RecordingProvider:
        self.inner = inner
        return self

    async def complete(
        self, request: ProviderRequest, on_delta: Callable[[str], None] | None = None
    ) -> ProviderResponse:
        at = _Run(request.case_id, request.run)
        if self.one_call_cases:  # a session of its own, even beside the same call at once
            session = self.session(*at)
            try:
                return await self._answer(session, request, on_delta)
            finally:
                self.keep(session)
        session = self.sessions.get(at) or self._open(at)
        return await self._answer(session, request, on_delta)

    def _open(self, at: _Run) -> CaseSession:
        """A case run's session, closed when the runner's case ends (as cut short unless
        it ended well); a call after its case ended is never recorded."""
        session = self.open_session(*at)
        case = current_case_run()
        ending = functools.partial(self._case_ended, at, session)
        if case is not None and case.key == at and not case.on_end(ending):
            session.fail(f"case '{at.case_id}': a model call after the case ended")
        return session

    def _case_ended(self, at: _Run, session: CaseSession, completed: bool) -> None:
        if self.sessions.get(at) is session:
            self.close(at, completed=completed)

    async def _answer(
        self, session: CaseSession, request: ProviderRequest, on_delta: Callable[[str], None] | None
    ) -> ProviderResponse:
        key = request_key(AGENT_CALL, request.agent, request.key)
        if self.mode != "record":
            found = session.take(key, request.call) or session.take(
                request_key(AGENT_CALL, request.agent, None), request.call
            )
            if found is not None:
                return await self._replay(found, on_delta)
            if self.mode == "replay":
                what = f"agent '{request.agent}', call #{request.call}"
                message = session.miss(what, request.agent, request.key, key, request.call)
                raise ProviderError(f"cassette {self.path}: {message}", code="cassette_miss")
        assert self.inner is not None
        try:
            response = await self.inner.complete(request, on_delta)
        except BaseException as exc:  # failed or cut short (cancelled): not a whole recording
            why = str(exc) or type(exc).__name__
            session.fail(f"case '{request.case_id}', agent '{request.agent}': {why}")
            raise
        item = Interaction(
            request.case_id,
            request.call,
            AGENT_CALL,
            request.agent,
            request.key,
            200,
            response.to_dict(),
            duration_ms=float(response.latency_ms or 0.0),
            run=request.run,
        )
        session.add(item)
        self.recorded += 1
        return response

    async def _replay(
        self, item: Interaction, on_delta: Callable[[str], None] | None
    ) -> ProviderResponse:
        response = ProviderResponse.from_dict(item.response)
        if self.latency_scale and response.latency_ms:
            await asyncio.sleep(response.latency_ms * self.latency_scale / 1000)
        if on_delta is not None and response.deltas:
            for chunk in response.deltas:
                on_delta(chunk)
        return response

    def close_all(self, case_ids: Collection[str] | None = None) -> None:
        """Close the open case runs (of ``case_ids``): they have ended."""
        for key in list(self.sessions):
            if case_ids is None or key[0] in case_ids:
                self.close(_Run(*key))

    def save(self) -> list[Path]:
        self.close_all()
        return super().save()

    def hand(self, case_ids: Collection[str]) -> list[Handover]:
        """What this copy recorded for these finished cases (and for any case it closed
        itself: a judge's), to hand over."""
        self.close_all(case_ids)
        done = {k[0] for k in self._pending} | {s.case for s in self.finished}
        return [h for h in self.take(done).values() if h.recorded or h.misses or h.failures]


def hand_over(on: bool = True) -> None:
    """In a Ray actor: recorders made from now on in this process do not write their
    cassettes; :func:`take_handed` collects what they record."""
    _HAND_OVER[0] = on


def take_handed(case_ids: Collection[str]) -> dict[Path, list[Handover]]:
    """What every recorder that does not write did for these finished cases, by cassette."""
    handed: dict[Path, list[Handover]] = {}
    for recorder in list(_COPIES):
        done = recorder.hand(case_ids)
        if done:
            handed.setdefault(recorder.path, []).extend(done)
    return handed


def absorb_handed(handed: Mapping[Path, list[Handover]]) -> None:
    """Give what recorders elsewhere did to this process's recorder of each cassette (the
    run's), which saves it; a cassette none records gets one that only keeps them
    (saved by :func:`save_all`)."""
    for path, handovers in handed.items():
        where = path.resolve()
        owner = next((r for r in list(_OPEN) if r.path.resolve() == where), None)
        if owner is None:
            owner = RecordingProvider(CassetteFile(path), mode="replay", name="handed")
            _ADOPTED.append(owner)
        for handover in handovers:
            owner.absorb(handover)
            owner.recorded += sum(map(len, handover.recorded.values()))


def save_all() -> list[RecordingProvider]:
    """Save every recording with unsaved calls; return those that were saved."""
    return [p for p in list(_OPEN) if p.save()]


atexit.register(save_all)
