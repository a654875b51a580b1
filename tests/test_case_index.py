"""The sealed case index: compare reads it instead of every case, and never a stale one."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from results_helpers import case, dataset
from test_persistence import rich_dataset, scenario_run

from signal_eval_cli.assertions import AssertionResult
from signal_eval_cli.case_index import INDEX_KEY, SEAL_KEY, open_sealed
from signal_eval_cli.compare import IncompatibleResults, compare, compare_files
from signal_eval_cli.errors import InputError
from signal_eval_cli.persistence import load_result, save_result
from signal_eval_cli.results import CaseMetrics, CaseResult, DatasetResult
from signal_eval_cli.scenarios import ScenarioRunResult
from signal_eval_cli.signals import Signal

# What a case read through the index keeps (everything compare reads).
KEPT = ("case_id", "passed", "skipped", "metrics", "duration_ms", "name", "error", "outcomes")


def saved(result: Any, path: Path, signals: Any = "failed") -> Path:
    save_result(result, path, signals=signals)
    return path


def assert_same_for_compare(lean: CaseResult, full: CaseResult) -> None:
    for field in (*KEPT, "kind"):
        assert getattr(lean, field) == getattr(full, field), field
    assert lean.failed_assertions == full.failed_assertions


# -- reading through the index -----------------------------------------------------------------


@pytest.mark.parametrize("make", [rich_dataset, scenario_run], ids=["dataset", "scenarios"])
def test_lean_load_keeps_what_compare_reads_and_skips_passing_cases_assertions(
    make: Any, tmp_path: Path
) -> None:
    path = saved(make(), tmp_path / "r.json", "all")
    full, lean = load_result(path), load_result(path, lean=True)
    assert type(lean) is type(full)
    assert lean.to_dict("none") | {"cases": None} == full.to_dict("none") | {"cases": None}
    assert len(lean.cases) == len(full.cases)
    for lean_case, full_case in zip(lean.cases, full.cases, strict=True):
        assert_same_for_compare(lean_case, full_case)
        if full_case.failed_assertions:  # decoded from its line: all of it
            assert lean_case == full_case
        else:  # from the index alone: proof that its line was not decoded
            assert lean_case.assertions == [] and lean_case.signals == []
    undecoded = [
        f for c, f in zip(lean.cases, full.cases, strict=True) if f.assertions != c.assertions
    ]
    assert undecoded or make is scenario_run  # its passing scenario has no assertions anyway


def test_the_index_is_sealed_and_opened(tmp_path: Path) -> None:
    path = saved(rich_dataset(), tmp_path / "r.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert list(data)[-2:] == [INDEX_KEY, SEAL_KEY]
    assert list(data).index(INDEX_KEY) == list(data).index("cases") + 1
    assert data[INDEX_KEY]["caseId"] == [c["caseId"] for c in data["cases"]]
    assert data[INDEX_KEY]["failedAssertions"] == [
        sum(not a["passed"] for a in c["assertions"]) for c in data["cases"]
    ]
    assert "outcomes" in data[INDEX_KEY] and "inputTokens" in data[INDEX_KEY]
    sealed = open_sealed(path.read_bytes())
    assert sealed is not None and sealed.head["cases"] == []
    assert sealed.head["name"] == "rich" and len(sealed.cases) == 5


def test_columns_that_hold_only_their_default_are_left_out(tmp_path: Path) -> None:
    path = saved(dataset(case("a"), case("b", False)), tmp_path / "r.json")
    index = json.loads(path.read_text(encoding="utf-8"))[INDEX_KEY]
    assert "outcomes" not in index and "error" not in index and "kind" not in index
    assert "inputTokens" not in index and index["totalTokens"] == [100, 100]
    lean = load_result(path, lean=True)
    assert lean.cases[0].outcomes is None and lean.cases[0].kind == "case"
    assert lean.cases[0].metrics.input_tokens == 0 and lean.cases[0].error is None


def test_results_without_cases_have_no_index(tmp_path: Path) -> None:
    path = saved(dataset(), tmp_path / "empty.json")
    assert INDEX_KEY not in path.read_text(encoding="utf-8")
    assert open_sealed(path.read_bytes()) is None
    assert load_result(path, lean=True).cases == []


def test_files_without_an_index_are_read_in_full(tmp_path: Path) -> None:
    result = rich_dataset()
    path = tmp_path / "foreign.json"
    path.write_text(json.dumps(result.to_dict("all"), indent=2), encoding="utf-8")
    assert open_sealed(path.read_bytes()) is None
    assert load_result(path, lean=True).to_dict("all") == result.to_dict("all")


# -- a stale index is never used --------------------------------------------------------------


def edit_case_line(path: Path, case_id: str, old: str, new: str) -> None:
    """Replace the first ``old`` in the line of ``case_id`` (the case's own field)."""
    text = path.read_text(encoding="utf-8")
    line = next(row for row in text.splitlines() if row.startswith(f'    {{"caseId": "{case_id}"'))
    assert old in line
    path.write_text(text.replace(line, line.replace(old, new, 1)), encoding="utf-8")


def test_a_case_edited_by_hand_is_read_from_its_line_not_the_stale_index(tmp_path: Path) -> None:
    base = saved(dataset(case("a"), case("b")), tmp_path / "base.json")
    cand = saved(dataset(case("a"), case("b", latency=1000.0)), tmp_path / "cand.json")
    edit_case_line(cand, "b", '"passed": true', '"passed": false')
    edit_case_line(cand, "a", '"latencyMs": 1000.0', '"latencyMs": 5000.0')
    assert open_sealed(cand.read_bytes()) is None
    lean = load_result(cand, lean=True)
    assert [c.passed for c in lean.cases] == [True, False]
    assert lean.cases[0].metrics.latency_ms == 5000.0
    comparison = compare_files(base, cand)
    assert [(r.case_id, r.type) for r in comparison.regressions] == [
        ("b", "pass_to_fail"),
        ("a", "metric_degraded"),
    ]
    assert comparison.summary.should_block


def test_an_index_edited_by_hand_is_not_trusted(tmp_path: Path) -> None:
    path = saved(dataset(case("a"), case("b", False)), tmp_path / "r.json")
    text = path.read_text(encoding="utf-8")
    edited = text.replace('"passed": [true, false]', '"passed": [true, true]')
    assert edited != text
    path.write_text(edited, encoding="utf-8")
    assert open_sealed(path.read_bytes()) is None
    assert [c.passed for c in load_result(path, lean=True).cases] == [True, False]


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda t: t.replace("\n", "\r\n"), id="crlf"),
        pytest.param(lambda t: json.dumps(json.loads(t), indent=4), id="re-indented"),
        pytest.param(lambda t: re.sub(r'"caseIndexSha256": "0*.', '"caseIndexSha256": "x', t), id="seal"),
        pytest.param(lambda t: t.replace("  ],\n", "  ], \n", 1), id="layout"),
    ],
)  # fmt: skip
def test_a_damaged_seal_or_layout_means_reading_in_full(damage: Any, tmp_path: Path) -> None:
    result = rich_dataset()
    path = saved(result, tmp_path / "r.json", "all")
    path.write_bytes(damage(path.read_text(encoding="utf-8")).encode())
    assert open_sealed(path.read_bytes()) is None
    assert load_result(path, lean=True).to_dict("all") == result.to_dict("all")


