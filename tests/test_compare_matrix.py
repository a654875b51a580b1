"""`signal-eval compare` on two matrix results: variant by variant, one gate (issue 15 item 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from results_helpers import case, dataset, saved_and_loaded
from test_scenario_matrix import write as write_scenario_matrix
from typer.testing import CliRunner

from signal_eval_cli.cli import app
from signal_eval_cli.compare import IncompatibleResults
from signal_eval_cli.compare_matrix import MatrixComparison, compare_matrices, compare_results
from signal_eval_cli.matrix import MatrixResult, VariantResult
from signal_eval_cli.persistence import save_result


def matrix(name: str = "m", **variants: list[bool]) -> MatrixResult:
    """Each variant's cases c0, c1, … passing or not as given."""
    return MatrixResult.of(
        name,
        [
            VariantResult(vid, vid.title(), dataset(*(case(f"c{i}", p) for i, p in enumerate(ps))))
            for vid, ps in variants.items()
        ],
    )


def test_each_variant_is_compared_by_id_and_one_regressing_variant_blocks() -> None:
    base = matrix(a=[True, True], b=[False, True], gone=[True])
    cand = matrix(b=[True, True], a=[True, False], fresh=[True])
    result = compare_matrices(base, cand)
    assert [v.variant_id for v in result.variants] == ["b", "a"]  # the candidate's order
    by_id = {v.variant_id: v.comparison for v in result.variants}
    assert [r.case_id for r in by_id["a"].critical] == ["c1"]
    assert [i.case_id for i in by_id["b"].improvements if i.type == "fail_to_pass"] == ["c0"]
    assert result.new_variants == ["fresh"] and result.removed_variants == ["gone"]
    assert result.summary.should_block and result.summary.verdict == "worse"
    assert result.summary.block_reason == "variant a: 1 critical regression: c1"
    assert result.notes == ["variant gone is missing from the candidate"]


def test_no_variant_regressing_does_not_block_and_the_verdicts_combine() -> None:
    better = compare_matrices(matrix(a=[False, True], b=[True]), matrix(a=[True, True], b=[True]))
    assert not better.summary.should_block and better.summary.verdict == "better"
    same = compare_matrices(matrix(a=[True]), matrix(a=[True]))
    assert same.summary.verdict == "equivalent"


def test_matrices_that_cannot_gate_are_refused_naming_the_variant() -> None:
    with pytest.raises(IncompatibleResults, match="no variant ids in common"):
        compare_matrices(matrix(a=[True]), matrix(b=[True]))
    interrupted = matrix(a=[True])
    interrupted.interrupted = True
    with pytest.raises(IncompatibleResults, match="candidate matrix 'm' was interrupted"):
        compare_matrices(matrix(a=[True]), interrupted)
    other = MatrixResult.of("m", [VariantResult("a", "A", dataset(case("zz")))])
    with pytest.raises(IncompatibleResults, match="variant a: no case ids in common"):
        compare_matrices(matrix(a=[True]), other)
    with pytest.raises(IncompatibleResults, match="the candidate is a matrix result"):
        compare_results(dataset(case("c0")), matrix(a=[True]))
    with pytest.raises(IncompatibleResults, match="the baseline is a dataset result"):
        compare_results(dataset(case("c0")), dataset(case("c0")), variant="a")
    with pytest.raises(IncompatibleResults, match=r"has no variant 'x' \(it has a\)"):
        compare_results(matrix(a=[True]), matrix(a=[True]), variant="x")


def test_a_matrix_comparison_saves_validates_and_loads_back(tmp_path: Path) -> None:
    result = compare_matrices(matrix(a=[True, True], old=[True]), matrix(a=[True, False]))
    assert isinstance(saved_and_loaded(result, tmp_path / "cmp.json"), MatrixComparison)


def _saved(result: MatrixResult, path: Path) -> Path:
    save_result(result, path)
    return path


