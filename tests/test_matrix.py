"""Matrix: Pareto frontier, recommendation, run_matrix (shared concurrency), matrix files, CLI."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from results_helpers import case, dataset

from signal_eval_cli.dataset import load_dataset
from signal_eval_cli.errors import InputError
from signal_eval_cli.loading import schema_validator
from signal_eval_cli.matrix import (
    MatrixOptions,
    MatrixResult,
    VariantPoint,
    VariantResult,
    compare_variants,
    load_matrix,
    pareto_frontier,
    recommend,
    run_matrix,
)
from signal_eval_cli.persistence import load_result, save_result


def point(id: str, passed: int, cost: float, latency: float, ran: int = 10) -> VariantPoint:
    return VariantPoint(id, passed, ran, cost, latency)


# -- Pareto frontier --------------------------------------------------------------------------


def test_dominated_points_leave_the_frontier() -> None:
    points = [
        point("best", 9, 0.05, 2000),
        point("cheap", 7, 0.01, 1000),
        point("worse-than-best", 8, 0.06, 2500),  # lower pass rate, dearer, slower than best
        point("worse-than-cheap", 7, 0.02, 1000),  # same rate and speed, dearer
    ]
    assert pareto_frontier(points) == ["best", "cheap"]


def test_identical_points_are_all_on_the_frontier() -> None:
    points = [point("a", 8, 0.02, 1500), point("b", 8, 0.02, 1500), point("c", 7, 0.03, 1600)]
    assert pareto_frontier(points) == ["a", "b"]


def test_float_noise_does_not_make_a_tie_dominate() -> None:
    points = [point("a", 8, 0.1 + 0.2, 1000), point("b", 8, 0.3, 1000)]
    assert pareto_frontier(points) == ["a", "b"]


def test_single_variant_is_the_frontier_and_the_recommendation() -> None:
    points = [point("only", 3, 0.01, 100)]
    assert pareto_frontier(points) == ["only"]
    rec = recommend(points)
    assert rec is not None and (rec.variant_id, rec.confidence) == ("only", "low")
    assert recommend([]) is None


def test_orderings_break_ties_by_declaration_order() -> None:
    points = [point("z", 8, 0.02, 900), point("a", 8, 0.01, 900), point("m", 9, 0.02, 800)]
    comparison = compare_variants(points)
    assert comparison.by_pass_rate == ["m", "z", "a"]
    assert comparison.by_cost == ["a", "z", "m"]
    assert comparison.by_latency == ["m", "z", "a"]
    assert comparison.pareto_frontier == ["a", "m"]


# -- recommendation --------------------------------------------------------------------------


def test_recommendation_is_quality_first_with_tradeoffs() -> None:
    points = [point("detailed", 10, 0.05, 3000), point("concise", 2, 0.02, 1500)]
    rec = recommend(points)
    assert rec is not None and rec.variant_id == "detailed"
    assert rec.reason.startswith("highest pass rate: 100% (10/10 cases) vs 20% for concise")
    assert rec.tradeoffs == [
        "concise is 60% cheaper and 50% faster but its pass rate is 80 points lower (20% vs 100%)"
    ]
    assert rec.confidence == "high"  # Wilson [72%, 100%] vs [6%, 51%]: no overlap


def test_confidence_medium_when_intervals_overlap() -> None:
    rec = recommend([point("a", 10, 0.05, 1000), point("b", 6, 0.01, 1000)])
    assert rec is not None and (rec.variant_id, rec.confidence) == ("a", "medium")


def test_tie_on_pass_rate_prefers_cheaper_then_faster_then_declared_first() -> None:
    cheaper = recommend([point("a", 8, 0.05, 1000), point("b", 8, 0.01, 1000)])
    assert cheaper is not None and (cheaper.variant_id, cheaper.confidence) == ("b", "medium")
    assert "cheaper" in cheaper.reason
    faster = recommend([point("a", 8, 0.01, 1000), point("b", 8, 0.01, 950)])
    assert faster is not None and (faster.variant_id, faster.confidence) == ("b", "low")
    same = recommend([point("a", 8, 0.01, 1000), point("b", 8, 0.01, 1000)])
    assert same is not None and (same.variant_id, same.confidence) == ("a", "low")
    assert "declared first" in same.reason


def test_an_unknown_cost_or_latency_ranks_last_and_is_never_cheaper() -> None:
    """A harness whose ``provider:end`` said ``cost: NaN``: NaN compares false with
    everything, so its variant was never dominated, sorted first, and recommended as
    "cheaper ($nan vs $0.0100 per case)"."""
    nan = float("nan")
    points = [VariantPoint("x", 4, 4, nan, 5), VariantPoint("a", 4, 4, 0.01, 5)]
    assert compare_variants(points).by_cost == ["a", "x"]
    assert pareto_frontier(points) == ["a"]
    chosen = recommend(points)
    assert chosen is not None and chosen.variant_id == "a"
    assert "is cheaper ($0.0100 vs an unknown cost per case)" in chosen.reason
    slow = [VariantPoint("x", 4, 4, 0.01, nan), VariantPoint("a", 4, 4, 0.01, 5)]
    assert compare_variants(slow).by_latency == ["a", "x"] and pareto_frontier(slow) == ["a"]


def test_a_sub_millisecond_latency_gap_is_a_tie() -> None:
    """Timer noise (p50 0.2 ms vs 0.4 ms, both shown as 0 ms) never picks a variant."""
    results = [
        VariantResult(name, name, dataset(*[case(f"c{i}") for i in range(6)]))
        for name in ("first", "second", "third")
    ]
    for variant, p50 in zip(results, (0.4, 0.2, 0.3), strict=True):
        for c in variant.result.cases:
            c.metrics.latency_ms = p50
    matrix = MatrixResult.of("noise", results)
    assert matrix.recommendation is not None
    assert matrix.recommendation.variant_id == "first"
    assert "declared first" in matrix.recommendation.reason
    assert matrix.comparison.pareto_frontier == ["first", "second", "third"]
    slower = [VariantPoint.of(v) for v in results]
    assert [p.latency for p in slower] == [0.0, 0.0, 0.0]


def test_an_interrupted_matrix_recommends_nothing_from_partial_results() -> None:
    """A variant that ran 2 of 12 cases would be ranked on other evidence than the rest."""
    full = VariantResult("a", "A", dataset(*[case(f"c{i}", i % 2 == 0) for i in range(12)]))
    partial = VariantResult("b", "B", dataset(case("c0"), case("c1")))
    assert MatrixResult.of("m", [full, partial]).recommendation is not None
    stopped = MatrixResult.of("m", [full, partial], interrupted=True)
    assert stopped.recommendation is None
    assert stopped.comparison.pareto_frontier  # the ranking is still shown


def test_too_few_cases_cap_confidence_at_low() -> None:
    rec = recommend([point("a", 4, 0.01, 100, ran=4), point("b", 0, 0.01, 100, ran=4)])
    assert rec is not None and rec.confidence == "low" and "only 4 cases ran" in rec.reason


def test_recommendation_is_deterministic() -> None:
    points = [point(f"v{i}", 7 + i % 2, 0.01 * (i % 3 + 1), 1000 + 10 * (i % 2)) for i in range(6)]
    first = recommend(points)
    assert all(recommend(list(points)) == first for _ in range(5))
    assert first is not None and first.variant_id == "v3"  # 80% like v1 and v5, cheapest, first
    assert first.reason == "ties v1 on pass rate (80%) and is cheaper ($0.0100 vs $0.0200 per case)"


# -- results and persistence ---------------------------------------------------------------------


def variant(id: str, *passes: bool, cost: float = 0.01, latency: float = 1000) -> VariantResult:
    cases = [case(f"c{i}", p, cost=cost, latency=latency) for i, p in enumerate(passes)]
    return VariantResult(id, id.title(), dataset(*cases), {"model": id})


def test_matrix_result_round_trips_and_validates(tmp_path: Path) -> None:
    result = MatrixResult.of(
        "review",
        [variant("detailed", True, True, cost=0.05), variant("concise", True, False)],
        duration_ms=12.0,
    )
    assert result.recommendation is not None
    path = tmp_path / "matrix.json"
    save_result(result, path)
    data = json.loads(path.read_text())
    assert list(schema_validator("result").iter_errors(data)) == []
    loaded = load_result(path)
    assert isinstance(loaded, MatrixResult)
    assert loaded.to_dict() == result.to_dict()


# -- run_matrix ---------------------------------------------------------------------------------

HARNESS = """
import asyncio

