"""What ``signal-eval compare`` does with two results: the comparison their kinds call for.

Two matrices compare variant by variant (:mod:`.matrix`), or one variant of each as case
results; results made of cases compare case by case (:mod:`.cases`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from signal_eval_cli.collector import gc_paused
from signal_eval_cli.compare.cases import compare
from signal_eval_cli.compare.matrix import MatrixComparison, compare_matrices, pick_variant
from signal_eval_cli.comparison import CompareOptions, Comparison
from signal_eval_cli.kinds import Result, kind_of
from signal_eval_cli.persistence import load_result

__all__ = ["compare_files", "compare_files_with_sides", "compare_results"]


def compare_files(
    baseline: str | Path,
    candidate: str | Path,
    options: CompareOptions | None = None,
    *,
    variant: str | None = None,
) -> Comparison | MatrixComparison:
    """Load two saved results and compare them (what ``signal-eval compare`` does): a
    :class:`Comparison`, or for two matrices a
    :class:`~signal_eval_cli.compare.matrix.MatrixComparison` (``variant``: one
    variant's :class:`Comparison`).

    The files are read through their case indexes where they hold (``lean=True``).

    Raises:
        InputError: a file is unreadable, old, malformed or of an unknown kind.
        IncompatibleResults: see :func:`compare` and
            :func:`~signal_eval_cli.compare.matrix.compare_matrices`.
    """
    # load_result pauses the collector while it builds a result; this pause is for what
    # follows: with the collector back on, the millions of objects just loaded are all
    # in the young generation and compare()'s first allocations would make it traverse
    # them (and then again in the older generations): about 1 s more for 2 × 100,000
    # cases. It also covers freeing both results on the way out.
    with gc_paused():
        base, cand = load_result(baseline, lean=True), load_result(candidate, lean=True)
        return compare_results(base, cand, options, variant=variant)


def compare_files_with_sides(
    baseline: str | Path,
    candidate: str | Path,
    options: CompareOptions | None = None,
    *,
    variant: str | None = None,
) -> tuple[Comparison | MatrixComparison, tuple[Result, Result] | None]:
    """:func:`compare_files`, keeping both results whole for a report that shows them (the
    HTML page draws the flipped cases' timelines): the comparison, and the two sides it
    compared case by case (``None`` for two matrices compared variant by variant)."""
    with gc_paused():
        loaded = pick_variant(load_result(baseline), load_result(candidate), variant)
        result = compare_results(*loaded, options)
        return result, (loaded if kind_of(result) == "comparison" else None)


def compare_results(
    baseline: Any,
    candidate: Any,
    options: CompareOptions | None = None,
    *,
    variant: str | None = None,
) -> Comparison | MatrixComparison:
    """What ``signal-eval compare`` does with two loaded results: two matrices compare
    variant by variant (only ``variant``, as case results, when given); results with
    cases compare case by case (:func:`compare`)."""
    baseline, candidate = pick_variant(baseline, candidate, variant)
    if kind_of(baseline) == kind_of(candidate) == "matrix":
        return compare_matrices(baseline, candidate, options)
    return compare(baseline, candidate, options)
