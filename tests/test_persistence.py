"""Saved-result layout (one case per line), GC handling of load_result, and from_dict."""

from __future__ import annotations

import dataclasses
import gc
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from results_helpers import case, dataset

from signal_eval_cli.assertions import AssertionResult
from signal_eval_cli.compare import compare
from signal_eval_cli.errors import InputError
from signal_eval_cli.matrix import MatrixResult, VariantResult
from signal_eval_cli.persistence import load_result, result_to_json, save_result
from signal_eval_cli.results import CaseMetrics, CaseResult, DatasetResult
from signal_eval_cli.scenarios import ScenarioResult, ScenarioRunResult
from signal_eval_cli.signals import Signal

# -- realistic results --------------------------------------------------------------------------


def rich_case(case_id: str, passed: bool = False) -> CaseResult:
    """Every field set: outcomes, extra fields, nested assertion results, signals."""
    child = AssertionResult({"type": "output.contains", "text": "x"}, False, "no x", "x", "y")
    return CaseResult(
        case_id=case_id,
        passed=passed,
        assertions=[
            AssertionResult({"type": "signal.not", "pattern": "error:*"}, True, "ok", None, None),
            AssertionResult(
                {"type": "all", "of": [{"type": "output.contains", "text": "x"}]},
                passed,
                "1 of 1 failed: no x",
                expected={"all": 1},
                actual=[0, "é"],
                trajectory=["tool:call read", "tool:result"],
                evaluation_ms=0.1235,
                children=[child, AssertionResult({"type": "output.matches"}, True, "✓")],
            ),
        ],
        signals=[
            Signal("harness:start", {"input": "héllo\nworld"}, "sig_1", 1.5, "harness"),
            Signal(
                "tool:call", {"name": "read"}, "sig_2", "2026-01-10T00:00:00Z", "agent", "sig_1"
            ),
        ],
        final_state={"files": {"a.py": "print('hi')\n"}, "count": 3},
        metrics=CaseMetrics(1234.567, 400, 150, 550, 0.0042, 3),
        duration_ms=1300.25,
        name="A case — with “quotes” and\ttabs",
        error=None if passed else "boom",
        tags=["security", "ünïcode"],
        outcomes=[True, False, passed],
        kind="scenario",
        extra={"goals": [{"goal": "tests pass", "status": "passed"}], "score": 0.5},
    )


def rich_dataset(n: int = 3) -> DatasetResult:
    cases = [rich_case(f"case-{i}", passed=i % 2 == 0) for i in range(n)]
    cases.append(case("plain"))
    cases.append(case("skipped", skipped=True))
    result = dataset(*cases, name="rich")
    result.metadata = {"model": "m", "nested": {"a": [1, 2]}, "ids": ["x", "y"]}
    return result


def matrix_result() -> MatrixResult:
    variants = [
        VariantResult("a", "A", dataset(case("c0"), case("c1", False)), {"model": "a"}),
        VariantResult("b", "B", dataset(case("c0"), case("c1")), {}),
    ]
    return MatrixResult.of("matrix", variants, duration_ms=12.0)


def scenario_run() -> ScenarioRunResult:
    scenarios = [
        ScenarioResult(
            "s1",
            False,
            assertions=[AssertionResult({"type": "signal.count"}, False, "0 < 1")],
            signals=[Signal("scenario:start", {"x": 1}, "sig_9", 3.0)],
            title="First",
            adapter_id="mock",
            tags=["t"],
        ),
        ScenarioResult("s2", True, title="Second"),
    ]
    return ScenarioRunResult.of(scenarios, started_at="2026-01-10T00:00:00Z")


def all_kinds() -> Iterator[tuple[str, Any]]:
    data = rich_dataset()
    yield "dataset", data
    yield "scenarios", scenario_run()
    yield "matrix", matrix_result()
    baseline = dataset(case("plain", False), case("case-1", False), case("gone"), name="rich")
    yield "comparison", compare(baseline, data)
    yield "empty", dataset()


KINDS = dict(all_kinds())


# -- layout -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("signals", ["all", "failed", "none"])
def test_the_layout_parses_to_what_json_dumps_writes(kind: str, signals: Any) -> None:
    result = KINDS[kind]
    text = result_to_json(result, signals)
    plain = json.loads(json.dumps(result.to_dict(signals), ensure_ascii=False, default=str))
    parsed = json.loads(text)
    index, sealed = parsed.pop("caseIndex", None), parsed.pop("caseIndexSha256", None)
    assert parsed == plain
    assert list(parsed) == list(plain)  # key order
    has_cases = kind in ("dataset", "scenarios")  # "empty" has none: nothing to index
    assert (index is not None, sealed is not None) == (has_cases, has_cases)
    assert text.endswith("}\n") and not text.endswith("\n\n")


