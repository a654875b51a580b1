"""Datasets: cases with inputs and assertions, loaded from YAML and validated."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from signal_eval_cli.assertions.registry import uses_judge
from signal_eval_cli.collector import gc_paused
from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.files import atomic_write_text
from signal_eval_cli.kinds import document_kind
from signal_eval_cli.loading import Document, load_document, validate_document

__all__ = [
    "NO_CASES",
    "EvalCase",
    "EvalDataset",
    "HarnessSpec",
    "load_dataset",
    "save_dataset",
]

NO_CASES = "the dataset has no cases: nothing to run"
"""Why ``run`` and ``matrix`` refuse a dataset with no cases (a run of nothing must not go
green); the schema allows one, as ``import --case-into`` starts from it."""


@dataclass(frozen=True, slots=True)
class HarnessSpec:
    """An entry-point string naming a harness factory, and the params to call it with."""

    factory: str
    params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_data(cls, data: Any) -> HarnessSpec:
        if isinstance(data, str):
            return cls(data)
        return cls(str(data["factory"]), dict(data.get("params") or {}))

    def to_data(self) -> str | dict[str, Any]:
        return {"factory": self.factory, "params": self.params} if self.params else self.factory


@dataclass(slots=True)
class EvalCase:
    id: str
    assertions: list[dict[str, Any]]
    input: Any = None
    name: str | None = None
    description: str | None = None
    tags: list[str] = field(default_factory=list)
    timeout: float | None = None
    skip: bool = False
    only: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    repeat: int | None = None

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> EvalCase:
        return cls(
            id=str(data["id"]),
            assertions=[_mapping(a) for a in data.get("assertions", [])],
            input=data.get("input"),
            name=data.get("name"),
            description=data.get("description"),
            tags=list(data.get("tags", [])),
            timeout=data.get("timeout"),
            skip=bool(data.get("skip", False)),
            only=bool(data.get("only", False)),
            metadata=dict(data.get("metadata", {})),
            repeat=data.get("repeat"),
        )

    def to_data(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id}
        for key in ("name", "description"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.tags:
            out["tags"] = self.tags
        for key, value in (("timeout", self.timeout), ("repeat", self.repeat)):
            if value is not None:
                out[key] = value
        if self.skip:
            out["skip"] = True
        if self.only:
            out["only"] = True
        if self.metadata:
            out["metadata"] = self.metadata
        out["input"] = self.input
        out["assertions"] = self.assertions
        return out


def _mapping(assertion: Mapping[str, Any]) -> dict[str, Any]:
    """An assertion as a dict: the loaded one itself (a copy of each would cost a
    100,000-case dataset tens of megabytes; what it nests is shared either way)."""
    return assertion if type(assertion) is dict else dict(assertion)


@dataclass(slots=True)
class EvalDataset:
    name: str
    cases: list[EvalCase]
    description: str | None = None
    default_assertions: list[dict[str, Any]] = field(default_factory=list)
    default_timeout: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    harness: HarnessSpec | None = None
    judge_model: str | None = None
    repeat: int | None = None
    proxy: dict[str, Any] = field(default_factory=dict)
    """The ``proxy:`` section: ``cassette``, ``perCase``, ``match``, ``timing``."""
    path: Path | None = None
    notices: list[Problem] = field(default_factory=list, compare=False, repr=False)
    """What a user should hear about the file that is no error (:func:`_unchecked_notice`),
    said once per file by each command that reads it."""

    def assertions_for(self, case: EvalCase) -> list[dict[str, Any]]:
        """Default assertions first, then the case's own."""
        return [*self.default_assertions, *case.assertions]

    def uses_judge(self) -> bool:
        """Whether any assertion (nested in a composition too) has a type that needs a
        judge (``llm.judge``)."""
        return uses_judge([self.default_assertions, *(c.assertions for c in self.cases)])

    @classmethod
    def from_data(cls, data: Mapping[str, Any], path: Path | None = None) -> EvalDataset:
        harness = data.get("harness")
        return cls(
            name=str(data["name"]),
            cases=[EvalCase.from_data(c) for c in data.get("cases", [])],
            description=data.get("description"),
            default_assertions=[dict(a) for a in data.get("defaultAssertions", [])],
            default_timeout=data.get("defaultTimeout"),
            metadata=dict(data.get("metadata", {})),
            harness=HarnessSpec.from_data(harness) if harness is not None else None,
            judge_model=(data.get("judge") or {}).get("model"),
            repeat=data.get("repeat"),
            proxy=dict(data.get("proxy") or {}),
            path=path,
        )

    def to_data(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.description is not None:
            out["description"] = self.description
        if self.harness is not None:
            out["harness"] = self.harness.to_data()
        if self.judge_model is not None:
            out["judge"] = {"model": self.judge_model}
        if self.default_timeout is not None:
            out["defaultTimeout"] = self.default_timeout
        if self.repeat is not None:
            out["repeat"] = self.repeat
        if self.proxy:
            out["proxy"] = self.proxy
        if self.metadata:
            out["metadata"] = self.metadata
        if self.default_assertions:
            out["defaultAssertions"] = self.default_assertions
        out["cases"] = [c.to_data() for c in self.cases]
        return out


def _labels_as_written(doc: Document) -> None:
    """Case ids and tags are labels: ``tags: [bugs, null]`` means the text ``null``.

    YAML would read such plain scalars as null, numbers or booleans; take the
    text as written instead.
    """
    cases = doc.data.get("cases")
    if not isinstance(cases, list):
        return
    labels: list[tuple[Any, str | int, tuple[str | int, ...]]] = []  # holder, key, path
    for i, case in enumerate(cases):
        if not isinstance(case, dict):
            continue
        if "id" in case and not isinstance(case["id"], str):
            labels.append((case, "id", ("cases", i, "id")))
        tags = case.get("tags")
        if isinstance(tags, list):
            labels.extend(
                (tags, j, ("cases", i, "tags", j))
                for j, tag in enumerate(tags)
                if not isinstance(tag, str)
            )
    written = doc.as_written([path for _, _, path in labels])
    for (holder, key, _), text in zip(labels, written, strict=True):
        holder[key] = text or holder[key]


def dataset_from_document(doc: Document) -> EvalDataset:
    """The dataset in ``doc``, validated (with the cycle collector paused: a large
    dataset makes millions of objects and no cycles, and each full collection would
    walk them all again)."""
    with gc_paused():
        return _dataset_from_document(doc)


def _dataset_from_document(doc: Document) -> EvalDataset:
    _labels_as_written(doc)
    problems = validate_document(doc, "dataset")
    seen: dict[str, int] = {}
    found: list[tuple[tuple[str | int, ...], str]] = []
    defaults = bool(doc.data.get("defaultAssertions")) if not problems else True
    unchecked: list[int] = []
    for i, case in enumerate(doc.data.get("cases", []) if not problems else []):
        if case["id"] in seen:
            found.append(
                (
                    ("cases", i, "id"),
                    f"duplicate case id '{case['id']}' (first at case {seen[case['id']] + 1})",
                )
            )
        seen.setdefault(case["id"], i)
        if defaults or case.get("assertions"):
            continue
        if "assertions" not in case:
            found.append(
                (
                    ("cases", i),
                    f"case '{case['id']}' has no 'assertions' and the dataset no "
                    "'defaultAssertions': nothing would be checked",
                )
            )
        elif not case.get("skip"):
            unchecked.append(i)
    problems.extend(doc.problems(found))  # located in one pass
    if problems:
        raise InputError(problems)
    dataset = EvalDataset.from_data(doc.data, Path(doc.path))
    if unchecked:
        first = doc.data["cases"][unchecked[0]]["id"]
        message = _unchecked_notice(len(unchecked), len(dataset.cases), first)
        dataset.notices.append(doc.problem(("cases", unchecked[0]), message))
    return dataset


def _unchecked_notice(count: int, total: int, first: str) -> str:
    """Why a case written ``assertions: []`` (and no ``defaultAssertions``) is worth a
    warning: it passes whatever its harness answered, a silent pass, yet it is valid (the
    reference passes it too) and a smoke test of the harness itself. What it still checks
    is said, so that no one mistakes it for more."""
    which = f"case '{first}'" if count == 1 else f"{count} of {total} cases (the first '{first}')"
    verb, subject = ("has", "it passes") if count == 1 else ("have", "they pass")
    return (
        f"warning: {which} {verb} 'assertions: []' and the dataset no 'defaultAssertions': "
        f"{subject} whatever the harness answers, checking only that it returns signals "
        "without raising or timing out (with --traces: that the trace reads)"
    )


def load_dataset(path: str | Path) -> EvalDataset:
    """Load and validate a dataset; raise :class:`InputError` listing every problem."""
    return dataset_from_document(dataset_document(path))


def dataset_document(path: str | Path) -> Document:
    """The document of a dataset file, a mapping. A file of another kind (a matrix, a
    scenario, a saved result) is one :class:`InputError` saying what it is and what to
    do with it, not every dataset field it lacks."""
    doc = load_document(path)
    if not isinstance(doc.data, Mapping):
        raise InputError([doc.problem((), "a dataset must be a mapping with 'name' and 'cases'")])
    kind = document_kind(doc.data)
    if kind is not None and kind.name != "dataset":
        message = f"not a dataset ({kind.name} file): {kind.use}"
        raise InputError([doc.problem((), message)])
    return doc


def save_dataset(dataset: EvalDataset, path: str | Path) -> None:
    text = yaml.safe_dump(dataset.to_data(), sort_keys=False, allow_unicode=True, width=120)
    atomic_write_text(path, text)
