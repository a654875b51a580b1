"""``signal-eval validate``: check any input file without running anything."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from signal_eval_cli.dataset import EvalDataset, dataset_from_document
from signal_eval_cli.errors import InputError, ParamError, Problem
from signal_eval_cli.loading import Document, load_document, validate_document
from signal_eval_cli.signals import read_jsonl

__all__ = ["DocumentKind", "load_checked_dataset", "register_document_kind", "validate_path"]


@dataclass(frozen=True)
class DocumentKind:
    """A kind of input file: how to recognise it and how to check it (raising InputError)."""

    name: str
    detect: Callable[[Mapping[str, Any]], bool]
    check: Callable[[Document], object]


def _check_result(doc: Document) -> None:
    problems = validate_document(doc, "result")
    if problems:
        raise InputError(problems)


def _check_dataset(
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

    dataset = dataset_from_document(doc)
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
        )
    except InputError as exc:
        raise InputError(
            [p if p.line > 0 else doc.problem(_node(doc, exc, given), str(p)) for p in exc.problems]
        ) from exc
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
    doc = load_document(path)
    if not isinstance(doc.data, Mapping):
        raise InputError([doc.problem((), "a dataset must be a mapping with 'name' and 'cases'")])
    return _check_dataset(doc, params, provider, recording)


_KINDS: list[DocumentKind] = [
    # a results file also has "cases": recognise it by what only results carry
    DocumentKind("result", lambda data: "schemaVersion" in data and "kind" in data, _check_result),
    DocumentKind("dataset", lambda data: "cases" in data, _check_dataset),
]


def register_document_kind(kind: DocumentKind) -> None:
    _KINDS.insert(len(_KINDS) - 1, kind)  # before the catch-all "cases" of a dataset


# The modules that register the other kinds, in the order they are tried (the library
# imports lazily: nothing else may have imported them yet).
_KIND_MODULES = (
    "signal_eval_cli.providers.cassette",
    "signal_eval_cli.harness.reactive",
    "signal_eval_cli.matrix",
    "signal_eval_cli.scenarios",
)


def validate_path(path: str | Path) -> tuple[str, list[Problem]]:
    """``(kind, problems)`` for one file; no problems means it is valid."""
    name = str(path)
    for module in _KIND_MODULES:
        importlib.import_module(module)
    try:
        if name.endswith(".jsonl"):
            read_jsonl(path)
            return "trace", []
        doc = load_document(path)
        if not isinstance(doc.data, Mapping):
            return "unknown", [doc.problem((), "expected a mapping at the top level")]
        for kind in _KINDS:
            if kind.detect(doc.data):
                kind.check(doc)
                return kind.name, []
        known = ", ".join(k.name for k in _KINDS)
        return "unknown", [
            doc.problem((), f"not a recognised file (expected one of: {known}, or a .jsonl trace)")
        ]
    except InputError as exc:
        return "invalid", exc.problems