def test_header_fields_are_read_fresh_so_an_interrupted_flag_still_refuses(tmp_path: Path) -> None:
    base = saved(dataset(case("a")), tmp_path / "base.json")
    cand = tmp_path / "cand.json"
    text = saved(dataset(case("a")), cand).read_text(encoding="utf-8")
    cand.write_text(text.replace('"interrupted": false', '"interrupted": true'), encoding="utf-8")
    assert open_sealed(cand.read_bytes()) is not None  # the seal covers the cases only
    with pytest.raises(IncompatibleResults, match="interrupted"):
        compare_files(base, cand)


def reseal(data: bytes) -> bytes:
    """``data`` with a seal that matches it again: what a tool that is not ours might do."""
    seal = f'\n  "{SEAL_KEY}": "'.encode()
    start, end = data.find(b'\n  "cases": ['), data.rfind(seal)
    digest = hashlib.sha256(data[start:end]).hexdigest().encode()
    resealed = data[: end + len(seal)] + digest + data[end + len(seal) + 64 :]
    assert json.loads(resealed)[SEAL_KEY] == digest.decode()
    return resealed


def swap_case_lines(data: bytes) -> bytes:
    lines = data.split(b"\n")
    first = next(i for i, line in enumerate(lines) if line.startswith(b'    {"caseId"'))
    a, b = lines[first].rstrip(b","), lines[first + 1].rstrip(b",")
    lines[first], lines[first + 1] = b + b",", a + lines[first + 1][len(b) :]
    return b"\n".join(lines)


