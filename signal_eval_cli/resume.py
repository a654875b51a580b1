"""Resuming and retrying a run from its journal, and building results from journal lines.

``--resume`` keeps every finished unit of the journal and runs the rest; ``--retry
errored`` (``failed``) also drops the units that errored (failed) so they run again. Both
refuse, with the reasons, a journal whose fingerprint differs from the run's (the
dataset, harness, params or version changed) unless ``force``. The journal is then
rewritten (header, kept entries; a torn last line gone) and reopened for appending.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from signal_eval_cli.collector import gc_paused
from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.files import not_a_file
from signal_eval_cli.fingerprint import differences, digest
from signal_eval_cli.journal import (
    Journal,
    JournalHeader,
    Key,
    claim,
    journal_path,
    read_journal,
    run_slot,
    slot_run,
)
from signal_eval_cli.results import CaseResult, DatasetResult
from signal_eval_cli.signals import Signal, reads_back_as_itself

if TYPE_CHECKING:  # scenarios are imported only by the runs that have them
    from signal_eval_cli.scenarios import ScenarioResult

__all__ = [
    "RETRY_CHOICES",
    "JournalPlan",
    "build_dataset",
    "build_matrix",
    "build_result",
    "build_scenario_matrix",
    "build_scenarios",
    "case_from_entry",
    "journal_beside",
    "journal_slots",
    "matrix_slot",
    "open_journal",
    "run_slot",
    "scenario_from_entry",
    "shard_block",
    "slot_run",
    "slot_variant_run",
]

_R = TypeVar("_R")
_NO_SIGNALS: Mapping[Key, list[Signal]] = MappingProxyType({})
Retry = Literal["errored", "failed"]
RETRY_CHOICES: tuple[Retry, ...] = ("errored", "failed")


def _errored(result: Mapping[str, Any]) -> bool:
    return bool(result.get("error")) and not result.get("skipped")


def _failed(result: Mapping[str, Any]) -> bool:
    return not result.get("passed") and not result.get("skipped")


_RETRY: dict[str, Callable[[Mapping[str, Any]], bool]] = {"errored": _errored, "failed": _failed}


@dataclass(slots=True)
class JournalPlan:
    """The open journal (None when the run writes no results file) and what it keeps."""

    journal: Journal | None
    kept: dict[Key, dict[str, Any]] = field(default_factory=dict)
    retried: list[Key] = field(default_factory=list)
    fresh: bool = False
    """Resuming found no journal (the run died before writing one): it starts afresh."""
    written: dict[Key, Mapping[str, Any]] = field(default_factory=dict)
    """The units this run recorded, as the journal holds them (:meth:`Journal.record`),
    but for the signals of those in :attr:`signals`."""
    signals: dict[Key, list[Signal]] = field(default_factory=dict)
    """The signals of the recorded cases whose lines hold them as they are: the results
    take these rather than build them again from the entries, which gives the same
    signals (:func:`~signal_eval_cli.signals.reads_back_as_itself`), a few microseconds
    each; their entries in :attr:`written` are kept without them (a run of 100,000
    cases would keep every signal twice, once as a dict)."""

    def finished(self, variant: str = "") -> dict[str, dict[str, Any]]:
        """Kept units of ``variant`` by case id."""
        return {case: data for (v, case), data in self.kept.items() if v == variant}

    def kept_of(self, ids: Iterable[str]) -> int:
        """How many kept units are of ``ids`` (a shard's own cases, of any variant)."""
        own = set(ids)
        return sum(1 for _, case in self.kept if case in own)

    def record(
        self,
        key: Key,
        result: Mapping[str, Any],
        *,
        settled: bool = True,
        signals: list[Signal] | None = None,
    ) -> None:
        """Into the journal, written and flushed (``settled``: see :meth:`Journal.record`);
        ``signals``: the unit's, as its ``result["signals"]`` was written from them."""
        if self.journal is None:
            return
        held = self.journal.record(key, result, settled=settled)
        if held is result and signals is not None and all(map(reads_back_as_itself, signals)):
            self.signals[key] = signals
            # kept once, as the signals: their dicts go now, not at the end of the run
            held = {name: value for name, value in held.items() if name != "signals"}
        else:  # written otherwise (a value as its text, ...): read back, as a resumed run would
            self.signals.pop(key, None)
        self.written[key] = held

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()

    def entries(self) -> dict[Key, Mapping[str, Any]] | None:
        """Close the journal: what it holds, the units kept and those recorded since (a
        later one for the same key wins, as when reading it), from memory, never read
        back. The run's results are built from them (None when there is no journal)."""
        self.close()
        if self.journal is None:
            return None
        return {**self.kept, **self.written}

    def result(self, header: JournalHeader, ran: _R) -> _R:
        """The run's result: what the journal holds (as written; the journal closed), built as
        ``header``'s kind of run with the timings of ``ran``, the result of the run that
        wrote it (:func:`build_result`); ``ran`` itself when there is no journal."""
        entries = self.entries()
        if entries is None:
            return ran
        with gc_paused():  # a result per unit, and no cycles: see collector
            built: _R = build_result(header, entries, ran, self.signals)
        return built


def journal_beside(output: Path | None) -> Path | None:
    """The journal a run writing ``output`` keeps, if any (:func:`_journaled`)."""
    return journal_path(output) if output is not None and _journaled(output) else None


def _journaled(output: Path | None) -> bool:
    """A results file that is a plain path (not a stream or a device) gets a journal."""
    if output is None:
        return False
    text = str(output)
    return not (text.startswith(("/dev/", "/proc/")) or output.is_char_device())


def open_journal(
    output: Path | None,
    header: JournalHeader,
    *,
    resume: bool = False,
    retry: str | None = None,
    force: bool = False,
) -> JournalPlan:
    """Start the journal beside ``output``, or continue it (``resume``/``retry``).

    A journal that cannot be written (a read-only folder, a full disk) is an
    :class:`InputError` at its path: it is found before anything runs."""
    try:
        return _open_journal(output, header, resume=resume, retry=retry, force=force)
    except OSError as exc:
        where = journal_path(output) if output is not None else Path(".")
        problem = Problem(str(where), 0, 0, f"cannot write the journal: {exc.strerror or exc}")
        raise InputError([problem]) from exc


def _open_journal(
    output: Path | None,
    header: JournalHeader,
    *,
    resume: bool,
    retry: str | None,
    force: bool,
) -> JournalPlan:
    if retry is not None and retry not in _RETRY:
        raise InputError(f"--retry must be errored or failed, got {retry!r}")
    again = resume or retry is not None
    if not _journaled(output):
        if again:
            flag = "--resume" if resume else "--retry"
            raise InputError(
                f"{flag} needs --output FILE: the journal it continues lives beside that file"
            )
        return JournalPlan(None)
    assert output is not None
    path = journal_path(output)
    if (kind := not_a_file(path)) is not None:  # a pipe would hang the write, /dev/zero the read
        message = f"is {kind}, not a journal: remove it, or write the results elsewhere"
        raise InputError([Problem(str(path), 0, 0, message)])
    claimed = claim(path)
    try:
        return _continue_journal(path, claimed, header, resume=resume, retry=retry, force=force)
    finally:  # the new journal is locked by now, or nothing was started
        os.close(claimed)


def _holds_a_line(fd: int) -> bool:
    """Whether the journal open at ``fd`` holds a whole line: one killed while writing its
    header (or left as zeros by a power cut before its first flush reached the disk)
    holds only a torn line, dropped as any torn last line is."""
    at = 0
    while chunk := os.pread(fd, 1 << 16, at):
        if b"\n" in chunk:
            return True
        at += len(chunk)
    return False


def _continue_journal(
    path: Path,
    claimed: int,
    header: JournalHeader,
    *,
    resume: bool,
    retry: str | None,
    force: bool,
) -> JournalPlan:
    """The plan for the journal at ``path``, which this run holds (``claimed``)."""
    if not (resume or retry is not None):
        return JournalPlan(Journal.start(path, header))
    if not _holds_a_line(claimed):  # killed before its first line: nothing finished yet
        return JournalPlan(Journal.start(path, header), fresh=True)
    contents = read_journal(path)
    before = contents.header
    if before.kind != header.kind:
        raise InputError(
            [Problem(str(path), 1, 1, f"cannot resume: it is a {before.kind} run's journal")]
        )
    reasons = differences(
        {**before.fingerprint, "shard": _shard_text(before.shard)},
        {**header.fingerprint, "shard": _shard_text(header.shard)},
    )
    if reasons and not force:
        raise InputError(
            [
                Problem(
                    str(path),
                    1,
                    1,
                    "cannot resume: "
                    + "; ".join(reasons)
                    + " since this journal was started (its results would mean something "
                    "else). Run without --resume/--retry to start over, or add --force "
                    "to keep its finished cases anyway",
                )
            ]
        )
    redo = _RETRY.get(retry or "")
    kept = {k: v for k, v in contents.entries.items() if redo is None or not redo(v)}
    retried = [k for k in contents.entries if k not in kept]
    return JournalPlan(Journal.start(path, header, kept.items()), kept, retried)


def _shard_text(shard: tuple[int, int] | None) -> str:
    return f"{shard[0]}/{shard[1]}" if shard else "none"


def shard_block(header: JournalHeader) -> dict[str, Any] | None:
    """The ``shard`` field a sharded run's results carry (see :mod:`signal_eval_cli.merging`)."""
    if header.shard is None:
        return None
    return {
        "index": header.shard[0],
        "count": header.shard[1],
        "fingerprint": digest(header.fingerprint),
        "order": header.order,
    }


def case_from_entry(
    case_id: str, data: Mapping[str, Any], signals: list[Signal] | None = None
) -> CaseResult:
    """A journal's case as a result. Its id is its entry's: a line whose result lost its
    ``caseId`` (a hand edit) still reads; one naming another case is refused when the
    journal is read (:func:`~signal_eval_cli.result_check.journal_entry_problems`)."""
    return CaseResult.from_dict(_with_id("caseId", case_id, data), signals)


def scenario_from_entry(scenario_id: str, data: Mapping[str, Any]) -> ScenarioResult:
    """A journal's scenario run as a result, its id its entry's (as :func:`case_from_entry`)."""
    from signal_eval_cli.scenarios import ScenarioResult

    return ScenarioResult.from_journal(_with_id("id", scenario_id, data))


def _with_id(key: str, unit: str, data: Mapping[str, Any]) -> Mapping[str, Any]:
    return data if key in data else {**data, key: unit}


def build_dataset(
    header: JournalHeader,
    entries: Mapping[Key, Mapping[str, Any]],
    ran: DatasetResult | None = None,
    signals: Mapping[Key, list[Signal]] = _NO_SIGNALS,
    variant: str = "",
) -> DatasetResult:
    """The result of a dataset run from its journal entries, in the header's order.

    A case the journal lacks is taken from ``ran`` (a case fail-fast never started, a
    skipped one) if there; else it is missing and the result is ``interrupted``. A case
    in ``signals`` (:attr:`JournalPlan.signals`) has those.
    """
    ran_cases = {c.case_id: c for c in ran.cases} if ran is not None else {}
    cases: list[CaseResult] = []
    own = header.own_ids()
    for case_id in own:
        key = (variant, case_id)
        data = entries.get(key)
        if data is not None:
            cases.append(case_from_entry(case_id, data, signals.get(key)))
        elif case_id in ran_cases:
            cases.append(ran_cases[case_id])
    result = DatasetResult(
        name=header.name,
        cases=cases,
        metadata=dict(header.metadata),
        interrupted=len(cases) < len(own) or (ran is not None and ran.interrupted),
        shard=shard_block(header),
    )
    return _timed(result, ran)


def _timed(result: _R, ran: Any) -> _R:
    """``result`` with the timings of ``ran`` (the run that produced the journal lines)."""
    if ran is not None:
        result.duration_ms, result.started_at = ran.duration_ms, ran.started_at  # type: ignore[attr-defined]
        result.completed_at = ran.completed_at  # type: ignore[attr-defined]
    return result


def build_matrix(
    header: JournalHeader,
    entries: Mapping[Key, Mapping[str, Any]],
    ran: Any = None,
    signals: Mapping[Key, list[Signal]] = _NO_SIGNALS,
) -> Any:
    """A matrix's result from its journal: each variant's cases, then the ranking.

    ``ran`` (a :class:`~signal_eval_cli.matrix.MatrixResult`, maybe partial) lends the
    timings and the cases fail-fast never started.
    """

    ran_variants = {v.variant_id: v.result for v in ran.variants} if ran is not None else {}
    variants = []
    for v in header.variants:
        result = build_dataset(header, entries, ran_variants.get(v["id"]), signals, v["id"])
        result.shard = None  # the matrix carries it
        if result.cases or v["id"] in ran_variants:
            variants.append(_variant(v, result))
    complete = len(variants) == len(header.variants) and not any(
        v.result.interrupted for v in variants
    )
    return _ranked(header, variants, complete, ran)


def _variant(header_variant: Mapping[str, Any], result: DatasetResult) -> Any:
    from signal_eval_cli.matrix_model import VariantResult

    v = header_variant
    return VariantResult(v["id"], str(v["name"]), result, dict(v.get("metadata") or {}))


def _ranked(header: JournalHeader, variants: list[Any], complete: bool, ran: Any) -> Any:
    """The matrix of ``variants``, ranked, with the timings of ``ran``."""
    from signal_eval_cli.matrix_model import MatrixResult

    matrix = MatrixResult.of(
        header.name,
        variants,
        interrupted=not complete or (ran is not None and ran.interrupted),
        shard=shard_block(header),
    )
    return _timed(matrix, ran)


def build_scenarios(
    header: JournalHeader,
    entries: Mapping[Key, Mapping[str, Any]],
    ran: Any = None,
    signals: Mapping[Key, list[Signal]] = _NO_SIGNALS,
) -> Any:
    """A scenario run's result from its journal, in the header's order (each scenario's
    runs, when repeated, in run order). Its units are read back whole (``signals``: only
    cases are recorded with theirs)."""
    from signal_eval_cli.scenarios import ScenarioRunResult

    slots = [str(v["id"]) for v in header.variants] or [""]
    scenarios = []
    own = header.own_ids()
    for sid in own:
        for slot in slots:
            data = entries.get((slot, sid))
            if data is not None:
                scenarios.append(scenario_from_entry(sid, data))
    run = ScenarioRunResult.of(
        scenarios,
        name=header.name,
        interrupted=len(scenarios) < len(own) * len(slots) or (ran is not None and ran.interrupted),
        shard=shard_block(header),
    )
    return _timed(run, ran)


def matrix_slot(variant: str, run: int) -> str:
    """A matrix-over-scenarios run's journal key slot: the variant and which run."""
    return f"{variant}#{run}"


def slot_variant_run(slot: str) -> tuple[str, int]:
    """The variant and the run of a :func:`matrix_slot`."""
    variant, _, run = slot.rpartition("#")
    return variant, int(run)


def journal_slots(header: JournalHeader) -> list[str]:
    """The slots (first half of a key) a run's units have: one per matrix variant, per
    run of a repeated scenario, per (variant, run) of a matrix over scenarios."""
    ids = [str(v["id"]) for v in header.variants]
    if header.kind == "scenario-matrix":
        runs = range(max(1, int(header.metadata.get("repeat", 1))))
        return [matrix_slot(v, run) for v in ids for run in runs]
    return ids or [""]


def build_scenario_matrix(
    header: JournalHeader,
    entries: Mapping[Key, Mapping[str, Any]],
    ran: Any = None,
    signals: Mapping[Key, list[Signal]] = _NO_SIGNALS,
) -> Any:
    """A matrix of agents over scenarios from its journal: each variant's scenario runs
    (``header.metadata["repeat"]`` each), as a matrix variant, then the ranking. ``ran``
    (the :class:`~signal_eval_cli.matrix.MatrixResult` that wrote the lines) lends the
    timings; its units are read back whole, as :func:`build_scenarios` reads them."""
    from signal_eval_cli.scenarios import ScenarioRunResult

    runs = range(max(1, int(header.metadata.get("repeat", 1))))
    ran_variants = {v.variant_id: v.result for v in ran.variants} if ran is not None else {}
    own = header.own_ids()
    variants = []
    complete = True
    for v in header.variants:
        keys = [(matrix_slot(v["id"], run), sid) for sid in own for run in runs]
        found = [scenario_from_entry(k[1], entries[k]) for k in keys if k in entries]
        complete &= len(found) == len(keys)
        if found:
            result = ScenarioRunResult.of(found, name=header.name).to_dataset_result()
            result.shard = None  # the matrix carries it
            result.interrupted = len(found) < len(keys)
            variants.append(_variant(v, _timed(result, ran_variants.get(v["id"]))))
    return _ranked(header, variants, complete, ran)


_Build = Callable[
    [JournalHeader, Mapping[Key, Mapping[str, Any]], Any, Mapping[Key, list[Signal]]], Any
]
_BUILDERS: dict[str, _Build] = {
    "dataset": build_dataset,
    "matrix": build_matrix,
    "scenarios": build_scenarios,
    "scenario-matrix": build_scenario_matrix,
}
"""How each kind of run (its journal header's ``kind``) builds its result from its units."""


def build_result(
    header: JournalHeader,
    entries: Mapping[Key, Mapping[str, Any]],
    ran: Any = None,
    signals: Mapping[Key, list[Signal]] = _NO_SIGNALS,
) -> Any:
    """A run's result from its journal entries, as its kind of run builds it (a dataset's
    for a kind it does not know); ``ran``, the run that wrote them (maybe partial), lends
    the timings (and a dataset's cases fail-fast never started), and ``signals`` the
    signals of the cases it recorded (:attr:`JournalPlan.signals`)."""
    build: _Build = _BUILDERS.get(header.kind, build_dataset)
    return build(header, entries, ran, signals)