def test_cli_compares_dataset_matrices_and_gates_on_any_variant(tmp_path: Path) -> None:
    base = _saved(matrix("review", a=[True, True], b=[True]), tmp_path / "base.json")
    cand = _saved(matrix("review", a=[True, False], b=[True]), tmp_path / "cand.json")
    md, out = tmp_path / "summary.md", tmp_path / "cmp.json"
    run = CliRunner().invoke(
        app,
        [
            "compare",
            str(base),
            str(cand),
            "--fail-on-regression",
            "-o",
            str(out),
            "--markdown",
            str(md),
        ],
    )
    assert run.exit_code == 1, run.output
    assert "compare matrix: review" in run.output
    assert "BLOCK: variant a: 1 critical regression: c1" in run.output
    assert json.loads(out.read_text())["kind"] == "matrixComparison"
    text = md.read_text()
    assert text.startswith("## 📉 Matrix comparison: review — worse, 🚫 blocks merge")
    assert "### 📉 Variant `a`:" in text and "### 🟰 Variant `b`:" in text
    assert "| `a` | worse |" in text
    fine = CliRunner().invoke(app, ["compare", str(base), str(base), "--fail-on-regression"])
    assert fine.exit_code == 0, fine.output


def test_cli_refuses_an_html_page_of_two_matrices_and_gives_one_variant_s(
    tmp_path: Path,
) -> None:
    base = _saved(matrix("review", a=[True, True], b=[True]), tmp_path / "base.json")
    cand = _saved(matrix("review", a=[True, False], b=[True]), tmp_path / "cand.json")
    page = tmp_path / "page.html"
    refused = CliRunner().invoke(app, ["compare", str(base), str(cand), "--html", str(page)])
    assert refused.exit_code == 2
    assert "--html does not take a matrixComparison result" in refused.output
    assert not page.exists()
    one = CliRunner().invoke(
        app,
        [
            "compare",
            str(base),
            str(cand),
            "--variant",
            "a",
            "--html",
            str(page),
            "--fail-on-regression",
        ],
    )
    assert one.exit_code == 1, one.output
    assert "compare: code-review" in one.output and "c1" in one.output
    assert "pass → fail" in page.read_text()
    xml = tmp_path / "j.xml"
    junit = CliRunner().invoke(app, ["compare", str(base), str(cand), "--junit", str(xml)])
    assert junit.exit_code == 0, junit.output  # a suite per variant, the gate in each
    assert xml.read_text().count('name="(merge gate)"') == 2
    missing = CliRunner().invoke(app, ["compare", str(base), str(cand), "--variant", "zz"])
    assert missing.exit_code == 2
    assert "the baseline matrix 'review' has no variant 'zz' (it has a, b)" in missing.output


def test_cli_compares_two_agent_matrices_over_scenarios(tmp_path: Path) -> None:
    """Real runs: the baseline's 'fixes' agent resolves the scenario; in the candidate it
    is replaced by one that breaks, and compare blocks naming the variant and scenario."""
    path = write_scenario_matrix(tmp_path)
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    ran = CliRunner().invoke(app, ["matrix", str(path), "-o", str(base)])
    assert ran.exit_code == 0, ran.output
    data = yaml.safe_load(path.read_text())
    data["variants"][1]["agent"] = data["variants"][0]["agent"]  # 'fixes' now breaks
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    ran = CliRunner().invoke(app, ["matrix", str(path), "-o", str(cand)])
    assert ran.exit_code == 0, ran.output
    out = tmp_path / "cmp.json"
    gate = CliRunner().invoke(  # wall times vary: only pass/fail may set the verdicts
        app,
        [
            "compare",
            str(base),
            str(cand),
            "--fail-on-regression",
            "-o",
            str(out),
            "--latency-floor-ms",
            "1000000",
        ],
    )
    assert gate.exit_code == 1, gate.output
    assert "BLOCK: variant fixes: 1 critical regression: fix-sub" in gate.output
    saved = json.loads(out.read_text())
    verdicts = {v["variantId"]: v["comparison"]["summary"]["verdict"] for v in saved["variants"]}
    assert verdicts == {"breaks": "equivalent", "fixes": "worse"}
    one = CliRunner().invoke(app, ["compare", str(base), str(cand), "--variant", "breaks"])
    assert one.exit_code == 0, one.output