def edit_index(edit: Any) -> Any:
    """A forgery: ``edit`` applied to the decoded index, written back compact."""

    def forge(data: bytes) -> bytes:
        key, seal = f'\n  "{INDEX_KEY}": '.encode(), f',\n  "{SEAL_KEY}": '.encode()
        start, end = data.rfind(key) + len(key), data.rfind(seal)
        index = json.loads(data[start:end])
        edit(index)
        return data[:start] + json.dumps(index).encode() + data[end:]

    return forge


def past_the_last_line(data: bytes) -> bytes:
    """Extra rows, as many as it takes for a reader that wraps round to the top of the
    file after the last line to come back exactly to the end of the cases."""
    # One row finds no newline (-1), then one per newline from the top to the end.
    wrap = 1 + data[: data.rfind(f'\n  ],\n  "{INDEX_KEY}"'.encode()) + 1].count(b"\n")

    def pad(index: dict[str, list[Any]]) -> None:
        for key, column in index.items():
            column += [0 if key == "failedAssertions" else column[-1]] * wrap

    return edit_index(pad)(data)


def drop_last_case(index: dict[str, list[Any]]) -> None:
    for column in index.values():
        column.pop()


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(edit_index(drop_last_case), id="every column one case short"),
        pytest.param(lambda d: d.replace(b'"failedAssertions": [1, 1]', b'"failedAssertions": [1, 1, 0]'), id="more ids than lines"),
        pytest.param(lambda d: d.replace(b'"failedAssertions": [1, 1]', b'"failedAssertions": [1]'), id="fewer ids than lines"),
        pytest.param(lambda d: d.replace(b'"caseId": ["a", "b"]', b'"caseId": ["a", "b", "c"]'), id="a longer column"),
        pytest.param(lambda d: d.replace(b'"caseId": ["a", "b"]', b'"caseId": ["a"]'), id="a shorter column"),
        pytest.param(lambda d: d.replace(b'"caseId": ["a", "b"]', b'"caseId": ["b", "a"]'), id="ids on the wrong lines"),
        pytest.param(swap_case_lines, id="lines swapped"),
        pytest.param(lambda d: past_the_last_line(d), id="past the last line"),
    ],
)  # fmt: skip
def test_an_index_that_disagrees_with_the_lines_is_not_used_even_resealed(
    forge: Any, tmp_path: Path
) -> None:
    path = saved(dataset(case("a", False), case("b", False)), tmp_path / "r.json")
    data = path.read_bytes()
    forged = reseal(forge(data))
    assert forged != data
    assert open_sealed(forged) is None
    path.write_bytes(forged)
    assert sorted(c.case_id for c in load_result(path, lean=True).cases) == ["a", "b"]


def test_a_head_a_full_load_refuses_is_refused_through_the_index_too(tmp_path: Path) -> None:
    path = saved(dataset(case("a", False), case("b")), tmp_path / "r.json")
    data = path.read_bytes()
    path.write_bytes(data.replace(b'"name": "code-review"', b'"name": "\xed\xa0\x80"', 1))
    for lean in (False, True):
        with pytest.raises(InputError, match="not UTF-8 text"):
            load_result(path, lean=lean)


