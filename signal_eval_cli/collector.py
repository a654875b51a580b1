"""Pausing Python's cyclic garbage collector around bulk building, and making it rare
while cases run.

Loading a large dataset, result or trace makes millions of containers and no reference
cycles; each full collection they trigger would walk every object built so far again
(half the time of a 100,000-span import, most of a 100,000-case load).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["RUN_THRESHOLD", "gc_paused", "rare_collections"]

RUN_THRESHOLD = 50_000
"""Allocations between two collections of young objects while cases run (Python's: 700)."""

_lock = threading.Lock()
_runs = 0
_saved = gc.get_threshold()


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector (restoring its previous state on the way out),
    and leave what was built to the oldest generation: young collections would each walk
    it once more on its way there (0.9 s of a 100,000-case load), though it lives as long
    as the command. A full collection still frees any cycle in it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:  # (an application's own frozen objects stay so)
            gc.freeze()  # every tracked object to the permanent generation,
            gc.unfreeze()  # and back into the oldest one: two list splices, nothing walked
        if was_enabled:
            gc.enable()


@contextmanager
def rare_collections() -> Iterator[None]:
    """Collect young objects every :data:`RUN_THRESHOLD` allocations while a run runs.

    Every case makes hundreds of small objects (signals, payloads, results) that live
    until the run ends, and asyncio makes a few reference cycles per case: collecting
    every 700 allocations walked the same survivors again and again (a fifth of the
    CPU per case of a one-call run). Cycles are still collected, less often. Runs that
    overlap (a matrix's variants) share the setting; the last to end restores it."""
    global _runs, _saved
    with _lock:
        if _runs == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(max(RUN_THRESHOLD, _saved[0]), *_saved[1:])
        _runs += 1
    try:
        yield
    finally:
        with _lock:
            _runs -= 1
            if _runs == 0:
                gc.set_threshold(*_saved)
