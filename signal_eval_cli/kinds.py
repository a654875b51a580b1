"""What a result is (:class:`Result`), and the one table of result kinds and of file kinds.

A saved result names its kind (``"kind": "matrix"``); :data:`RESULT_KINDS` says which
class reads it back (:func:`~signal_eval_cli.persistence.load_result`). An input file
says nothing: ``signal-eval validate`` tries the detectors of :data:`DOCUMENT_KINDS` in
the table's order and checks the file as the first that matches.

Both tables name code as ``"module:attr"`` strings, imported when a file of that kind is
met, so importing this module imports none of them. A new kind of the package is one
line in a table; one from elsewhere (a plugin) is added with
:func:`register_result_kind` or :func:`register_document_kind`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

if TYPE_CHECKING:
    from signal_eval_cli.loading import Document
    from signal_eval_cli.results import CaseResult, SignalsPolicy

__all__ = [
    "DOCUMENT_KINDS",
    "RESULT_KINDS",
    "CaseResults",
    "DocumentKind",
    "Result",
    "document_kind",
    "has_cases",
    "kind_of",
    "passed",
    "register_document_kind",
    "register_result_kind",
    "result_type",
]


class Result(Protocol):
    """A saved result: a run of a dataset or of scenarios, a matrix, a comparison…"""

    @property
    def kind(self) -> str:
        """Its key in :data:`RESULT_KINDS`, saved as the file's ``kind``."""
        ...

    @property
    def name(self) -> str: ...

    def to_dict(self, signals: SignalsPolicy = "failed") -> dict[str, Any]:
        """The saved form (``signals``: which cases keep their signals)."""
        ...

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Result: ...


class CaseResults(Result, Protocol):
    """A result made of cases, which :func:`~signal_eval_cli.compare.compare` matches by
    id and the reports list: dataset and scenario results (a matrix or a comparison holds
    results, not cases)."""

    @property
    def cases(self) -> list[CaseResult]: ...


RESULT_KINDS: dict[str, str | type[Result]] = {
    "dataset": "signal_eval_cli.results:DatasetResult",
    "scenarios": "signal_eval_cli.scenarios.runner:ScenarioRunResult",
    "matrix": "signal_eval_cli.matrix_model:MatrixResult",
    "comparison": "signal_eval_cli.comparison:Comparison",
    "matrixComparison": "signal_eval_cli.compare.matrix:MatrixComparison",
}
"""Every kind of saved result: ``kind`` → its class (a :class:`Result`)."""


def result_type(kind: str) -> type[Result] | None:
    """The class that reads results of ``kind``; ``None`` for a kind nobody knows."""
    found = RESULT_KINDS.get(kind)
    return _resolve(found) if isinstance(found, str) else found


def register_result_kind(kind: str, result_class: type[Result] | str) -> None:
    """Teach :func:`~signal_eval_cli.persistence.load_result` a kind from outside the
    package: its class, or where it is (``"package.module:Class"``)."""
    RESULT_KINDS[kind] = result_class


def has_cases(result: object) -> TypeGuard[CaseResults]:
    """Dataset results, scenario results — anything with a name and a list of cases."""
    cases = getattr(result, "cases", None)
    return isinstance(cases, list) and isinstance(getattr(result, "name", None), str)


def kind_of(result: object) -> str:
    """A result's ``kind``; for anything else (named in a message), its type's name."""
    kind = getattr(result, "kind", None)
    return kind if isinstance(kind, str) else type(result).__name__


def passed(result: object) -> bool:
    """Whether a run's result is green (its command exits 0): a dataset's or scenarios'
    when no case failed; a matrix, exploratory, always (gate its variants with compare)."""
    return bool(getattr(result, "passed", True))


# -- input files --------------------------------------------------------------------------------


@dataclass(frozen=True)
class DocumentKind:
    """A kind of input file: how to recognise its top level and how to check it."""

    name: str
    detect: Callable[[Mapping[str, Any]], bool]
    check: Callable[[Document], object] | str
    """Raises :class:`~signal_eval_cli.errors.InputError` listing the problems; a
    ``"module:attr"`` string is imported when a file of this kind is checked."""
    use: str = ""
    """What to do with such a file, said when it is given where another kind is wanted
    (``run matrix.yaml``): one line instead of every field it lacks."""

    def checker(self) -> Callable[[Document], object]:
        return _resolve(self.check) if isinstance(self.check, str) else self.check


def is_result_data(data: Mapping[str, Any]) -> bool:
    """A results file also has ``cases``: it is told by what only results carry."""
    return "schemaVersion" in data and "kind" in data


def is_scenario_data(data: Mapping[str, Any]) -> bool:
    """How ``signal-eval validate`` tells a scenario from a dataset or a matrix."""
    return "cases" not in data and (
        "adapterId" in data
        or "patternAssertions" in data
        or "agentTask" in data
        or ("fixture" in data and "goals" in data)
    )


def _is_agents_data(data: Mapping[str, Any]) -> bool:
    return "agents" in data and not {"cases", "variants"} & set(data)


DOCUMENT_KINDS: list[DocumentKind] = [
    DocumentKind(
        "result",
        is_result_data,
        "signal_eval_cli.validate:check_result",
        "read it with `signal-eval report` or `signal-eval compare`",
    ),
    DocumentKind(
        "proxy cassette",
        lambda data: "interactions" in data,
        "signal_eval_cli.proxy.cassette:interactions_from_document",
        "recorded model calls, which a run replays (run the dataset beside it)",
    ),
    DocumentKind(
        "cassette",
        lambda data: "entries" in data and "version" in data,
        "signal_eval_cli.providers.cassette:Cassette.from_document",
        "recorded model calls: a dataset's harness params name it (cassette: PATH)",
    ),
    DocumentKind(
        "agents",
        _is_agents_data,
        "signal_eval_cli.harness.reactive:agents_from_document",
        "a dataset's harness params name it (agents: PATH)",
    ),
    DocumentKind(
        "matrix",
        lambda data: "variants" in data,
        "signal_eval_cli.matrix_files:check_matrix",
        "run it with `signal-eval matrix`",
    ),
    DocumentKind(
        "scenario",
        is_scenario_data,
        "signal_eval_cli.scenarios:check_scenario_document",
        "run it with `signal-eval scenario`",
    ),
    DocumentKind(
        "dataset",
        lambda data: "cases" in data,
        "signal_eval_cli.validate:check_dataset",
        "run it with `signal-eval run`",
    ),
]
"""Every kind of input file, in the order they are tried: the first whose ``detect``
matches is the file's kind (the catch-all ``dataset`` last)."""


def document_kind(data: Mapping[str, Any]) -> DocumentKind | None:
    """The kind of a file's top level: the first of :data:`DOCUMENT_KINDS` to match."""
    return next((kind for kind in DOCUMENT_KINDS if kind.detect(data)), None)


def register_document_kind(kind: DocumentKind) -> None:
    """Teach ``signal-eval validate`` a kind of file from outside the package (tried
    before the catch-all ``dataset``)."""
    DOCUMENT_KINDS.insert(len(DOCUMENT_KINDS) - 1, kind)


def _resolve(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    found: Any = importlib.import_module(module)
    for part in attr.split("."):
        found = getattr(found, part)
    return found