def test_a_byte_order_mark_reads_the_same_through_the_index_and_in_full(tmp_path: Path) -> None:
    path = saved(dataset(case("a", False), case("b")), tmp_path / "r.json")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # an editor saved it again
    full, lean = load_result(path), load_result(path, lean=True)
    assert [(c.case_id, c.passed) for c in lean.cases] == [("a", False), ("b", True)]
    assert lean.to_dict("all") == full.to_dict("all")


def test_a_head_edited_to_another_kind_is_read_in_full(tmp_path: Path) -> None:
    base = saved(dataset(case("a")), tmp_path / "base.json")
    cand = saved(dataset(case("a", False)), tmp_path / "cand.json")
    matrix = (
        b'"kind": "matrix", "variants": [], "comparison": '
        b'{"byPassRate": [], "byCost": [], "byLatency": [], "paretoFrontier": []},'
    )
    cand.write_bytes(cand.read_bytes().replace(b'"kind": "dataset",', matrix, 1))
    assert open_sealed(cand.read_bytes()) is not None
    assert not hasattr(load_result(cand, lean=True), "cases")
    with pytest.raises(IncompatibleResults, match="the candidate is a matrix result"):
        compare_files(base, cand)


def test_negative_zero_stays_negative_zero(tmp_path: Path) -> None:
    metrics = CaseMetrics(latency_ms=-0.0001, cost=-0.0)  # saved as -0.0 (rounded to 3 places)
    base = saved(dataset(CaseResult("a", True, metrics=metrics)), tmp_path / "base.json")
    cand = saved(dataset(CaseResult("a", False, metrics=metrics)), tmp_path / "cand.json")
    lean = comparison_json(base, cand, lean=True)
    assert lean == comparison_json(base, cand, lean=False) and '"minLatencyMs": 0.0' in lean


def test_values_json_cannot_hold_are_refused_by_both_loads(tmp_path: Path) -> None:
    """Values JSON cannot hold are written as strings (``"passed": "0"``): both loads
    refuse the file (the lean one at its head's counts), neither reads ``bool("0")``."""
    odd: Any = CaseResult("a", Decimal(0), name=Path("n"))  # type: ignore[arg-type]
    cand = saved(dataset(odd, case("b", False)), tmp_path / "cand.json")
    with pytest.raises(InputError) as lean:
        load_result(cand, lean=True)
    with pytest.raises(InputError) as full:
        load_result(cand)
    assert set(lean.value.problems) < set(full.value.problems)
    assert "'passed': expected true or false, got a string" in str(full.value)


def test_a_case_laid_out_over_several_lines_gets_no_index(tmp_path: Path) -> None:
    odd = case("a", extra={"schemaVersion": 1, "kind": "x"})  # fields that look like a result
    path = saved(dataset(odd, case("b")), tmp_path / "r.json")
    assert INDEX_KEY not in json.loads(path.read_text(encoding="utf-8"))
    assert [c.case_id for c in load_result(path, lean=True).cases] == ["a", "b"]


# -- compare through the index is compare in full ------------------------------------------------

texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)
numbers = st.sampled_from([0.0, -0.0, 0, 1, 100.0, 1000.0, 1250.5, 0.01, 0.02, float("nan")])
checks = st.lists(st.booleans(), max_size=3).map(
    lambda flags: [AssertionResult({"type": "output.contains"}, f, "m") for f in flags]
)
cases = st.builds(
    CaseResult,
    case_id=st.sampled_from([f"c{i}" for i in range(12)]) | texts,
    passed=st.booleans(),  # independent of the assertions: failed with none failed, too
    assertions=checks,
    signals=st.lists(st.builds(Signal, st.sampled_from(["harness:end", "text:complete"])), max_size=2),
    final_state=st.none() | st.dictionaries(texts, st.integers(), max_size=2),
    metrics=st.builds(CaseMetrics, numbers, st.integers(0, 9), st.integers(0, 9), st.integers(0, 99), numbers, st.integers(0, 3), st.integers(1, 3)),
    duration_ms=numbers,
    name=st.none() | texts,
    error=st.none() | texts,
    skipped=st.booleans(),
    tags=st.lists(texts, max_size=2),
    outcomes=st.none() | st.lists(st.booleans(), min_size=1, max_size=4),
    kind=st.sampled_from(["case", "scenario"]),
    extra=st.dictionaries(st.sampled_from(["goals", "score"]), st.integers(), max_size=2),
)  # fmt: skip