def test_each_case_is_one_line_and_the_top_level_is_indented() -> None:
    result = rich_dataset()
    lines = result_to_json(result, "all").splitlines()
    assert lines[0] == "{" and lines[1] == '  "schemaVersion": 1,' and lines[-1] == "}"
    assert '  "totalCases": 5,' in lines and '  "aggregateMetrics": {' in lines
    assert any(line.startswith('    "totalCost": ') for line in lines)
    start = lines.index('  "cases": [')
    rows = lines[start + 1 : start + 1 + len(result.cases)]
    assert lines[start + 1 + len(result.cases) : start + 3 + len(result.cases)] == [
        "  ],",
        '  "caseIndex": {',
    ]
    assert lines[-2].startswith('  "caseIndexSha256": "')  # the seal is the last key
    for row, expected in zip(rows, result.cases, strict=True):
        assert row.startswith("    {") and row.rstrip(",").endswith("}")
        assert json.loads(row.rstrip(",")) == expected.to_dict("all")
    assert "héllo\\nworld" in rows[0] and "ünïcode" in rows[0]  # not ASCII-escaped


def test_characters_that_some_tools_take_for_line_breaks_are_escaped() -> None:
    result = dataset(case("a", name="x\u2028y\u2029z\x85 — é\n"), case("b"))
    text = result_to_json(result)
    assert len(text.splitlines()) == text.count("\n")
    assert '"name": "x\\u2028y\\u2029z\\u0085 — é\\n"' in text
    assert json.loads(text)["cases"][0]["name"] == "x\u2028y\u2029z\x85 — é\n"


def test_lists_of_ids_are_one_per_line_and_small_values_stay_on_one() -> None:
    text = result_to_json(KINDS["comparison"])
    assert '  "improvements": [\n    {"caseId": "plain", ' in text
    assert '  "unchanged": [\n    "case-1"\n  ],' in text and '  "skippedCases": []\n' in text
    meta = result_to_json(rich_dataset())
    assert '    "nested": {"a": [1, 2]},\n' in meta and '    "ids": ["x", "y"]\n' in meta
    odd = dataset(case("a"))
    odd.metadata = {"model": "m"}
    odd.metadata[7] = "int key"  # type: ignore[index]  # json.dumps turns the key into "7"
    assert '  "metadata": {"model": "m", "7": "int key"},\n' in result_to_json(odd)


def test_a_matrix_lays_out_each_variant_result_with_its_cases_one_per_line() -> None:
    lines = result_to_json(KINDS["matrix"]).splitlines()
    assert '      "result": {' in lines and '        "kind": "dataset",' in lines
    assert lines.count('        "cases": [') == 2
    assert sum(line.startswith('          {"caseId": ') for line in lines) == 4


def test_save_result_writes_the_layout_atomically_and_load_result_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "out" / "result.json"
    path.parent.mkdir()
    path.write_text("old", encoding="utf-8")
    result = rich_dataset()
    save_result(result, path, signals="all")
    assert path.read_text(encoding="utf-8") == result_to_json(result, "all")
    assert [p.name for p in path.parent.iterdir()] == ["result.json"]  # no temp file left
    assert load_result(path).to_dict("all") == result.to_dict("all")


@pytest.mark.parametrize("kind", ["dataset", "scenarios", "matrix", "comparison"])
def test_every_kind_loads_back(kind: str, tmp_path: Path) -> None:
    result = KINDS[kind]
    save_result(result, tmp_path / "r.json", signals="all")
    assert load_result(tmp_path / "r.json").to_dict("all") == result.to_dict("all")


def test_files_in_the_old_fully_indented_layout_still_load(tmp_path: Path) -> None:
    result = rich_dataset()
    path = tmp_path / "old.json"
    path.write_text(json.dumps(result.to_dict("all"), indent=2, ensure_ascii=False, default=str))
    assert load_result(path).to_dict("all") == result.to_dict("all")


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(metadata=st.dictionaries(st.text(), json_values, max_size=5), state=json_values)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_json_values_keep_their_meaning_and_cases_stay_on_one_line(
    metadata: dict[str, Any], state: Any
) -> None:
    result = dataset(case("a", False), case("b"))
    result.metadata = metadata
    result.cases[0].final_state = state
    text = result_to_json(result)
    parsed = json.loads(text)
    del parsed["caseIndex"], parsed["caseIndexSha256"]
    assert parsed == json.loads(json.dumps(result.to_dict(), default=str))
    lines = text.splitlines()
    rows = lines[lines.index('  "cases": [') + 1 : lines.index("  ],")]
    assert [json.loads(row.rstrip(","))["caseId"] for row in rows] == ["a", "b"]


