"""``--shard i/N``: a deterministic, balanced slice of the cases.

Cases are ordered by the SHA-256 of their id and dealt round-robin: shard sizes differ
by at most one, the slice depends only on the selected ids (the same on every machine
and every run, whatever the dataset order or ``PYTHONHASHSEED``), and neighbouring
cases (often alike, and alike in cost) land on different shards.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import TypeVar

from signal_eval_cli.errors import InputError

__all__ = ["Shard", "parse_shard", "shard_ids", "take_shard"]

Shard = tuple[int, int]
"""(index, count), index 1-based."""
_T = TypeVar("_T")


def parse_shard(text: str) -> Shard:
    """``"2/5"`` → ``(2, 5)``; anything else (``0/5``, ``6/5``, ``a/b``) is an input error."""
    found = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if found is None:
        raise InputError(f"--shard expects INDEX/COUNT such as 1/4, got {text!r}")
    index, count = int(found[1]), int(found[2])
    if count < 1 or not 1 <= index <= count:
        raise InputError(f"--shard {text}: INDEX must be between 1 and COUNT (1/{max(count, 1)})")
    return index, count


def _rank(case_id: str) -> bytes:
    return hashlib.sha256(case_id.encode()).digest()


def shard_ids(ids: Sequence[str], shard: Shard) -> set[str]:
    """The ids of ``ids`` that shard ``shard`` runs."""
    index, count = shard
    ranked = sorted(ids, key=lambda i: (_rank(i), i))
    return set(ranked[index - 1 :: count])


def take_shard(items: Sequence[_T], ids: Sequence[str], shard: Shard | None) -> list[_T]:
    """``items`` (whose ids are ``ids``) restricted to ``shard``, in their own order."""
    if shard is None:
        return list(items)
    mine = shard_ids(ids, shard)
    return [item for item, i in zip(items, ids, strict=True) if i in mine]
