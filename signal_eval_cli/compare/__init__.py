"""Baseline vs candidate: regressions, improvements, a verdict, and whether to block a merge.

One concept a module: :mod:`.cases` compares two results case by case (the rules),
:mod:`.matrix` two matrices variant by variant, :mod:`.files` picks between them for two
saved results (what ``signal-eval compare`` does). The model they build is
:mod:`signal_eval_cli.comparison`, the statistics :mod:`signal_eval_cli.stats`; every name is
importable from here.
"""

from __future__ import annotations

from signal_eval_cli.compare.cases import compare
from signal_eval_cli.compare.files import compare_files, compare_files_with_sides, compare_results
from signal_eval_cli.compare.matrix import (
    MatrixComparison,
    MatrixComparisonSummary,
    VariantChange,
    compare_matrices,
    pick_variant,
)
from signal_eval_cli.comparison import (
    CaseChange,
    CompareOptions,
    Comparison,
    ComparisonSummary,
    Improvement,
    Metric,
    Regression,
    ResultSummary,
    Severity,
    Side,
    Verdict,
)
from signal_eval_cli.errors import IncompatibleResults
from signal_eval_cli.kinds import CaseResults, kind_of
from signal_eval_cli.stats import (
    Z_95,
    PassRateStats,
    fisher_exact_greater,
    pass_rate_stats,
    wilson_interval,
)

__all__ = [
    "Z_95",
    "CaseChange",
    "CaseResults",
    "CompareOptions",
    "Comparison",
    "ComparisonSummary",
    "Improvement",
    "IncompatibleResults",
    "MatrixComparison",
    "MatrixComparisonSummary",
    "Metric",
    "PassRateStats",
    "Regression",
    "ResultSummary",
    "Severity",
    "Side",
    "VariantChange",
    "Verdict",
    "compare",
    "compare_files",
    "compare_files_with_sides",
    "compare_matrices",
    "compare_results",
    "fisher_exact_greater",
    "pass_rate_stats",
    "pick_variant",
    "result_kind",
    "wilson_interval",
]

result_kind = kind_of
"""The old name of :func:`signal_eval_cli.kinds.kind_of`."""