# -- load_result and the garbage collector -----------------------------------------------------


@pytest.mark.parametrize("enabled", [True, False])
def test_load_result_pauses_the_collector_and_restores_its_state(
    enabled: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []
    original = DatasetResult.from_dict

    def spy(data: Mapping[str, Any]) -> DatasetResult:
        seen.append(gc.isenabled())
        return original(data)

    monkeypatch.setattr(DatasetResult, "from_dict", spy)
    save_result(dataset(case("a")), tmp_path / "r.json")
    (tmp_path / "bad.json").write_text('{"schemaVersion": 1, "kind": "dataset"}')
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        assert load_result(tmp_path / "r.json").cases[0].case_id == "a"
        assert gc.isenabled() is enabled
        with pytest.raises(InputError, match="1:1: missing required field 'name'"):
            load_result(tmp_path / "bad.json")
        assert gc.isenabled() is enabled
        with pytest.raises(InputError, match="cannot read"):
            load_result(tmp_path / "missing.json")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    assert seen == [False, False]


# -- from_dict ----------------------------------------------------------------------------------


def test_positional_construction_in_from_dict_matches_the_field_order() -> None:
    """from_dict passes arguments by position: a reordered field must fail here."""
    assert [f.name for f in dataclasses.fields(CaseResult)] == [
        "case_id", "passed", "assertions", "signals", "final_state", "metrics", "duration_ms",
        "name", "error", "skipped", "tags", "outcomes", "kind", "extra",
    ]  # fmt: skip
    assert [f.name for f in dataclasses.fields(CaseMetrics)] == [
        "latency_ms", "input_tokens", "output_tokens", "total_tokens", "cost", "activations",
        "runs",
    ]  # fmt: skip
    assert [f.name for f in dataclasses.fields(AssertionResult)] == [
        "assertion", "passed", "message", "expected", "actual", "trajectory", "evaluation_ms",
        "children", "errored",
    ]  # fmt: skip


@pytest.mark.parametrize("signals", ["all", "failed", "none"])
def test_rich_results_round_trip(signals: Any) -> None:
    result = rich_dataset()
    data = result.to_dict(signals)
    loaded = DatasetResult.from_dict(data)
    assert loaded.to_dict(signals) == data
    if signals == "all":
        assert loaded.cases == result.cases  # every field, signals and children included
    extra = loaded.cases[0].extra
    assert list(extra.items()) == [
        ("goals", [{"goal": "tests pass", "status": "passed"}]),
        ("score", 0.5),
    ]


def test_from_dict_fills_defaults_and_copies_its_input() -> None:
    data: dict[str, Any] = {"caseId": 7, "passed": 1, "zeta": 1, "alpha": 2}
    loaded = CaseResult.from_dict(data)
    assert loaded == CaseResult("7", True, extra={"zeta": 1, "alpha": 2})
    assert list(loaded.extra) == ["zeta", "alpha"]
    check = {"assertion": {"type": "t"}, "passed": True, "message": "m"}
    tags = ["x"]
    loaded = CaseResult.from_dict(
        {"caseId": "c", "passed": True, "assertions": [check], "tags": tags}
    )
    assert loaded.assertions[0].assertion == {"type": "t"}
    assert loaded.assertions[0].assertion is not check["assertion"] and loaded.tags is not tags
    assert AssertionResult.from_dict({}) == AssertionResult({}, False, "")
    assert CaseMetrics.from_dict({"latencyMs": "2.5", "inputTokens": 3.0}) == CaseMetrics(2.5, 3)


@pytest.mark.parametrize(("field", "value"), [("assertions", None), ("tags", None), ("signals", 3)])
def test_malformed_fields_still_raise(field: str, value: Any) -> None:
    with pytest.raises(TypeError):
        CaseResult.from_dict({"caseId": "c", "passed": True, field: value})


# A property: any case, with any subset of its optional keys, round trips and builds
# what the pre-optimisation from_dict built (kept here as the reference).

KNOWN = {
    "caseId", "name", "kind", "passed", "skipped", "durationMs", "metrics", "assertions",
    "tags", "error", "outcomes", "passAtK", "passHatK", "flaky", "finalState", "signals",
}  # fmt: skip
OPTIONAL = sorted(KNOWN - {"caseId", "passed"})


def reference_case_from_dict(data: Mapping[str, Any]) -> CaseResult:
    metrics = data.get("metrics", {})
    return CaseResult(
        case_id=str(data["caseId"]),
        passed=bool(data["passed"]),
        assertions=[reference_assertion_from_dict(a) for a in data.get("assertions", [])],
        signals=[Signal.from_dict(s) for s in data.get("signals", [])],
        final_state=data.get("finalState"),
        metrics=CaseMetrics(
            latency_ms=float(metrics.get("latencyMs", 0.0)),
            input_tokens=int(metrics.get("inputTokens", 0)),
            output_tokens=int(metrics.get("outputTokens", 0)),
            total_tokens=int(metrics.get("totalTokens", 0)),
            cost=float(metrics.get("cost", 0.0)),
            activations=int(metrics.get("activations", 0)),
        ),
        duration_ms=float(data.get("durationMs", 0.0)),
        name=data.get("name"),
        error=data.get("error"),
        skipped=bool(data.get("skipped", False)),
        tags=list(data.get("tags", [])),
        outcomes=list(data["outcomes"]) if data.get("outcomes") is not None else None,
        kind=str(data.get("kind", "case")),
        extra={k: v for k, v in data.items() if k not in KNOWN},
    )


def reference_assertion_from_dict(data: Mapping[str, Any]) -> AssertionResult:
    children = data.get("children")
    return AssertionResult(
        assertion=dict(data.get("assertion") or {}),
        passed=bool(data.get("passed")),
        message=str(data.get("message", "")),
        expected=data.get("expected"),
        actual=data.get("actual"),
        trajectory=data.get("trajectory"),
        evaluation_ms=float(data.get("evaluationMs", 0.0)),
        children=[reference_assertion_from_dict(c) for c in children]
        if children is not None
        else None,
    )


# As saved: to_dict rounds latencies to 3 decimals (aggregates of unrounded ones differ).
numbers = st.floats(min_value=0, max_value=1e7, allow_nan=False).map(lambda x: round(x, 3))
short_text = st.text(max_size=12)
assertion_results = st.recursive(
    st.builds(
        AssertionResult,
        assertion=st.dictionaries(short_text, json_scalars, max_size=3),
        passed=st.booleans(),
        message=short_text,
        expected=json_values,
        actual=json_values,
        trajectory=st.none() | st.lists(short_text, max_size=3),
        evaluation_ms=numbers,
    ),
    lambda inner: st.builds(
        AssertionResult,
        assertion=st.just({"type": "all"}),
        passed=st.booleans(),
        message=short_text,
        children=st.lists(inner, max_size=3),
    ),
    max_leaves=5,
)
signals = st.builds(
    Signal,
    name=st.text(min_size=1, max_size=10),
    payload=json_values,
    id=short_text,
    timestamp=st.none() | short_text | numbers,
    agent=st.none() | short_text,
    parent=st.none() | short_text,
)
case_results = st.builds(
    CaseResult,
    case_id=short_text,
    passed=st.booleans(),
    assertions=st.lists(assertion_results, max_size=3),
    signals=st.lists(signals, max_size=3),
    final_state=json_values,
    metrics=st.builds(
        CaseMetrics,
        numbers,
        st.integers(0, 10**9),
        st.integers(0, 10**9),
        st.integers(0, 10**9),
        numbers,
        st.integers(0, 100),
    ),
    duration_ms=numbers,
    name=st.none() | short_text,
    error=st.none() | short_text,
    skipped=st.booleans(),
    tags=st.lists(short_text, max_size=3),
    outcomes=st.none() | st.lists(st.booleans(), min_size=1, max_size=5),
    kind=st.sampled_from(["case", "scenario"]),
    extra=st.dictionaries(short_text.filter(lambda k: k not in KNOWN), json_values, max_size=3),
)


@given(
    cases=st.lists(case_results, max_size=4),
    policy=st.sampled_from(["all", "failed", "none"]),
    drop=st.sets(st.sampled_from(OPTIONAL)),
)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_from_dict_round_trips_and_matches_the_reference(
    cases: list[CaseResult], policy: Any, drop: set[str]
) -> None:
    result = DatasetResult("prop", cases, duration_ms=1.0, metadata={"k": "v"})
    data = result.to_dict(policy)
    loaded = DatasetResult.from_dict(data)
    assert loaded.to_dict(policy) == data
    assert DatasetResult.from_dict(json.loads(result_to_json(result, policy))) == loaded
    for raw, built in zip(data["cases"], loaded.cases, strict=True):
        assert built == reference_case_from_dict(raw)
        partial = {k: v for k, v in raw.items() if k not in drop}
        assert CaseResult.from_dict(partial) == reference_case_from_dict(partial)


def test_a_negative_zero_latency_aggregates_as_zero_in_any_order() -> None:
    """-0.0 == 0.0, so a sort kept their input order and the max/p95 took the sign of
    whichever case came last: an index-built and a fully loaded result then differed."""
    from results_helpers import case

    from signal_eval_cli.results import AggregateMetrics

    cases = [case("a", latency=-0.0), case("b", latency=0.0)]
    for order in (cases, cases[::-1]):
        figures = AggregateMetrics.of(order).to_dict()
        assert json.dumps(figures) == json.dumps(AggregateMetrics.of(cases).to_dict())
        assert "-0.0" not in json.dumps(figures)


# -- a hand-edited file: its fields' types are checked, located ---------------------------------


def edited(path: Path, old: str, new: str) -> Path:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize("lean", [True, False])
@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ('"passed": false', '"passed": "false"', "'passed': expected true or false, got a string"),
        ('"skipped": false', '"skipped": 0', "'skipped': expected true or false, got a whole"),
        ('"interrupted": false', '"interrupted": "false"', "'interrupted': expected true or"),
        ('"caseId": "b"', '"caseId": 7', "'caseId': expected a string, got a whole number"),
        ('"cost": 0.01', '"cost": "0.01"', "'cost': expected a number or null, got a string"),
        ('"outcomes": [true', '"outcomes": ["yes"', "expected true or false, got a string"),
    ],
)
def test_a_field_of_the_wrong_type_is_a_located_error(
    tmp_path: Path, lean: bool, old: str, new: str, where: str
) -> None:
    """``"passed": "false"`` read as passed (bool of a string) and gated a merge."""
    path = tmp_path / "r.json"
    save_result(dataset(case("a"), case("b", False), case("c", outcomes=[True, False])), path)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if old in text)
    with pytest.raises(InputError) as raised:
        load_result(edited(path, old, new), lean=lean)
    (problem,) = raised.value.problems
    assert (problem.file, problem.line) == (str(path), line)
    bad = new.rsplit(" ", 1)[1].lstrip("[")  # the column is the bad value's
    assert path.read_text().splitlines()[line - 1][problem.column - 1 :].startswith(bad)
    assert where in problem.message


