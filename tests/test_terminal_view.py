"""What ``merge`` and ``compare`` print and how they exit, by the result's kind: one entry
per kind (``reports.terminal``), ``kinds.passed``, and the comparison that keeps both
sides for the HTML page (``compare_files_with_sides``). In process: no CLI needed."""

from __future__ import annotations

from pathlib import Path

import pytest
from results_helpers import case, dataset
from rich.console import Console

from signal_eval_cli.compare import compare, compare_files_with_sides, compare_matrices
from signal_eval_cli.kinds import RESULT_KINDS, passed
from signal_eval_cli.matrix import MatrixResult, VariantResult
from signal_eval_cli.persistence import save_result
from signal_eval_cli.reports import terminal
from signal_eval_cli.reports.console import print_dataset
from signal_eval_cli.reports.console_matrix import (
    print_comparison,
    print_matrix,
    print_matrix_comparison,
)
from signal_eval_cli.reports.terminal import print_result
from signal_eval_cli.results import DatasetResult
from signal_eval_cli.scenarios import ScenarioResult, ScenarioRunResult


def _matrix(failing: bool) -> MatrixResult:
    variants = [
        VariantResult("a", "A", dataset(case("c0"), case("c1", not failing)), {}),
        VariantResult("b", "B", dataset(case("c0"), case("c1")), {}),
    ]
    return MatrixResult.of("m", variants)


def _printed(draw: object, *args: object) -> str:
    console = Console(record=True, width=120)
    draw(*args, console)  # type: ignore[operator]
    return console.export_text()


def test_every_result_kind_has_a_terminal_view() -> None:
    assert set(terminal._RENDERS) == set(RESULT_KINDS)


def test_each_kind_prints_as_its_own_drawing() -> None:
    data = dataset(case("a"), case("b", False))
    scenarios = ScenarioRunResult.of([ScenarioResult("s", True)])
    base, cand = _matrix(False), _matrix(True)
    drawn = [
        (data, print_dataset),
        (scenarios, print_dataset),
        (base, print_matrix),
        (compare(data, data), print_comparison),
        (compare_matrices(base, cand), print_matrix_comparison),
    ]
    for result, draw in drawn:
        assert _printed(print_result, result) == _printed(draw, result), type(result)


def test_a_kind_with_no_terminal_view_is_a_clear_error() -> None:
    class Custom(DatasetResult):
        kind = "custom"

    with pytest.raises(TypeError, match="no terminal view for a custom result"):
        print_result(Custom("x", []), Console(record=True))


def test_a_run_is_green_when_no_case_failed_and_a_matrix_always() -> None:
    assert passed(dataset(case("a"), case("b", skipped=True)))
    assert not passed(dataset(case("a"), case("b", False)))
    assert not passed(ScenarioRunResult.of([ScenarioResult("s", False)]))
    assert passed(_matrix(failing=True))  # exploratory: gate with compare


def test_comparing_files_with_sides_keeps_both_results_of_a_case_comparison(
    tmp_path: Path,
) -> None:
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    save_result(dataset(case("a"), case("b")), base)
    save_result(dataset(case("a"), case("b", False)), cand)
    result, sides = compare_files_with_sides(base, cand)
    assert result.kind == "comparison" and result.summary.should_block
    assert sides is not None and [c.case_id for c in sides[1].cases] == ["a", "b"]
    assert not sides[1].cases[1].passed
    save_result(_matrix(False), base)
    save_result(_matrix(True), cand)
    result, sides = compare_files_with_sides(base, cand)
    assert result.kind == "matrixComparison" and sides is None  # no page timelines
    result, sides = compare_files_with_sides(base, cand, variant="a")
    assert result.kind == "comparison" and sides is not None
