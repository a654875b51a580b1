"""What a matrix run gives: each variant's result, their ranking and a recommendation.

A saved matrix result (``kind: matrix``) is read back into :class:`MatrixResult`; the
ranking is :mod:`signal_eval_cli.matrix_ranking`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from signal_eval_cli.matrix_ranking import (
    VariantComparison,
    VariantPoint,
    VariantRecommendation,
    compare_variants,
    recommend,
)
from signal_eval_cli.results import RESULT_SCHEMA_VERSION, DatasetResult, SignalsPolicy

__all__ = ["MatrixResult", "VariantResult"]


@dataclass(slots=True)
class VariantResult:
    variant_id: str
    variant_name: str
    result: DatasetResult
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, signals: SignalsPolicy = "failed") -> dict[str, Any]:
        return {
            "variantId": self.variant_id,
            "variantName": self.variant_name,
            "metadata": self.metadata,
            "result": self.result.to_dict(signals),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> VariantResult:
        return cls(
            variant_id=str(data["variantId"]),
            variant_name=str(data["variantName"]),
            result=DatasetResult.from_dict(data["result"]),
            metadata=dict(data.get("metadata") or {}),
        )


@dataclass(slots=True)
class MatrixResult:
    name: str
    variants: list[VariantResult]
    comparison: VariantComparison
    recommendation: VariantRecommendation | None = None
    duration_ms: float = 0.0
    started_at: str = ""
    completed_at: str = ""
    interrupted: bool = False
    shard: dict[str, Any] | None = None
    """As :attr:`DatasetResult.shard`."""

    kind: ClassVar[str] = "matrix"

    @classmethod
    def of(cls, name: str, variants: list[VariantResult], **kwargs: Any) -> MatrixResult:
        """Rank the variants and recommend one (none from an interrupted run's partial
        results: a variant that ran fewer cases would be judged on other evidence)."""
        points = [VariantPoint.of(v) for v in variants]
        chosen = None if kwargs.get("interrupted") else recommend(points)
        return cls(name, variants, compare_variants(points), chosen, **kwargs)

    def variant(self, variant_id: str) -> VariantResult:
        return next(v for v in self.variants if v.variant_id == variant_id)

    def to_dict(self, signals: SignalsPolicy = "failed") -> dict[str, Any]:
        return {
            "schemaVersion": RESULT_SCHEMA_VERSION,
            "kind": self.kind,
            "name": self.name,
            "durationMs": round(self.duration_ms, 3),
            "startedAt": self.started_at,
            "completedAt": self.completed_at,
            "interrupted": self.interrupted,
            **({"shard": self.shard} if self.shard is not None else {}),
            "comparison": self.comparison.to_dict(),
            "recommendation": self.recommendation.to_dict() if self.recommendation else None,
            "variants": [v.to_dict(signals) for v in self.variants],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatrixResult:
        recommendation = data.get("recommendation")
        return cls(
            name=str(data["name"]),
            variants=[VariantResult.from_dict(v) for v in data["variants"]],
            comparison=VariantComparison.from_dict(data["comparison"]),
            recommendation=(
                VariantRecommendation.from_dict(recommendation) if recommendation else None
            ),
            duration_ms=float(data.get("durationMs", 0.0)),
            started_at=str(data.get("startedAt", "")),
            completed_at=str(data.get("completedAt", "")),
            interrupted=bool(data.get("interrupted", False)),
            shard=data.get("shard"),
        )
