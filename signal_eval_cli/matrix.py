"""Variants × cases: run one dataset against several harness variants and pick one.

Each concept is a module of its own, and every name is importable from here:
:mod:`~signal_eval_cli.matrix_files` (the file), :mod:`~signal_eval_cli.matrix_run`
(running it), :mod:`~signal_eval_cli.matrix_model` (its result) and
:mod:`~signal_eval_cli.matrix_ranking` (ranking the variants).
"""

from __future__ import annotations

from signal_eval_cli.matrix_files import MatrixFile, load_matrix, matrix_from_document
from signal_eval_cli.matrix_model import MatrixResult, VariantResult
from signal_eval_cli.matrix_ranking import (
    MATERIAL_DIFFERENCE,
    MIN_CASES_FOR_CONFIDENCE,
    Confidence,
    VariantComparison,
    VariantPoint,
    VariantRecommendation,
    compare_variants,
    pareto_frontier,
    recommend,
)
from signal_eval_cli.matrix_run import (
    BARE_CLIENT,
    MatrixOptions,
    Variant,
    built_variants,
    check_cassette_names,
    export_variants_env,
    run_matrix,
    variant_cassette,
)

__all__ = [
    "BARE_CLIENT",
    "MATERIAL_DIFFERENCE",
    "MIN_CASES_FOR_CONFIDENCE",
    "Confidence",
    "MatrixFile",
    "MatrixOptions",
    "MatrixResult",
    "Variant",
    "VariantComparison",
    "VariantPoint",
    "VariantRecommendation",
    "VariantResult",
    "built_variants",
    "check_cassette_names",
    "compare_variants",
    "export_variants_env",
    "load_matrix",
    "matrix_from_document",
    "pareto_frontier",
    "recommend",
    "run_matrix",
    "variant_cassette",
]
