"""Record real model calls into a cassette, or replay them without a network.

Modes:

- ``replay``: answers only from the cassette; a request it has no recording for
  (or whose prompt changed since) is a :class:`ProviderError` naming the case,
  agent, call and request. The real provider is never built, so no key is needed.
- ``record``: every call goes to the real provider and is written to the
  cassette; the first call of a case that succeeds drops what that case had
  recorded before, so a re-recorded case holds exactly its new calls (other cases
  are kept) and a case none of whose calls succeed keeps its old recording.
- ``record-missing``: answers from the cassette where it can and records only the
  calls it has no (or a stale) recording for.

Recordings are saved atomically, at most every ``autosave_interval`` seconds while
recording and by :meth:`RecordingProvider.save` (also run at interpreter exit), in
the format :class:`~signal_eval_cli.providers.cassette.Cassette` replays.

On a Ray actor (after :func:`hand_over`) a recorder never writes its file, which the
run's own recorder of that cassette owns (the driver's): :func:`take_handed` collects
what the actor's recorders recorded, it travels back with the results, and
:func:`absorb_handed` gives it to the driver's recorders, which save it once.
"""

from __future__ import annotations

import atexit
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal

from signal_eval_cli.providers.base import (
    Provider,
    ProviderError,
    ProviderRequest,
    ProviderResponse,
)
from signal_eval_cli.providers.cassette import Cassette, CassetteEntry

__all__ = [
    "MODES",
    "RecordMode",
    "RecordingProvider",
    "absorb_handed",
    "hand_over",
    "save_all",
    "take_handed",
]

RecordMode = Literal["replay", "record", "record-missing"]
MODES: tuple[RecordMode, ...] = ("replay", "record", "record-missing")

_OPEN: weakref.WeakSet[RecordingProvider] = weakref.WeakSet()
_COPIES: weakref.WeakSet[RecordingProvider] = weakref.WeakSet()
"""Recorders that never write: what they record is handed over (:func:`take_handed`)."""
_ADOPTED: list[RecordingProvider] = []
_HAND_OVER = [False]


class RecordingProvider:
    """A cassette in front of a real provider (see the module doc for the modes)."""

    def __init__(
        self,
        cassette: Cassette,
        inner: Provider | None = None,
        *,
        mode: RecordMode = "replay",
        name: str | None = None,
        autosave_interval: float = 2.0,
        writes: bool = True,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if mode != "replay" and inner is None:
            raise ValueError(f"mode {mode!r} needs the real provider to record from")
        self.cassette = cassette
        self.inner = inner
        self.mode: RecordMode = mode
        self.name = name or (inner.name if inner is not None else "cassette")
        self.autosave_interval = autosave_interval
        self.recorded = 0
        self.replayed = 0
        self._dirty = False
        self._last_save = time.monotonic()
        self._fresh_cases: set[str] = set()
        self.writes = writes and not _HAND_OVER[0]
        self._new: list[CassetteEntry] = []
        """What a recorder that does not write recorded since :meth:`take_new`."""
        (_OPEN if self.writes else _COPIES).add(self)

    async def complete(
        self, request: ProviderRequest, on_delta: Callable[[str], None] | None = None
    ) -> ProviderResponse:
        if self.mode == "replay":
            return self._replay(request, on_delta)
        if self.mode == "record-missing" and self.cassette.has(request):
            try:
                return self._replay(request, on_delta)
            except ProviderError as exc:
                if exc.code != "cassette_stale":
                    raise
        assert self.inner is not None
        response = await self.inner.complete(request, on_delta)
        entry = CassetteEntry.of(request, response)
        self._keep(entry)
        if not self.writes:
            self._new.append(entry)
        return response

    def _keep(self, entry: CassetteEntry) -> None:
        """``entry`` is now the case's recording (recorded here, or by a copy elsewhere)."""
        if self.mode == "record" and entry.case not in self._fresh_cases:
            # only now that a call of the case succeeded: a case whose calls all fail
            # (no network, a bad key) keeps what it had recorded
            self._fresh_cases.add(entry.case)
            kept = [e for e in self.cassette if e.case != entry.case]
            if len(kept) != len(self.cassette):
                self.cassette = Cassette(self.cassette.path, kept)
        self.cassette.put(entry)
        self.recorded += 1
        self._dirty = True
        if time.monotonic() - self._last_save >= self.autosave_interval:
            self.save()

    def take_new(self) -> list[CassetteEntry]:
        """What this recorder (one that does not write) recorded since the last call."""
        new, self._new = self._new, []
        return new

    def absorb(self, entries: list[CassetteEntry]) -> None:
        """Keep what a copy elsewhere recorded, as if recorded here. A call recorded twice
        (two copies, or a case run again) has one key: the later replaces the earlier."""
        for entry in entries:
            self._keep(entry)

    def _replay(
        self, request: ProviderRequest, on_delta: Callable[[str], None] | None
    ) -> ProviderResponse:
        response = self.cassette.lookup(request)
        self.replayed += 1
        if on_delta is not None and response.deltas:
            for chunk in response.deltas:
                on_delta(chunk)
        return response

    def save(self) -> bool:
        """Write the cassette if anything was recorded since the last save."""
        if not self._dirty or not self.writes:
            return False
        self.cassette.save()
        self._dirty = False
        self._last_save = time.monotonic()
        return True


def hand_over(on: bool = True) -> None:
    """In a Ray actor: recorders made from now on in this process do not write their
    cassettes; :func:`take_handed` collects what they record."""
    _HAND_OVER[0] = on


def take_handed() -> dict[Path, list[CassetteEntry]]:
    """What every recorder that does not write recorded since the last call, by cassette."""
    handed: dict[Path, list[CassetteEntry]] = {}
    for recorder in list(_COPIES):
        new = recorder.take_new()
        if new:
            handed.setdefault(recorder.cassette.path, []).extend(new)
    return handed


def absorb_handed(handed: Mapping[Path, list[CassetteEntry]]) -> None:
    """Give what recorders elsewhere recorded to this process's recorder of each
    cassette (the run's), which saves it; a cassette none records gets one that only
    keeps them (saved by :func:`save_all`)."""
    for path, entries in handed.items():
        where = path.resolve()
        owner = next((r for r in list(_OPEN) if r.cassette.path.resolve() == where), None)
        if owner is None:
            cassette = Cassette.load(path) if path.is_file() else Cassette.empty(path)
            owner = RecordingProvider(cassette, mode="replay", name="handed")
            _ADOPTED.append(owner)
        owner.absorb(entries)


def save_all() -> list[RecordingProvider]:
    """Save every recording with unsaved calls; return those that were saved."""
    return [p for p in list(_OPEN) if p.save()]


atexit.register(save_all)