def unique(items: list[CaseResult]) -> list[CaseResult]:
    return list({c.case_id: c for c in items}.values())


def comparison_json(base: Path, cand: Path, lean: bool) -> str:
    """The comparison as JSON text (so -0.0 differs from 0.0 and NaN equals NaN), or why not."""
    try:
        if lean:
            comparison = compare_files(base, cand)
        else:
            comparison = compare(load_result(base), load_result(cand))
    except IncompatibleResults as exc:
        return f"refused: {exc}"
    return json.dumps(comparison.to_dict(), sort_keys=True)


@given(
    base=st.lists(cases, min_size=1, max_size=10),
    cand=st.lists(cases, min_size=1, max_size=10),
    signals=st.sampled_from(["all", "failed", "none"]),
    scenarios=st.booleans(),
)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
def test_compare_through_the_index_equals_compare_of_full_loads(
    base: list[CaseResult], cand: list[CaseResult], signals: Any, scenarios: bool, tmp_path: Path
) -> None:
    kind = ScenarioRunResult if scenarios else DatasetResult
    base_path = saved(kind("b", unique(base)), tmp_path / "base.json", signals)
    cand_path = saved(kind("b", unique(cand)), tmp_path / "cand.json", signals)
    assert open_sealed(cand_path.read_bytes()) is not None
    full = comparison_json(base_path, cand_path, lean=False)
    assert comparison_json(base_path, cand_path, lean=True) == full


# -- the positional fast paths -----------------------------------------------------------------

# CaseResult.from_dict, CaseMetrics.from_dict and the index reader build cases with positional
# arguments (keywords cost twice as much per case). These are the field orders they assume: a
# new field, or two swapped, must change this list and those constructors together.
CASE_FIELDS = [
    "case_id", "passed", "assertions", "signals", "final_state", "metrics", "duration_ms",
    "name", "error", "skipped", "tags", "outcomes", "kind", "extra",
]  # fmt: skip
METRIC_FIELDS = [
    "latency_ms", "input_tokens", "output_tokens", "total_tokens", "cost", "activations", "runs",
]  # fmt: skip


def test_the_field_order_the_positional_constructors_assume() -> None:
    assert [f.name for f in dataclasses.fields(CaseResult)] == CASE_FIELDS
    assert [f.name for f in dataclasses.fields(CaseMetrics)] == METRIC_FIELDS


def test_every_field_lands_in_its_place_through_a_full_and_a_lean_load(tmp_path: Path) -> None:
    """A value of its own in every field (the two ``str | None`` fields, ``name`` and
    ``error``, differ): a swapped positional argument would move one of them."""
    metrics = CaseMetrics(1.5, 2, 3, 5, 0.25, 7, 2)
    full = CaseResult(
        case_id="the-id",
        passed=False,
        assertions=[AssertionResult({"type": "signal.not", "pattern": "x"}, True, "fine")],
        signals=[Signal("step:done", {"n": 1}, "s1", "2026-01-01T00:00:00.000Z")],
        final_state={"state": 1},
        metrics=metrics,
        duration_ms=12.5,
        name="the name",
        error="the error",
        skipped=False,
        tags=["t"],
        outcomes=[True, False],
        kind="scenario",
        extra={"goals": []},
    )
    path = saved(dataset(full), tmp_path / "r.json", signals="all")
    assert load_result(path).cases == [full]
    lean = load_result(path, lean=True).cases[0]
    assert [getattr(lean, f) for f in (*KEPT, "kind")] == [
        getattr(full, f) for f in (*KEPT, "kind")
    ]
    assert lean.metrics == metrics
