"""The sealed case index: compare reads it instead of every case, and never a stale one."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from results_helpers import case, dataset
from test_persistence import rich_dataset, scenario_run

from signal_eval_cli.case_index import INDEX_KEY, SEAL_KEY, open_sealed
from signal_eval_cli.compare import IncompatibleResults, compare, compare_files
from signal_eval_cli.persistence import load_result, save_result
from signal_eval_cli.results import CaseResult, DatasetResult

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


def test_an_index_that_disagrees_in_length_with_the_lines_is_not_used(tmp_path: Path) -> None:
    """Even under a valid seal (a writer that is not ours), a mismatch is caught."""
    path = saved(dataset(case("a", False), case("b")), tmp_path / "r.json")
    data = path.read_bytes()
    data = data.replace(b'"failedAssertions": [1, 0]', b'"failedAssertions": [1, 0, 0]')
    seal = b'\n  "caseIndexSha256": "'
    start, end = data.find(b'\n  "cases": ['), data.rfind(seal)
    digest = hashlib.sha256(data[start:end]).hexdigest().encode()
    data = data[: end + len(seal)] + digest + data[end + len(seal) + 64 :]
    assert json.loads(data)[SEAL_KEY] == digest.decode()
    assert open_sealed(data) is None
    path.write_bytes(data)
    assert [c.case_id for c in load_result(path, lean=True).cases] == ["a", "b"]


# -- compare through the index is compare in full ------------------------------------------------

texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)
cases = st.builds(
    case,
    case_id=st.sampled_from([f"c{i}" for i in range(12)]) | texts,
    passed=st.booleans(),
    latency=st.sampled_from([0.0, 100.0, 1000.0, 1250.5]),
    cost=st.sampled_from([0.0, 0.01, 0.02]),
    outcomes=st.none() | st.lists(st.booleans(), min_size=1, max_size=4),
    error=st.none() | texts,
    skipped=st.booleans(),
    name=st.none() | texts,
)


def unique(items: list[CaseResult]) -> list[CaseResult]:
    return list({c.case_id: c for c in items}.values())


@given(base=st.lists(cases, min_size=1, max_size=12), cand=st.lists(cases, min_size=1, max_size=12))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
def test_compare_through_the_index_equals_compare_of_full_loads(
    base: list[CaseResult], cand: list[CaseResult], tmp_path: Path
) -> None:
    base_path = saved(DatasetResult("b", unique(base)), tmp_path / "base.json")
    cand_path = saved(DatasetResult("b", unique(cand)), tmp_path / "cand.json")
    assert open_sealed(cand_path.read_bytes()) is not None
    try:
        expected = compare(load_result(base_path), load_result(cand_path)).to_dict()
    except IncompatibleResults as exc:
        with pytest.raises(IncompatibleResults, match=re.escape(str(exc))):
            compare_files(base_path, cand_path)
        return
    assert compare_files(base_path, cand_path).to_dict() == expected
