"""``signal-eval validate``: check any input file without running anything."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from signal_eval_cli.dataset import (
    NO_CASES,
    EvalDataset,
    dataset_document,
    dataset_from_document,
)
from signal_eval_cli.errors import InputError, ParamError, Problem, undecodable
from signal_eval_cli.files import read_input
from signal_eval_cli.journal import is_journal, parse_journal
from signal_eval_cli.kinds import (
    DOCUMENT_KINDS,
    DocumentKind,
    document_kind,
    register_document_kind,
)
from signal_eval_cli.loading import Document, load_document, lone_surrogate_problems

if TYPE_CHECKING:  # the trace readers are imported by what reads a trace, not by every run
    from signal_eval_cli.traces.source import Source

__all__ = [
    "DocumentKind",
    "check_dataset",
    "check_result",
    "load_checked_dataset",
    "register_document_kind",
    "runnable_dataset",
    "validate_path",
]


def check_result(doc: Document) -> None:
    """A saved result, read as ``compare``, ``report`` and ``merge`` read it
    (:func:`~.persistence.parse_result`): the same problems in the same words (a
    ``schemaVersion`` of another version), and a field an older version left out taken
    as they take it, not refused."""
    from signal_eval_cli.persistence import parse_result

    text = doc.source  # the fast path kept it; else read again (a rare file: not a pipe)
    parse_result(doc.path, text.encode() if text is not None else read_input(doc.path))


def check_dataset(
    doc: Document,
    params: Mapping[str, Any] | None = None,
    provider: str | None = None,
    recording: bool = False,
) -> EvalDataset:
    """Schema, then the harness it names (see :func:`check_harness`) with its params and
    ``params`` over them (``run --param``; ``provider``, ``recording``: ``run --provider``,
    ``--record``), located at the param a problem is about (a missing agents file,
    cassette), else at the harness."""
    from signal_eval_cli.harness.entrypoints import check_harness

    dataset = runnable_dataset(doc)
    if dataset.harness is None:
        return dataset
    given = dict(params or {})
    try:
        merged = {**dataset.harness.params, **given}
        check_harness(
            dataset.harness.factory,
            merged,
            dataset_path=Path(doc.path),
            provider=provider,
            recording=recording,
            inputs=[case.input for case in dataset.cases],
        )
    except InputError as exc:
        raise InputError(
            [p if p.line > 0 else doc.problem(_node(doc, exc, given), str(p)) for p in exc.problems]
        ) from exc
    return dataset


def runnable_dataset(doc: Document) -> EvalDataset:
    """The dataset in ``doc``, which must have a case (:data:`~.dataset.NO_CASES`):
    ``run`` refuses one with none, and ``validate`` says so before it."""
    dataset = dataset_from_document(doc)
    if not dataset.cases:
        hint = "add a case, or a trace as one: `signal-eval import TRACE --case-into FILE`"
        raise InputError([doc.problem(("cases",), f"{NO_CASES} ({hint})")])
    return dataset


def _node(doc: Document, exc: InputError, given: Mapping[str, Any]) -> tuple[str, ...]:
    """Where in the dataset a harness problem is: at its param, else at the factory."""
    harness = doc.data["harness"]
    if not isinstance(harness, Mapping):
        return ("harness",)
    param = exc.param if isinstance(exc, ParamError) else None
    in_file = harness.get("params")
    if param not in given and isinstance(in_file, Mapping) and param in in_file:
        return ("harness", "params", str(param))
    return ("harness", "factory")


def load_checked_dataset(
    path: str | Path,
    params: Mapping[str, Any] | None = None,
    provider: str | None = None,
    recording: bool = False,
) -> EvalDataset:
    """:func:`~signal_eval_cli.dataset.load_dataset`, and its harness checked as
    ``validate`` checks it: what ``run`` does before any case runs."""
    return check_dataset(dataset_document(path), params, provider, recording)


def _jsonl_kind(path: str | Path, note: Callable[[Problem], None] | None) -> str:
    """A ``.jsonl`` file: a run's journal (what ``merge`` and ``--resume`` read), else a
    trace; each checked as its readers check it (:class:`InputError`)."""
    name = str(path)
    try:
        raw = read_input(path)
    except OSError as exc:
        raise InputError([Problem(name, 0, 0, f"cannot read: {exc.strerror}")]) from None
    if is_journal(raw):
        parse_journal(Path(path), raw)
        return "journal"
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError([undecodable(name, exc, f"not UTF-8 text ({exc.reason})")]) from None
    from signal_eval_cli.traces.source import Source

    return _trace_kind(Source(name, text), note)


def _trace_kind(
    source: Source, note: Callable[[Problem], None] | None, format: str | None = None
) -> str:
    """A trace, read as ``run --traces`` and ``import`` read it (its ``format`` detected
    when not given: an empty file, an Agents SDK export, OTLP, LangGraph's JSONL), what it
    lacks said."""
    from signal_eval_cli.traces import detect_format, read_trace_source
    from signal_eval_cli.traces.source import trace_gaps

    format = format or detect_format(source)
    with trace_gaps() as gaps:
        read_trace_source(source, format)
    for gap in gaps:
        if note is not None:
            note(Problem("", 0, 0, f"warning: {gap}"))
    return f"trace: {format}"


def _trace_format(source: Source) -> str | None:
    """The format of a JSON file that is no document of ours, if it is a trace ``import``
    reads."""
    from signal_eval_cli.traces import detect_format

    try:
        return detect_format(source)
    except InputError:
        return None


def validate_path(
    path: str | Path, note: Callable[[Problem], None] | None = None
) -> tuple[str, list[Problem]]:
    """``(kind, problems)`` for one file, of a kind in
    :data:`~signal_eval_cli.kinds.DOCUMENT_KINDS`; no problems means it is valid. What
    a valid dataset's reader should still hear (:attr:`~.dataset.EvalDataset.notices`,
    of a matrix's dataset too) goes to ``note``."""
    name = str(path)
    try:
        if name.endswith(".jsonl"):
            return _jsonl_kind(path, note), []
        doc = load_document(path, lone_surrogates=True)  # as a result's or trace's reader
        if not isinstance(doc.data, Mapping):
            return "unknown", [doc.problem((), "expected a mapping at the top level")]
        kind = document_kind(doc.data)
        if kind is not None:
            if kind.name != "result" and (problems := lone_surrogate_problems(doc)):
                return "invalid", problems  # as run, matrix or scenario read the file
            checked = kind.checker()(doc)
            dataset = getattr(checked, "dataset", checked)
            if note is not None and isinstance(dataset, EvalDataset):
                for notice in dataset.notices:
                    note(notice)
            if isinstance(checked, EvalDataset) and checked.harness is None:  # `run` says it
                return f"{kind.name}; it names no harness: run it with --harness or --traces", []
            return kind.name, []
        from signal_eval_cli.traces.source import Source

        source = Source(name, doc.source or "")
        format = _trace_format(source) if doc.syntax == "json" and doc.source else None
        if format is not None:
            return _trace_kind(source, note, format), []
        known = ", ".join(k.name for k in DOCUMENT_KINDS)
        return "unknown", [
            doc.problem((), f"not a recognised file (expected one of: {known}, or a trace)")
        ]
    except InputError as exc:
        return "invalid", exc.problems