LIVE = {"now": 0, "peak": 0}


def make(skill=1.0, cost=0.01, latency=1000):
    async def run(input, ctx):
        LIVE["now"] += 1
        LIVE["peak"] = max(LIVE["peak"], LIVE["now"])
        try:
            await asyncio.sleep(0.01)
        finally:
            LIVE["now"] -= 1
        ctx.emit("harness:start", {"input": input})
        ctx.emit("provider:end", {"usage": {"inputTokens": 10, "outputTokens": 5}, "cost": cost})
        found = input["difficulty"] <= skill
        ctx.emit("text:complete", {"content": "SQL injection" if found else "looks fine"})
        ctx.emit("harness:end", {"durationMs": latency})
    return run
"""

DATASET = """
name: toy review
harness: {factory: "harness.py:make"}
defaultAssertions:
  - type: output.contains
    text: injection
cases:
""" + "".join(
    f"  - {{id: c{i}, input: {{difficulty: {i / 10}}}, assertions: []}}\n" for i in range(10)
)

MATRIX = """
name: toy matrix
dataset: toy.yaml
variants:
  - id: strong
    name: Strong model
    params: {skill: 1.0, cost: 0.05, latency: 3000}
    metadata: {model: big}
  - id: cheap
    name: Cheap model
    params: {skill: 0.25, cost: 0.01, latency: 1000}
  - id: bad
    name: Worse at everything
    harness: {factory: "harness.py:make", params: {skill: 0.1}}
    params: {cost: 0.06, latency: 4000}