def test_what_the_writer_writes_reads_back_without_a_type_problem(tmp_path: Path) -> None:
    """Not a schema check: NaN and infinities (written as null), a negative latency, a
    missing optional field, an added key and a plugin's result kind all read back."""
    metrics = CaseMetrics(-5.0, float("nan"), 1, float("inf"), -0.5, 0)
    path = tmp_path / "r.json"
    save_result(dataset(CaseResult("a", False, metrics=metrics, duration_ms=-1.0)), path)
    data = json.loads(path.read_text())
    del data["caseIndex"], data["caseIndexSha256"], data["skippedCases"]
    del data["cases"][0]["skipped"], data["cases"][0]["metrics"]["cost"]
    data["note"] = "added by hand"
    path.write_text(json.dumps(data))
    (loaded,) = load_result(path).cases
    assert loaded.metrics.latency_ms == -5.0 and loaded.duration_ms == -1.0
    assert loaded.metrics.total_tokens != loaded.metrics.total_tokens  # NaN


@pytest.mark.parametrize("lean", [True, False])
@pytest.mark.parametrize(
    ("kind", "where", "field"),
    [
        ("dataset", ("cases", 1), "passed"),
        ("dataset", ("cases", 0), "caseId"),
        ("matrix", ("variants", 1), "variantId"),
        ("matrix", ("variants", 0, "result", "cases", 1), "passed"),
        ("comparison", ("summary",), "verdict"),
        ("scenarios", ("scenarios", 1), "id"),
        ("scenarios", ("scenarios", 0, "signals", 0), "name"),
        ("scenarios", ("scenarios", 0, "goals", 0), "goal"),
    ],
)
def test_a_field_its_reader_needs_missing_is_a_located_error(
    tmp_path: Path, lean: bool, kind: str, where: tuple[str | int, ...], field: str
) -> None:
    """A case without ``passed`` (a hand edit) was "malformed dataset result: KeyError:
    'passed'" at 1:1, and so was any field a reader indexes; now it is located at the
    object that lacks it."""
    data = json.loads(result_to_json(KINDS[kind]))
    data.pop("caseIndex", None)
    if kind == "scenarios":
        data["scenarios"][0]["goals"] = [{"goal": "tests", "status": "passed"}]
    *outer, last = where
    parent = data
    for step in outer:
        parent = parent[step]
    del parent[last][field]
    path = tmp_path / "r.json"
    # the object's place: where a stand-in for it is written, everything before it the same
    parent[last], kept = "\u0000", parent[last]
    before = json.dumps(data, indent=2).split('"\\u0000"')[0].splitlines()
    parent[last] = kept
    path.write_text(json.dumps(data, indent=2))
    with pytest.raises(InputError) as raised:
        load_result(path, lean=lean)
    (problem,) = raised.value.problems
    assert (problem.line, problem.column) == (len(before), len(before[-1]) + 1)
    assert problem.message == f"missing required field '{field}'"


