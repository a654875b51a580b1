"""compare(): every category, thresholds, verdicts, repeats, statistics, persistence."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from results_helpers import case, dataset, repeated, saved_and_loaded

from signal_eval_cli.compare import (
    CompareOptions,
    Comparison,
    IncompatibleResults,
    compare,
    fisher_exact_greater,
    pass_rate_stats,
    wilson_interval,
)
from signal_eval_cli.matrix import MatrixResult
from signal_eval_cli.results import CaseResult, DatasetResult

# -- statistics -------------------------------------------------------------------------------


def test_fisher_matches_hand_computed_hypergeometric_tails() -> None:
    # Lady tasting tea: 3 of 4 right vs 1 of 4 → P = (C(4,3)C(4,1) + C(4,4)C(4,0)) / C(8,4)
    assert fisher_exact_greater(3, 4, 1, 4) == pytest.approx(17 / 70)
    # The most extreme table with three runs a side: 1 / C(6,3)
    assert fisher_exact_greater(3, 3, 0, 3) == pytest.approx(0.05)
    assert fisher_exact_greater(0, 3, 3, 3) == pytest.approx(1.0)
    # Equal counts: (C(4,2)C(2,1) + C(4,3)C(2,0)) / C(6,3)
    assert fisher_exact_greater(2, 3, 2, 3) == pytest.approx(16 / 20)


def test_fisher_is_exact_for_large_counts() -> None:
    # 1000 runs a side, identical rates: p must be about one half, not 0 or nan
    p = fisher_exact_greater(500, 1000, 500, 1000)
    assert 0.5 < p < 0.53


@given(
    st.integers(1, 12).flatmap(
        lambda n: st.tuples(st.integers(0, n), st.just(n), st.integers(0, n), st.just(n))
    )
)
def test_fisher_is_a_probability_and_monotone(counts: tuple[int, int, int, int]) -> None:
    a, n, b, m = counts
    p = fisher_exact_greater(a, n, b, m)
    assert 0.0 <= p <= 1.0
    if a < n:  # one more pass on A's side can only make "A is better" more plausible
        assert fisher_exact_greater(a + 1, n, b, m) <= p + 1e-12


def test_wilson_interval_known_values() -> None:
    low, high = wilson_interval(5, 10)
    assert low == pytest.approx(0.2366, abs=1e-4) and high == pytest.approx(0.7634, abs=1e-4)
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    low, high = wilson_interval(10, 10)
    assert high == 1.0 and low == pytest.approx(0.7225, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_pass_rate_stats_counts_cases_and_runs() -> None:
    stats = pass_rate_stats(
        [repeated("a", 3, 3), repeated("b", 2, 3), case("c", skipped=True), case("d", False)]
    )
    assert (stats.cases, stats.passed_cases, stats.runs, stats.passed_runs) == (3, 1, 7, 5)
    assert stats.flaky_cases == 1 and stats.repeated and stats.show_interval
    assert not pass_rate_stats([case("a")]).show_interval


# -- categories ---------------------------------------------------------------------------------


def crafted() -> Comparison:
    base = dataset(
        case("regressed", True),
        case("improved", False),
        case("same-pass", True),
        case("same-fail", False),
        case("slower", True, latency=1000),
        case("cheaper", True, cost=0.10),
        case("removed", True),
        case("skipped", True),
    )
    cand = dataset(
        case("regressed", False, name="Detects SQL injection"),
        case("improved", True),
        case("same-pass", True),
        case("same-fail", False),
        case("slower", True, latency=1500),
        case("cheaper", True, cost=0.05),
        case("skipped", skipped=True),
        case("new", True),
    )
    return compare(base, cand)


def test_every_category_is_classified() -> None:
    result = crafted()
    by_type = {(r.case_id, r.type, r.severity) for r in result.regressions}
    assert by_type == {
        ("regressed", "pass_to_fail", "critical"),
        ("slower", "metric_degraded", "warning"),
    }
    assert {(i.case_id, i.type) for i in result.improvements} == {
        ("improved", "fail_to_pass"),
        ("cheaper", "metric_improved"),
    }
    assert result.unchanged == ["same-pass", "same-fail", "slower", "cheaper"]
    assert result.new_cases == ["new"]
    assert result.removed_cases == ["removed"]
    assert result.skipped_cases == ["skipped"]
    critical = result.regressions[0]
    assert critical.case_id == "regressed" and critical.case_name == "Detects SQL injection"
    assert [a.assertion["type"] for a in critical.failed_assertions] == ["output.contains"]
    assert "output.contains" in critical.description
    slower = next(r for r in result.regressions if r.case_id == "slower")
    assert (slower.metric, slower.delta) == ("latency", 500)
    assert "+50%" in slower.description


def test_critical_regressions_come_first_and_block() -> None:
    result = crafted()
    assert [r.severity for r in result.regressions] == ["critical", "warning"]
    assert result.summary.should_block
    assert result.summary.block_reason == "1 critical regression: regressed"


def test_pass_to_fail_as_warning_does_not_block() -> None:
    base, cand = dataset(case("a", True)), dataset(case("a", False))
    result = compare(base, cand, CompareOptions(critical_on_pass_to_fail=False))
    assert result.regressions[0].severity == "warning"
    assert not result.summary.should_block and result.summary.block_reason is None


def test_error_in_candidate_is_a_regression_naming_the_error() -> None:
    result = compare(dataset(case("a")), dataset(case("a", False, error="timed out after 5 ms")))
    assert result.regressions[0].type == "pass_to_fail"
    assert "timed out after 5 ms" in result.regressions[0].description
    assert result.regressions[0].error == "timed out after 5 ms"


# -- thresholds --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("latency", "threshold", "expected"),
    [
        (1100, 0.10, set()),  # exactly at the threshold: not beyond it
        (1101, 0.10, {"metric_degraded"}),
        (1400, 0.50, set()),
        (899, 0.10, {"metric_improved"}),
        (900, 0.10, set()),
    ],
)
def test_latency_threshold_is_relative_and_strict(
    latency: float, threshold: float, expected: set[str]
) -> None:
    result = compare(
        dataset(case("a", latency=1000)),
        dataset(case("a", latency=latency)),
        CompareOptions(latency_threshold=threshold),
    )
    assert {c.type for c in [*result.regressions, *result.improvements]} == expected
    assert not result.summary.should_block


@pytest.mark.parametrize(
    ("base", "cand", "floor", "expected"),
    [
        (0, 19, 50.0, set()),  # +∞ % of timer noise on a fast harness
        (1, 4, 50.0, set()),
        (100, 150, 50.0, set()),  # exactly at the floor: not beyond it
        (100, 151, 50.0, {"metric_degraded"}),
        (0, 19, 0.0, {"metric_degraded"}),  # floor off: from zero any increase counts
        (300, 200, 50.0, {"metric_improved"}),
    ],
)
def test_a_latency_change_within_the_floor_never_counts(
    base: float, cand: float, floor: float, expected: set[str]
) -> None:
    result = compare(
        dataset(case("a", latency=base)),
        dataset(case("a", latency=cand)),
        CompareOptions(latency_floor_ms=floor),
    )
    assert {c.type for c in [*result.regressions, *result.improvements]} == expected
    assert (result.summary.verdict == "equivalent") == (not expected)


def test_cost_from_zero_counts_as_degraded() -> None:
    result = compare(dataset(case("a", cost=0.0)), dataset(case("a", cost=0.002)))
    assert [(r.metric, r.type) for r in result.regressions] == [("cost", "metric_degraded")]
    assert "from zero" in result.regressions[0].description


def repeated_cost(cost: float, runs: int) -> CaseResult:
    result = case("a", cost=cost, outcomes=[True] * runs)
    result.metrics.runs = runs  # as the runner records a repeated case: the runs' total
    return result


def test_a_repeated_cases_cost_is_compared_per_run() -> None:
    same = compare(dataset(case("a", cost=0.01)), dataset(repeated_cost(0.03, 3)))
    assert [r.metric for r in same.regressions] == [] and same.summary.cost_delta == 0
    dearer = compare(dataset(repeated_cost(0.03, 3)), dataset(repeated_cost(0.06, 3)))
    assert [(r.metric, r.type) for r in dearer.regressions] == [("cost", "metric_degraded")]
    assert dearer.summary.cost_delta == pytest.approx(0.01)  # per run: 0.02 against 0.01


def test_a_repeated_case_saved_before_runs_were_summed_holds_one_runs_cost() -> None:
    old = case("a", cost=0.01, outcomes=[True] * 3)  # no metrics.runs: one run's figures
    assert old.metrics.runs == 1
    result = compare(dataset(old), dataset(repeated_cost(0.03, 3)))
    assert result.summary.cost_delta == pytest.approx(0) and not result.regressions


def test_metrics_of_errored_cases_are_not_compared() -> None:
    result = compare(
        dataset(case("a", False, error="boom", latency=5)),
        dataset(case("a", False, error="boom", latency=60_000)),
    )
    assert result.regressions == [] and result.unchanged == ["a"]


# -- verdicts and summary ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "cand", "verdict"),
    [
        ([case("a"), case("b")], [case("a"), case("b")], "equivalent"),
        ([case("a"), case("b", False)], [case("a"), case("b")], "better"),
        ([case("a"), case("b")], [case("a"), case("b", False)], "worse"),
        # a pass → fail blocks: the verdict agrees with the block, whatever else improved
        ([case("a"), case("b", False)], [case("a", False), case("b")], "worse"),
        ([case("a", cost=0.01)], [case("a", cost=0.02)], "worse"),
        ([case("a", latency=1000)], [case("a", latency=500)], "better"),
        ([case("a", False), case("b", cost=0.01)], [case("a"), case("b", cost=0.05)], "mixed"),
        ([case("a", latency=1000)], [case("a", latency=1050)], "equivalent"),
    ],
)
def test_verdicts(base: list, cand: list, verdict: str) -> None:  # type: ignore[type-arg]
    assert compare(dataset(*base), dataset(*cand)).summary.verdict == verdict


def test_summary_deltas_are_differences_of_the_reported_aggregates() -> None:
    base = dataset(case("a", latency=1000, cost=0.01), case("b", False, latency=3000, cost=0.03))
    cand = dataset(case("a", latency=1500, cost=0.02), case("b", latency=3000, cost=0.03))
    s = compare(base, cand).summary
    assert s.pass_rate_delta == pytest.approx(0.5)
    assert s.avg_latency_delta_ms == pytest.approx(250)
    assert s.avg_latency_delta_pct == pytest.approx(12.5)
    assert s.cost_delta == pytest.approx(0.01)
    assert s.cost_delta_pct == pytest.approx(25)


def test_pass_rate_threshold_sets_the_verdict_for_new_cases() -> None:
    base = dataset(*[case(f"c{i}") for i in range(10)])
    cand = dataset(*[case(f"c{i}") for i in range(10)], case("new-failing", False))
    assert compare(base, cand).summary.verdict == "worse"  # 100% → 91%
    lenient = compare(base, cand, CompareOptions(pass_rate_threshold=0.2))
    assert lenient.summary.verdict == "equivalent"
    assert not lenient.summary.should_block


@given(
    st.lists(
        st.tuples(st.booleans(), st.floats(0, 1e5), st.floats(0, 10)),
        min_size=1,
        max_size=20,
    )
)
def test_a_result_compared_with_itself_is_equivalent(rows: list[tuple[bool, float, float]]) -> None:
    result = dataset(*[case(f"c{i}", p, latency=lat, cost=c) for i, (p, lat, c) in enumerate(rows)])
    comparison = compare(result, result)
    assert comparison.regressions == [] and comparison.improvements == []
    assert comparison.summary.verdict == "equivalent" and not comparison.summary.should_block
    assert len(comparison.unchanged) == len(rows)


# -- repeats --------------------------------------------------------------------------------------


def test_single_flip_in_a_repeated_case_does_not_block() -> None:
    result = compare(dataset(repeated("a", 3, 3)), dataset(repeated("a", 2, 3)))
    assert result.regressions == [] and result.unchanged == ["a"]
    assert not result.summary.should_block


def test_consistent_pass_to_fail_with_repeats_blocks() -> None:
    result = compare(dataset(repeated("a", 3, 3)), dataset(repeated("a", 0, 3)))
    (regression,) = result.regressions
    assert regression.type == "pass_to_fail" and regression.severity == "critical"
    assert regression.p_value == pytest.approx(0.05)
    assert "3/3 runs → 0/3" in regression.description
    assert result.summary.should_block


def test_significance_level_is_the_users() -> None:
    # 5/5 → 1/5 is not a consistent pass → fail, so Fisher decides: p ≈ 0.024
    base, cand = dataset(repeated("a", 5, 5)), dataset(repeated("a", 1, 5))
    assert compare(base, cand).summary.should_block
    strict = compare(base, cand, CompareOptions(significance=0.01))
    assert strict.regressions == [] and not strict.summary.should_block


def test_flaky_to_flaky_is_never_a_blocking_regression() -> None:
    mild = compare(dataset(repeated("a", 6, 10)), dataset(repeated("a", 4, 10)))
    assert mild.regressions == [] and mild.unchanged == ["a"]
    big = compare(dataset(repeated("a", 9, 10)), dataset(repeated("a", 1, 10)))
    (warning,) = big.regressions
    assert (warning.type, warning.severity, warning.metric) == (
        "metric_degraded",
        "warning",
        "passRate",
    )
    assert warning.delta == pytest.approx(-0.8)
    assert not big.summary.should_block


def test_stable_fail_to_stable_pass_with_repeats_is_an_improvement() -> None:
    result = compare(dataset(repeated("a", 0, 5)), dataset(repeated("a", 5, 5)))
    assert [(i.type, i.metric) for i in result.improvements] == [("fail_to_pass", "passRate")]


def test_repeats_on_one_side_only_compare_pass_hat_k() -> None:
    result = compare(dataset(case("a", True)), dataset(repeated("a", 2, 3)))
    assert [r.type for r in result.regressions] == ["pass_to_fail"]


# -- compatibility and persistence --------------------------------------------------------------


def test_results_with_no_case_in_common_are_incompatible() -> None:
    with pytest.raises(IncompatibleResults, match="no case ids in common"):
        compare(dataset(case("a"), name="x"), dataset(case("b"), name="y"))


def test_a_matrix_result_is_not_comparable() -> None:
    matrix = MatrixResult.of("m", [])
    with pytest.raises(IncompatibleResults, match="matrix"):
        compare(matrix, dataset(case("a")))  # type: ignore[arg-type]


def test_comparison_round_trips_and_validates(tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = crafted()
    loaded = saved_and_loaded(result, tmp_path / "cmp.json")
    assert isinstance(loaded, Comparison)
    assert math.isclose(loaded.summary.cost_delta, result.summary.cost_delta, abs_tol=1e-9)


# -- results that cannot gate a merge -----------------------------------------------------------


def interrupted(*cases: CaseResult) -> DatasetResult:
    result = dataset(*cases)
    result.interrupted = True
    return result


def test_an_interrupted_candidate_or_baseline_is_refused() -> None:
    full = dataset(*[case(f"c{i}") for i in range(11)])
    partial = interrupted(case("c0"), case("c1"))
    with pytest.raises(IncompatibleResults, match=r"candidate .* interrupted — re-run it"):
        compare(full, partial)
    with pytest.raises(IncompatibleResults, match=r"baseline .* interrupted — re-run it"):
        compare(partial, full)


@pytest.mark.parametrize(
    "cand_cases", [[], [case("a", skipped=True), case("b", skipped=True)]], ids=["empty", "skipped"]
)
def test_a_candidate_where_no_case_ran_is_refused(cand_cases: list[CaseResult]) -> None:
    with pytest.raises(IncompatibleResults, match="no case ran"):
        compare(dataset(case("a"), case("b")), dataset(*cand_cases))


def test_removed_passing_cases_are_listed_and_noted_but_do_not_block() -> None:
    base = dataset(case("a"), case("b"), case("c"), case("d"), case("e", False))
    result = compare(base, dataset(case("a")))
    assert result.removed_cases == ["b", "c", "d", "e"]
    assert result.removed_passing == ["b", "c", "d"]
    (note,) = result.notes
    assert note.startswith("3 baseline cases missing from the candidate") and "b, c, d" in note
    assert not result.summary.should_block
    assert compare(base, base).notes == []


def test_new_failing_cases_are_noted_but_do_not_block() -> None:
    base = dataset(case("a"))
    cand = dataset(case("a"), case("n1", False), case("n2"), case("n3", skipped=True))
    result = compare(base, cand)
    assert result.new_cases == ["n1", "n2", "n3"] and result.new_failing == ["n1"]
    assert result.notes == [
        "1 new case failing in the candidate (not in the baseline, so no regression): n1"
    ]
    assert not result.summary.should_block


@pytest.mark.parametrize("side", ["baseline", "candidate"])
def test_duplicate_case_ids_are_refused_naming_the_id(side: str) -> None:
    clean = dataset(case("a"), case("b"))
    dup = dataset(case("a"), case("b"), case("b", False))
    base, cand = (dup, clean) if side == "baseline" else (clean, dup)
    with pytest.raises(IncompatibleResults, match=f"{side} .*more than one case with id 'b'"):
        compare(base, cand)


# -- consistent pass → fail with few repeats --------------------------------------------------------


def test_consistent_pass_to_fail_with_two_repeats_blocks_whatever_p() -> None:
    assert fisher_exact_greater(2, 2, 0, 2) == pytest.approx(1 / 6)  # never ≤ 0.05
    result = compare(dataset(repeated("a", 2, 2)), dataset(repeated("a", 0, 2)))
    (regression,) = result.regressions
    assert (regression.type, regression.severity) == ("pass_to_fail", "critical")
    assert regression.p_value == pytest.approx(1 / 6)
    assert "2/2 runs → 0/2" in regression.description and "p = 0.167" in regression.description
    assert result.summary.should_block and result.summary.block_reason is not None


def test_mixed_repeats_still_need_fisher() -> None:
    # 2/2 → 1/2 and 3/3 → 1/3 are not consistent pass → fail: p decides (not significant)
    for base, cand in (((2, 2), (1, 2)), ((3, 3), (1, 3))):
        result = compare(dataset(repeated("a", *base)), dataset(repeated("a", *cand)))
        assert result.regressions == [] and not result.summary.should_block
    flaky = compare(dataset(repeated("a", 1, 2)), dataset(repeated("a", 0, 2)))
    assert not flaky.summary.should_block


# -- deltas over the cases that ran on both sides ---------------------------------------------------


def test_a_skipped_or_removed_case_does_not_make_the_candidate_look_cheaper() -> None:
    base = dataset(*[case(f"c{i}") for i in range(19)], case("big", latency=9000, cost=1.0))
    # "big" skipped in the candidate, and a new failing case: pass rate 100% → 95%
    cand = dataset(
        *[case(f"c{i}") for i in range(19)],
        case("big", skipped=True),
        case("new", False),
    )
    s = compare(base, cand).summary
    assert s.pass_rate_delta == pytest.approx(-0.05)
    assert (s.cost_delta, s.cost_delta_pct) == (pytest.approx(0), pytest.approx(0))
    assert (s.avg_latency_delta_ms, s.avg_latency_delta_pct) == (0, 0)
    assert s.verdict == "equivalent"  # was "better": total cost fell by 84 %
    removed = compare(base, dataset(*[case(f"c{i}") for i in range(19)], case("new", False)))
    assert removed.summary.cost_delta == pytest.approx(0)
    assert removed.summary.verdict == "equivalent"


def test_deltas_are_over_common_cases_only() -> None:
    base = dataset(case("a", latency=1000, cost=0.01), case("gone", latency=5000, cost=0.5))
    cand = dataset(case("a", latency=1200, cost=0.02), case("new", latency=9000, cost=0.9))
    s = compare(base, cand).summary
    assert s.avg_latency_delta_ms == pytest.approx(200)
    assert s.avg_latency_delta_pct == pytest.approx(20)
    assert s.cost_delta == pytest.approx(0.01) and s.cost_delta_pct == pytest.approx(100)
    assert s.verdict == "worse"