"""


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    (tmp_path / "harness.py").write_text(HARNESS)
    (tmp_path / "toy.yaml").write_text(DATASET)
    (tmp_path / "matrix.yaml").write_text(MATRIX)
    return tmp_path


def test_run_matrix_shares_one_concurrency_limit(toy: Path) -> None:
    matrix = load_matrix(toy / "matrix.yaml")
    done: list[str] = []
    options = MatrixOptions(concurrency=3, on_variant_complete=lambda v: done.append(v.variant_id))
    result = asyncio.run(run_matrix(matrix.variants, matrix.dataset, options, name=matrix.name))
    live = next(  # this test's harness module (other tests load theirs in the same process)
        m
        for name, m in list(sys.modules.items())
        if name.startswith("signal_eval_user_")
        and Path(getattr(m, "__file__", "") or "").resolve() == (toy / "harness.py").resolve()
    )
    assert live.LIVE["peak"] == 3  # 30 case runs, never more than 3 at once
    assert sorted(done) == ["bad", "cheap", "strong"]
    assert [v.variant_id for v in result.variants] == ["strong", "cheap", "bad"]
    rates = {v.variant_id: v.result.pass_rate for v in result.variants}
    assert rates == {"strong": 1.0, "cheap": 0.3, "bad": 0.2}
    assert result.comparison.pareto_frontier == ["strong", "cheap"]
    assert result.comparison.by_cost == ["cheap", "strong", "bad"]
    assert result.variants[0].metadata == {"model": "big"}
    assert result.recommendation is not None and result.recommendation.variant_id == "strong"
    assert result.recommendation.confidence == "high"


def test_run_matrix_resolves_every_harness_before_running(toy: Path) -> None:
    matrix = load_matrix(toy / "matrix.yaml")
    matrix.variants[-1].harness = "harness.py:nope"
    with pytest.raises(InputError, match="nope"):
        asyncio.run(run_matrix(matrix.variants, matrix.dataset))


def run_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "signal_eval_cli.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )


def test_matrix_cli_writes_every_report(toy: Path) -> None:
    out = toy / "out"
    proc = run_cli(
        "matrix",
        toy / "matrix.yaml",
        "--concurrency",
        "4",
        "--output",
        out / "m.json",
        "--markdown",
        out / "m.md",
        "--junit",
        out / "m.xml",
        "-q",
    )
    assert proc.returncode == 0, proc.stderr
    assert "recommendation: strong" in proc.stdout and "★" in proc.stdout
    data = json.loads((out / "m.json").read_text())
    assert list(schema_validator("result").iter_errors(data)) == []
    assert data["recommendation"]["variantId"] == "strong"
    assert "Recommendation: `strong`" in (out / "m.md").read_text()
    assert (out / "m.xml").read_text().count("<testsuite ") == 3


def test_matrix_cli_repeat_reports_run_pass_rate(toy: Path) -> None:
    proc = run_cli("matrix", toy / "matrix.yaml", "--repeat", "2", "-q", "--output", toy / "r.json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads((toy / "r.json").read_text())
    assert data["variants"][0]["result"]["cases"][0]["outcomes"] == [True, True]
    assert "20/20" in proc.stdout and "flaky" in proc.stdout


# -- matrix files ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "dataset: toy.yaml\nvariants:\n  - {id: a, name: A}\n  - {id: a, name: B}\n",
            "matrix.yaml:4:10: duplicate variant id 'a' (first at variant 1)",
        ),
        (
            "dataset: missing.yaml\nvariants:\n  - {id: a, name: A}\n",
            "matrix.yaml:1:10: dataset file not found",
        ),
        (  # ENAMETOOLONG: located, not an OSError
            f"dataset: {'x' * 300}.yaml\nvariants:\n  - {{id: a, name: A}}\n",
            "matrix.yaml:1:10: cannot read the dataset file: File name too long",
        ),
        (
            "dataset: toy.yaml\nvariants:\n  - {id: a, name: A, harnes: x}\n",
            "matrix.yaml:3:",
        ),
        ("dataset: toy.yaml\nvariants: []\n", "matrix.yaml:2:"),
        (
            "dataset: toy.yaml\nvariants:\n  - id: a\n    name: A\n    harness: {params: {}}\n",
            "'factory'",
        ),
    ],
)
def test_invalid_matrix_files_exit_2_with_located_errors(
    toy: Path, body: str, expected: str
) -> None:
    (toy / "matrix.yaml").write_text(body)
    for command in ("matrix", "validate"):
        proc = run_cli(command, "matrix.yaml", cwd=toy)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert expected in proc.stderr
        assert "Traceback" not in proc.stderr


def test_validate_accepts_a_matrix_file(toy: Path) -> None:
    proc = run_cli("validate", "matrix.yaml", cwd=toy)
    assert proc.returncode == 0 and "(matrix)" in proc.stdout


def test_variant_without_harness_needs_one_in_the_dataset(toy: Path) -> None:
    data = load_dataset(toy / "toy.yaml").to_data()
    del data["harness"]
    (toy / "bare.yaml").write_text(json.dumps(data))
    (toy / "matrix.yaml").write_text(
        textwrap.dedent("""\
            dataset: bare.yaml
            variants:
              - {id: a, name: A}
        """)
    )
    with pytest.raises(InputError, match="variant 'a' names no harness"):
        load_matrix(toy / "matrix.yaml")


def test_seed_example_5_runs_offline(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parent.parent
    proc = run_cli(
        "matrix",
        root / "datasets" / "matrix-code-review.yaml",
        "-q",
        "--output",
        tmp_path / "m.json",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads((tmp_path / "m.json").read_text())
    assert data["comparison"]["paretoFrontier"] == ["detailed-prompt", "haiku-model"]
    assert data["comparison"]["byCost"] == ["haiku-model", "concise-prompt", "detailed-prompt"]
    rates = {v["variantId"]: v["result"]["passRate"] for v in data["variants"]}
    assert rates == {"detailed-prompt": 10 / 11, "concise-prompt": 8 / 11, "haiku-model": 8 / 11}
    rec = data["recommendation"]
    assert (rec["variantId"], rec["confidence"]) == ("detailed-prompt", "medium")
    # A replayed run's latency is its recorded latencies plus the replay's own wall time
    # (reactive harness), which a loaded machine lengthens: "64% faster" at rest, 63% busy.
    (tradeoff,) = rec["tradeoffs"]
    assert re.fullmatch(
        r"haiku-model is 76% cheaper and 6[0-6]% faster but its pass rate is 18 points lower "
        r"\(73% vs 91%\)",
        tradeoff,
    ), tradeoff
