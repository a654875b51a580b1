"""Matrix files: a dataset and its variants, validated and loaded.

A matrix file names a dataset and its variants::

    dataset: code-review.yaml          # relative to the matrix file
    variants:
      - id: detailed
        name: Detailed prompt
        harness: {factory: reactive, params: {cassette: cassettes/detailed.yaml}}
        params: {temperature: 0}       # merged over the harness params
        metadata: {promptVersion: v2.1}

A variant without ``harness`` uses the dataset's. A file with ``scenarios`` instead of
``dataset`` is a scenario matrix (:mod:`signal_eval_cli.scenarios.matrix`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from signal_eval_cli.dataset import NO_CASES, EvalDataset, HarnessSpec, load_dataset
from signal_eval_cli.errors import InputError, each_or_every_problem, shorten
from signal_eval_cli.loading import Document, load_document, validate_document
from signal_eval_cli.matrix_run import Variant

if TYPE_CHECKING:
    from signal_eval_cli.scenarios.matrix import ScenarioMatrix

__all__ = ["MatrixFile", "check_matrix", "load_matrix", "matrix_from_document"]


@dataclass(slots=True)
class MatrixFile:
    name: str
    dataset: EvalDataset
    variants: list[Variant]
    description: str | None = None
    path: Path | None = None


def matrix_from_document(doc: Document) -> MatrixFile | ScenarioMatrix:
    """Validate a parsed matrix file and load the dataset (or the scenarios) it names."""
    if isinstance(doc.data, Mapping) and "scenarios" in doc.data:
        # Imported here: scenarios import this module (MatrixResult).
        from signal_eval_cli.scenarios.matrix import scenario_matrix_from_document

        return scenario_matrix_from_document(doc)
    return _dataset_matrix(doc)


def _dataset_matrix(doc: Document) -> MatrixFile:
    problems = validate_document(doc, "matrix")
    if problems:
        raise InputError(problems)
    data = doc.data
    seen: dict[str, int] = {}
    for i, variant in enumerate(data["variants"]):
        if variant["id"] in seen:
            problems.append(
                doc.problem(
                    ("variants", i, "id"),
                    f"duplicate variant id '{variant['id']}' "
                    f"(first at variant {seen[variant['id']] + 1})",
                )
            )
        seen.setdefault(variant["id"], i)
    base_dir = Path(doc.path).parent
    dataset_path = base_dir / data["dataset"]
    try:
        unread = None if dataset_path.is_file() else "dataset file not found"
    except OSError as exc:  # a name too long for the file system, say
        unread = f"cannot read the dataset file: {exc.strerror or exc}"
    if unread is not None:
        problems.append(doc.problem(("dataset",), f"{unread}: {shorten(str(dataset_path))}"))
    if problems:
        raise InputError(problems)
    dataset = load_dataset(dataset_path)
    if not dataset.cases:  # as `run` refuses it: no variant would run anything
        raise InputError(
            [doc.problem(("dataset",), f"{shorten(str(data['dataset']))}: {NO_CASES}")]
        )
    variants = [
        Variant(
            id=v["id"],
            name=v.get("name", v["id"]),
            harness=HarnessSpec.from_data(v["harness"]) if "harness" in v else None,
            params=dict(v.get("params") or {}),
            metadata=dict(v.get("metadata") or {}),
            base_dir=base_dir,
            where=doc.problem(_variant_node(i, v), ""),
        )
        for i, v in enumerate(data["variants"])
    ]
    if dataset.harness is None:
        missing = [
            doc.problem(
                ("variants", i, "id"),
                f"variant '{v.id}' names no harness and the dataset has none: add "
                "'harness: pkg.module:factory' to the variant",
            )
            for i, v in enumerate(variants)
            if v.harness is None
        ]
        if missing:
            raise InputError(missing)
    return MatrixFile(
        name=str(data.get("name") or dataset.name),
        dataset=dataset,
        variants=variants,
        description=data.get("description"),
        path=Path(doc.path),
    )


def check_matrix(doc: Document) -> MatrixFile | ScenarioMatrix:
    """``validate``'s check of a matrix file: :func:`matrix_from_document`, then each
    variant's harness as a dataset's is checked (it imports, takes its params, the files
    they name exist), without building it, located at the variant."""
    matrix = matrix_from_document(doc)
    if isinstance(matrix, MatrixFile):
        each_or_every_problem(matrix.variants, lambda v: v.check(matrix.dataset))
    return matrix


def _variant_node(index: int, variant: Mapping[str, object]) -> tuple[str | int, ...]:
    """Where a problem building a variant's harness is shown: at its ``harness``, else
    its ``params``, else the variant itself (it runs the dataset's harness)."""
    for key in ("harness", "params"):
        if key in variant:
            return ("variants", index, key)
    return ("variants", index)


def load_matrix(path: str | Path) -> MatrixFile | ScenarioMatrix:
    """Load and validate a matrix file and its dataset; :class:`InputError` lists problems."""
    doc = load_document(path)
    if not isinstance(doc.data, Mapping):
        raise InputError(
            [doc.problem((), "a matrix must be a mapping with 'dataset' and 'variants'")]
        )
    if "cases" in doc.data and "variants" not in doc.data:
        raise InputError(
            [
                doc.problem(
                    (),
                    "this is a dataset (it has 'cases'): run it with `signal-eval run`; "
                    "`matrix` takes a file with 'dataset' and 'variants'",
                )
            ]
        )
    return matrix_from_document(doc)
