"""The one record/replay path: a run's recordings by case run, in any of four modes.

Modes: ``replay`` answers from the cassette only (a miss names the case, the request
and what changed); ``record`` records every call, and a case's new recording replaces
its old one; ``record-missing`` replays what it can and adds the rest; ``live`` records
nothing. A case run (:class:`~.session.CaseSession`) is opened when it starts and
closed when it ends; what it recorded is kept only when it ended well (never half a
recording, never one with a failed call), and written by :meth:`Recorder.save` at the
end of the run. A case run's kept recording is its whole one (in ``record-missing``,
what it had and what it added; for a repeat that replayed run 0's calls, those it used),
so it goes to the :class:`~.backlog.Backlog` at once: a killed run loses only the cases
in flight.

A front end that cannot see when a case ends (the in-process provider sees requests,
not the case) opens its session under the runner's :class:`CaseRun` (:func:`case_run`),
which closes it when the case ends, as cut short unless it ended well.

Its front ends: the model proxy (:class:`~.server.ModelProxy`: any harness's HTTP
calls) and :class:`~signal_eval_cli.providers.recording.RecordingProvider` (the built-in
reactive harness's provider and the LLM judge, in process). Each keeps its own file
format (:class:`~.cassette.ProxyCassette`, the ``entries`` cassette), both behind
:class:`Store`.

A pickled recorder (sent to a Ray actor) is a copy with the same settings and the
recordings already loaded (that machine may not have the cassette) that never writes
it: what each case recorded, missed or failed goes back with :meth:`Recorder.take` and
into the run's own recorder with :meth:`Recorder.absorb`, so the run writes once.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from signal_eval_cli.case_runs import CaseRun, case_run, current_case_run
from signal_eval_cli.proxy.backlog import Backlog
from signal_eval_cli.proxy.cassette import Interaction, SessionKey
from signal_eval_cli.proxy.session import CaseSession, Emit

__all__ = [
    "MODES",
    "Case",
    "CaseRun",
    "Handover",
    "Mode",
    "Recorder",
    "Store",
    "case_run",
    "current_case_run",
]

Mode = Literal["replay", "record", "record-missing", "live"]
MODES: tuple[Mode, ...] = ("replay", "record", "record-missing", "live")


class Store(Protocol):
    """Where recordings live: one file format (the proxy's, or the ``entries`` one)."""

    path: Path

    def exists(self) -> bool: ...

    def load(self) -> list[Interaction]: ...

    def save(
        self,
        updates: Mapping[SessionKey, Sequence[Interaction]],
        *,
        replace: bool,
        case_order: Sequence[str] = (),
    ) -> list[Path]: ...


class Case(Protocol):
    """A case run, as the runner knows it (``ctx.proxy``: a :class:`~.route.CaseRoute`)."""

    @property
    def case_id(self) -> str: ...

    @property
    def run(self) -> int: ...


@dataclass
class Handover:
    """What a copy (on a Ray actor) did for one case: what it recorded (only for runs
    that ended well), and the misses and failures to report."""

    recorded: dict[SessionKey, list[Interaction]]
    misses: list[str]
    failures: list[str]


class Recorder:
    """Recordings of one cassette for a run (see the module doc)."""

    def __init__(
        self,
        cassette: Store | None = None,
        mode: Mode = "live",
        *,
        match: Sequence[str] | None = None,
        case_order: Sequence[str] = (),
        settle_s: float = 30.0,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if mode != "live" and cassette is None:
            raise ValueError(f"mode {mode!r} needs a cassette")
        self.cassette = cassette
        self.mode: Mode = mode
        self.match = list(match) if match is not None else None
        self.case_order = list(case_order)
        self.settle_s = settle_s
        self.sessions: dict[SessionKey, CaseSession] = {}
        self.finished: list[CaseSession] = []
        self.written: list[Path] = []
        self.writes = True
        """False in a copy (pickled): its recordings are handed over, never saved."""
        self.handed: list[Handover] = []
        """What copies of this recorder did (:meth:`absorb`)."""
        self._loaded = False
        self._recorded: dict[SessionKey, list[Interaction]] = {}
        self._pending: dict[SessionKey, list[Interaction]] = {}
        self._made = False
        self.backlog = Backlog(cassette.path) if cassette is not None else None

    def _load(self) -> None:
        """Read the cassette once (errors raise here, before any case runs), first
        writing into it what a killed run left in its backlog."""
        if self._loaded:
            return
        cassette, backlog = self.cassette, self.backlog
        if self.mode != "live" and cassette is not None and backlog is not None:
            left = backlog.read() if self.writes else {}
            if left:
                cassette.save(left, replace=True, case_order=self.case_order)
                backlog.clear()
            for item in cassette.load():
                self._recorded.setdefault(item.session, []).append(item)
        self._loaded = True

    def settings(self) -> dict[str, Any]:
        """The constructor's arguments: what a copy is made from."""
        return {
            "cassette": self.cassette,
            "mode": self.mode,
            "match": self.match,
            "case_order": self.case_order,
            "settle_s": self.settle_s,
        }

    def __getstate__(self) -> dict[str, Any]:
        self._load()
        return {"settings": self.settings(), "recorded": self._recorded}

    def __setstate__(self, state: dict[str, Any]) -> None:
        settings = dict(state["settings"])
        self.__init__(settings.pop("cassette"), settings.pop("mode"), **settings)  # type: ignore[misc]
        self._recorded, self._loaded, self.writes = state["recorded"], True, False

    # -- cases ------------------------------------------------------------------------------

    def open_session(self, case_id: str, run: int = 0, emit: Emit | None = None) -> CaseSession:
        """Start a case run (:meth:`session`) and attribute its calls to it until
        :meth:`close`."""
        session = self.session(case_id, run, emit)
        self.sessions[(case_id, run)] = session
        return session

    def session(self, case_id: str, run: int = 0, emit: Emit | None = None) -> CaseSession:
        """A case run: what it may replay (a repeat recorded before repeats were kept apart
        replays run 0's calls). One nobody else looks up (a judge's call) is :meth:`keep`'s."""
        self._load()
        recorded = self._recorded.get((case_id, run))
        borrowed = recorded is None and run > 0
        if borrowed:
            recorded = self._recorded.get((case_id, 0))
        return CaseSession(case_id, run, emit, list(recorded or []), self.match, borrowed=borrowed)

    async def finish(self, case: Case, *, completed: bool = True) -> CaseSession | None:
        """:meth:`close` once the case's calls in flight are done (their recordings and
        signals): a streaming client may return before the proxy has finished its call.
        A call still running after :attr:`settle_s` (one the harness gave up on) makes
        the case's recording incomplete: it is not kept."""
        session = self.sessions.get((case.case_id, case.run))
        if not await self.settled(case) and completed and session is not None:
            session.fail(
                f"case '{session.case}': a model call was still running "
                f"{self.settle_s:g} s after the case ended; its recording is not kept"
            )
        return self.close(case, completed=completed)

    async def settled(self, case: Case) -> bool:
        """Wait (at most :attr:`settle_s`) until none of the case's calls is in flight."""
        session = self.sessions.get((case.case_id, case.run))
        return session is None or await session.settled(self.settle_s)

    def close(self, case: Case, *, completed: bool = True) -> CaseSession | None:
        """The case ended: keep what it recorded unless it was cut short or a call failed.
        (A case that ended normally: :meth:`finish`, which waits for its calls first.)"""
        session = self.sessions.pop((case.case_id, case.run), None)
        if session is not None:
            self.keep(session, completed=completed)
        return session

    def keep(self, session: CaseSession, *, completed: bool = True) -> None:
        """``session`` ended: what it recorded is the case run's recording (to save) when it
        was not cut short and no call of it failed.

        The session is kept only for the misses and failures told at the end of the run
        (:attr:`CaseSession.may_tell`), and no longer reaches the case's context, which
        holds every signal of the case run (its results have them now): every session was
        kept with its context, and ``--repeat 20000`` of a 3-case dataset grew to 480 MB.
        A call still in flight emits through its own reference."""
        session.emit = None
        if session.may_tell:
            self.finished.append(session)
        if completed and not session.failures and session.new and self.mode != "live":
            kept = [] if self.mode == "record" else session.kept()
            self._stage(session.key, [*kept, *session.recording()])

    def _stage(self, key: SessionKey, calls: list[Interaction]) -> None:
        """``calls`` are now case run ``key``'s whole recording: to save at the end of the
        run, and in the backlog at once. The first one makes the cassette (empty) if there
        is none, so a killed run leaves one that the next run finds (and completes from
        the backlog)."""
        self._pending[key] = calls
        if not self.writes or self.cassette is None or self.backlog is None:
            return
        if not self._made and not self.cassette.exists():
            self.cassette.save({}, replace=True)  # empty: what it will hold is in the backlog
        self._made = True  # (not looked for again at each case's end)
        self.backlog.add(key, calls)

    def take(self, case_ids: Collection[str]) -> dict[str, Handover]:
        """What each of these finished cases recorded, missed and failed (in a copy, to
        hand over to the run's recorder); forgotten here."""
        out = {case: Handover({}, [], []) for case in case_ids}
        for key in [k for k in self._pending if k[0] in out]:
            out[key[0]].recorded[key] = self._pending.pop(key)
        kept = []
        for session in self.finished:
            handover = out.get(session.case)
            if handover is None:
                kept.append(session)
            else:
                handover.misses += session.misses
                handover.failures += session.failures
        self.finished = kept
        return out

    def absorb(self, handover: Handover) -> None:
        """Keep what a copy did for a case, as if done here (saved by :meth:`save`). A
        case's recording replaces any earlier one of it."""
        if self.mode != "live":
            for key, calls in handover.recorded.items():
                self._stage(key, calls)
        self.handed.append(handover)

    def save(self) -> list[Path]:
        """Write what the finished cases recorded (nothing for a failed case): each
        replaces that case run's recording in the cassette."""
        if self.cassette is None or not self._pending or not self.writes:
            return []
        pending, self._pending = self._pending, {}
        written = self.cassette.save(pending, replace=True, case_order=self.case_order)
        if self.backlog is not None:
            self.backlog.clear()  # all in the cassette now
        self.written += written
        return written

    @property
    def misses(self) -> list[str]:
        here = [m for s in [*self.finished, *self.sessions.values()] for m in s.misses]
        return here + [m for h in self.handed for m in h.misses]

    @property
    def failures(self) -> list[str]:
        here = [m for s in [*self.finished, *self.sessions.values()] for m in s.failures]
        return here + [m for h in self.handed for m in h.failures]