def test_only_the_cases_the_quick_check_doubts_are_walked_by_jsonschema() -> None:
    """One bad case of many is found without jsonschema walking them all: the result
    schema's ``cases`` (under ``allOf``/``then``/``$ref``) are narrowed like a dataset's."""
    from signal_eval_cli.result_check import _reading_schemas
    from signal_eval_cli.schema_check import failing_items

    data = dataset(*(case(f"c{i}") for i in range(50))).to_dict()
    data["cases"][17]["passed"] = "no"
    narrowed, kept = failing_items("result", data, _reading_schemas())
    assert kept["cases"] == [17] and narrowed["cases"] == [data["cases"][17]]


@pytest.mark.parametrize("lean", [True, False])
def test_a_results_file_saved_with_a_byte_order_mark_reads(tmp_path: Path, lean: bool) -> None:
    """Saved again by an editor that writes a UTF-8 BOM, a results file was refused:
    "invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig)". Datasets, journals and
    traces read with one; a problem in such a file is still located as in the file."""
    path = tmp_path / "r.json"
    save_result(dataset(case("a"), case("b", False)), path)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert [c.case_id for c in load_result(path, lean=lean).cases] == ["a", "b"]
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if '"passed": false' in text)
    edited(path, '"passed": false', '"passed": "no"')
    with pytest.raises(InputError) as raised:
        load_result(path, lean=lean)
    (problem,) = raised.value.problems
    assert (problem.line, problem.column) == (line, lines[line - 1].index('"passed"') + 11)


