"""Baseline matrix vs candidate matrix: each variant's cases compared, one gate for all.

A matrix ranks its variants; a CI gate on a matrix (datasets × harness variants, or
scenarios × coding agents) needs to know whether any variant got worse. Variants are
matched by id and each pair is compared by :func:`~signal_eval_cli.compare.compare`
(the case rules are the same); the matrix comparison blocks when any variant's does.
Variants only in the candidate are ``new_variants``, only in the baseline
``removed_variants`` (a note, never a block, as removed cases are).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from signal_eval_cli.compare.cases import compare
from signal_eval_cli.comparison import CompareOptions, Comparison, Verdict
from signal_eval_cli.errors import IncompatibleResults
from signal_eval_cli.kinds import kind_of
from signal_eval_cli.results import RESULT_SCHEMA_VERSION

__all__ = [
    "MatrixComparison",
    "MatrixComparisonSummary",
    "VariantChange",
    "compare_matrices",
    "pick_variant",
]


@dataclass(slots=True)
class VariantChange:
    """One variant present on both sides, and how its cases compared."""

    variant_id: str
    variant_name: str
    comparison: Comparison

    def to_dict(self) -> dict[str, Any]:
        return {
            "variantId": self.variant_id,
            "variantName": self.variant_name,
            "comparison": self.comparison.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VariantChange:
        return cls(
            str(data["variantId"]),
            str(data.get("variantName", data["variantId"])),
            Comparison.from_dict(data["comparison"]),
        )


@dataclass(slots=True)
class MatrixComparisonSummary:
    verdict: Verdict
    should_block: bool
    block_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"verdict": self.verdict, "shouldBlock": self.should_block}
        if self.block_reason is not None:
            out["blockReason"] = self.block_reason
        return out

    @classmethod
    def of(cls, variants: list[VariantChange]) -> MatrixComparisonSummary:
        """Blocks when a variant blocks (and is then ``worse``); otherwise the variants'
        verdicts agree, or it is ``mixed`` (``equivalent`` ones do not count)."""
        blocking = [v for v in variants if v.comparison.summary.should_block]
        if blocking:
            reason = "; ".join(
                f"variant {v.variant_id}: {v.comparison.summary.block_reason}" for v in blocking
            )
            return cls("worse", True, reason)
        verdicts = {v.comparison.summary.verdict for v in variants} - {"equivalent"}
        verdict: Verdict = (
            "equivalent" if not verdicts else verdicts.pop() if len(verdicts) == 1 else "mixed"
        )
        return cls(verdict, False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatrixComparisonSummary:
        verdict = data["verdict"]
        if verdict not in ("better", "worse", "equivalent", "mixed"):
            raise ValueError(f"unknown verdict {verdict!r}")
        return cls(verdict, bool(data["shouldBlock"]), data.get("blockReason"))


@dataclass(slots=True)
class MatrixComparison:
    name: str
    variants: list[VariantChange]
    """The variants on both sides, in the candidate's order."""
    new_variants: list[str]
    removed_variants: list[str]
    summary: MatrixComparisonSummary
    options: CompareOptions = field(default_factory=CompareOptions)

    kind: ClassVar[str] = "matrixComparison"

    @property
    def notes(self) -> list[str]:
        """Removed variants, then each variant's own notes (removed passing cases)."""
        notes = [f"variant {v} is missing from the candidate" for v in self.removed_variants]
        return notes + [
            f"variant {v.variant_id}: {note}" for v in self.variants for note in v.comparison.notes
        ]

    def to_dict(self, signals: Any = None) -> dict[str, Any]:
        """The saved form (``signals`` is accepted for :func:`save_result` and ignored)."""
        return {
            "schemaVersion": RESULT_SCHEMA_VERSION,
            "kind": self.kind,
            "name": self.name,
            "options": self.options.to_dict(),
            "summary": self.summary.to_dict(),
            "variants": [v.to_dict() for v in self.variants],
            "newVariants": self.new_variants,
            "removedVariants": self.removed_variants,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatrixComparison:
        return cls(
            name=str(data["name"]),
            variants=[VariantChange.from_dict(v) for v in data["variants"]],
            new_variants=[str(v) for v in data["newVariants"]],
            removed_variants=[str(v) for v in data["removedVariants"]],
            summary=MatrixComparisonSummary.from_dict(data["summary"]),
            options=CompareOptions.from_dict(data.get("options", {})),
        )


def _variants(label: str, matrix: Any) -> dict[str, Any]:
    if getattr(matrix, "interrupted", False):
        raise IncompatibleResults(
            f"the {label} matrix '{matrix.name}' was interrupted — re-run it: it holds only "
            "the cases that finished, so it cannot gate a merge"
        )
    return {v.variant_id: v for v in matrix.variants}


def compare_matrices(
    baseline: Any, candidate: Any, options: CompareOptions | None = None
) -> MatrixComparison:
    """Compare two matrix results variant by variant (see the module docstring).

    Raises:
        IncompatibleResults: either was interrupted, they share no variant id, or a
            variant's results cannot be compared (the message names the variant).
    """
    opts = options or CompareOptions()
    base, cand = _variants("baseline", baseline), _variants("candidate", candidate)
    common = [v for v in cand if v in base]
    if not common:
        raise IncompatibleResults(
            f"no variant ids in common: '{baseline.name}' has {', '.join(base) or 'none'}, "
            f"'{candidate.name}' has {', '.join(cand) or 'none'}"
        )
    variants = []
    for variant_id in common:
        try:
            comparison = compare(base[variant_id].result, cand[variant_id].result, opts)
        except IncompatibleResults as exc:
            raise IncompatibleResults(f"variant {variant_id}: {exc}") from None
        variants.append(VariantChange(variant_id, cand[variant_id].variant_name, comparison))
    same = baseline.name == candidate.name
    return MatrixComparison(
        name=candidate.name if same else f"{baseline.name} → {candidate.name}",
        variants=variants,
        new_variants=[v for v in cand if v not in base],
        removed_variants=[v for v in base if v not in cand],
        summary=MatrixComparisonSummary.of(variants),
        options=opts,
    )


def _variant(label: str, matrix: Any, variant_id: str) -> Any:
    if kind_of(matrix) != "matrix":
        raise IncompatibleResults(
            f"--variant picks a variant of a matrix result; the {label} is a "
            f"{kind_of(matrix)} result"
        )
    found = _variants(label, matrix).get(variant_id)
    if found is None:
        ids = ", ".join(v.variant_id for v in matrix.variants) or "none"
        raise IncompatibleResults(
            f"the {label} matrix '{matrix.name}' has no variant '{variant_id}' (it has {ids})"
        )
    return found.result


def pick_variant(baseline: Any, candidate: Any, variant: str | None) -> tuple[Any, Any]:
    """The two results to compare: ``variant``'s case results of two matrices, or the
    two results as given when ``variant`` is ``None``."""
    if variant is None:
        return baseline, candidate
    return _variant("baseline", baseline, variant), _variant("candidate", candidate, variant)
