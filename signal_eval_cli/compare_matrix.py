"""The old home of the matrix comparison: :mod:`signal_eval_cli.compare.matrix` (and
:mod:`signal_eval_cli.compare.files` for picking a variant); every name is re-exported."""

from __future__ import annotations

from signal_eval_cli.compare.files import compare_results
from signal_eval_cli.compare.matrix import (
    MatrixComparison,
    MatrixComparisonSummary,
    VariantChange,
    compare_matrices,
    pick_variant,
)

__all__ = [
    "MatrixComparison",
    "MatrixComparisonSummary",
    "VariantChange",
    "compare_matrices",
    "compare_results",
    "pick_variant",
]