def test_a_byte_that_is_not_utf8_is_located(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    save_result(dataset(case("a"), case("b")), path)
    data = path.read_bytes()
    at = data.index(b'"caseId": "b"') + len(b'"caseId": "')
    path.write_bytes(data[:at] + b"\xe9" + data[at + 1 :])
    with pytest.raises(InputError) as raised:
        load_result(path)
    (problem,) = raised.value.problems
    line = data[:at].count(b"\n") + 1
    assert (problem.line, problem.column) == (line, at - data.rfind(b"\n", 0, at))
    assert problem.message == "not a result file: not UTF-8 text"


def test_a_scenario_run_of_the_wrong_type_is_a_located_error(tmp_path: Path) -> None:
    """A scenarios file's ``scenarios`` items were any objects: ``"passed": "true"`` there
    was read as passed (and a file without ``cases`` gates on them)."""
    path = tmp_path / "s.json"
    save_result(scenario_run(), path)
    load_result(path)
    text = path.read_text()
    at = text.index('"passed": false', text.index('"scenarios": ['))
    path.write_text(text[:at] + '"passed": "no"' + text[at + len('"passed": false') :])
    with pytest.raises(InputError, match="'passed': expected true or false, got a string"):
        load_result(path)


def test_an_input_file_given_as_results_says_what_it_is(tmp_path: Path) -> None:
    """``compare base.json evals/example.yaml`` said "not a result file: invalid JSON:
    Expecting value" of a dataset; ``run results.json`` already said what a results file
    is and what to do with it."""
    path = tmp_path / "d.yaml"
    path.write_text("name: d\ncases:\n  - id: a\n    assertions: []\n")
    with pytest.raises(InputError) as raised:
        load_result(path)
    assert [str(p) for p in raised.value.problems] == [
        f"{path}:1:1: not a result file (dataset file): run it with `signal-eval run`"
    ]
