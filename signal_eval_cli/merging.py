"""``signal-eval merge``: join the shards of one run into the result an unsharded run gives.

A part is a sharded run's results file (its ``shard`` field says which shard of how
many, the run's fingerprint and the case order) or a journal. Parts must be every shard
of one run exactly once, each complete; anything else is refused with the reason. The
merged result is built like a run's own (:mod:`signal_eval_cli.resume`), so it equals an
unsharded run's result minus timings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.files import read_input
from signal_eval_cli.fingerprint import digest
from signal_eval_cli.journal import JournalHeader, Key, is_journal, parse_journal
from signal_eval_cli.kinds import Result
from signal_eval_cli.persistence import parse_result
from signal_eval_cli.resume import (
    build_result,
    journal_slots,
    run_slot,
)
from signal_eval_cli.sharding import shard_ids

__all__ = ["merge_parts"]


@dataclass(slots=True)
class _Part:
    path: Path
    header: JournalHeader
    fingerprint: str
    entries: dict[Key, dict[str, Any]]
    timing: tuple[float, str, str] = (0.0, "", "")


def _read_part(path: Path) -> _Part:
    """A part, its file read once: a pipe (``<(curl …)``) read twice is empty the second
    time, and a results file's second read (as plain UTF-8) broke on a byte order mark
    that its first read accepts."""
    try:
        raw = read_input(path)
    except OSError as exc:
        raise InputError([Problem(str(path), 0, 0, f"cannot read: {exc.strerror}")]) from None
    if is_journal(raw):
        contents = parse_journal(path, raw)
        return _Part(path, contents.header, digest(contents.header.fingerprint), contents.entries)
    parse_result(str(path), raw)  # validates the file (schema version, kind, shape), located
    data = json.loads(raw.decode("utf-8-sig"))
    shard = data.get("shard")
    if not isinstance(shard, Mapping):
        raise InputError(
            [Problem(str(path), 1, 1, "not a shard: run with --shard INDEX/COUNT to make parts")]
        )
    kind = str(data.get("kind", "dataset"))
    entries: dict[Key, dict[str, Any]] = {}
    variants: list[dict[str, Any]] = []
    if kind == "matrix":
        for v in data["variants"]:
            variants.append(
                {
                    "id": v["variantId"],
                    "name": v["variantName"],
                    "metadata": v.get("metadata") or {},
                }
            )
            for c in v["result"]["cases"]:
                entries[(str(v["variantId"]), str(c["caseId"]))] = c
    elif kind == "scenarios":
        tags = {c["caseId"]: c.get("tags", []) for c in data.get("cases", [])}
        runs = 1
        for s in data["scenarios"]:
            run = int(s.get("run") or 0)
            runs = max(runs, run + 1)
            entries[(run_slot(run), str(s["id"]))] = {**s, "tags": tags.get(s["id"], [])}
        variants = [{"id": run_slot(r)} for r in range(runs)] if runs > 1 else []
    else:
        entries = {("", str(c["caseId"])): c for c in data["cases"]}
    header = JournalHeader(
        kind=kind,
        name=str(data.get("name", "")),
        order=[str(i) for i in shard["order"]],
        fingerprint={},
        shard=(int(shard["index"]), int(shard["count"])),
        metadata=dict(data.get("metadata") or {}),
        variants=variants,
    )
    timing = (
        float(data.get("durationMs", 0.0)),
        str(data.get("startedAt", "")),
        str(data.get("completedAt", "")),
    )
    return _Part(path, header, str(shard["fingerprint"]), entries, timing)


def _refuse(part: _Part, message: str) -> InputError:
    return InputError([Problem(str(part.path), 0, 0, message)])


def _check(parts: Sequence[_Part]) -> None:
    first = parts[0]
    seen: dict[int, _Part] = {}
    for part in parts:
        h = part.header
        if h.shard is None:
            raise _refuse(part, "not a shard: its run had no --shard INDEX/COUNT")
        if h.kind != first.header.kind:
            raise _refuse(
                part, f"a {h.kind} run's part, but {first.path} is a {first.header.kind}'s"
            )
        if part.fingerprint != first.fingerprint or h.order != first.header.order:
            raise _refuse(
                part,
                f"from another run than {first.path}: the dataset, harness, params, version "
                "or case selection differ",
            )
        assert first.header.shard is not None
        if h.shard[1] != first.header.shard[1]:
            raise _refuse(
                part,
                f"shard {h.shard[0]}/{h.shard[1]}, but {first.path} is one of {first.header.shard[1]}",
            )
        if h.shard[0] in seen:
            raise _refuse(
                part, f"shard {h.shard[0]}/{h.shard[1]} given twice (also {seen[h.shard[0]].path})"
            )
        seen[h.shard[0]] = part
        _check_complete(part)
    count = parts[0].header.shard[1] if parts[0].header.shard else 1
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in seen]
    if missing:
        raise InputError(
            [
                Problem(
                    str(first.path),
                    0,
                    0,
                    f"shard(s) {', '.join(missing)} missing: merge needs every shard",
                )
            ]
        )


def _check_complete(part: _Part) -> None:
    h = part.header
    assert h.shard is not None
    mine = shard_ids(h.order, h.shard)
    expected = {(slot, c) for slot in journal_slots(h) for c in mine}
    stray = sorted(k[1] for k in part.entries if k not in expected)
    if stray:
        raise _refuse(
            part, f"holds case(s) not in shard {h.shard[0]}/{h.shard[1]}: {', '.join(stray[:5])}"
        )
    absent = sorted(k[1] for k in expected if k not in part.entries)
    if absent:
        raise _refuse(
            part,
            f"shard {h.shard[0]}/{h.shard[1]} is incomplete ({len(absent)} case(s) never "
            f"finished: {', '.join(absent[:5])}); finish it with --resume first",
        )


def merge_parts(paths: Sequence[Path]) -> Result:
    """The merged result of ``paths`` (every shard of one run, once each)."""
    if not paths:
        raise InputError("merge needs at least one part")
    parts = [_read_part(Path(p)) for p in paths]
    _check(parts)
    first = parts[0].header
    header = JournalHeader(
        first.kind, first.name, first.order, {}, None, first.metadata, first.variants
    )
    entries: dict[Key, dict[str, Any]] = {}
    for part in parts:
        entries.update(part.entries)
    result = build_result(header, entries)
    started = [p.timing[1] for p in parts if p.timing[1]]
    completed = [p.timing[2] for p in parts if p.timing[2]]
    result.duration_ms = max(p.timing[0] for p in parts)
    result.started_at = min(started, default="")
    result.completed_at = max(completed, default="")
    merged: Result = result
    return merged
