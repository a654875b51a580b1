"""A ``.json`` input means what JSON says, as ``json.dumps`` writes it, and its problems
are located in it (file:line:col), never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from signal_eval_cli import InputError, load_dataset, load_result
from signal_eval_cli.json_events import json_events
from signal_eval_cli.loading import load_document

DATASET: dict[str, Any] = {
    "name": "generated",
    "harness": {"factory": "reactive", "params": {"agents": [{"id": "a", "prompt": "hi 😀"}]}},
    "cases": [
        {
            "id": "c-😀",
            "input": {"text": "naïve 😀 \u2028 a/b"},
            "assertions": [
                {"type": "metric.cost.max", "value": 1e-05},
                {"type": "metric.latency.max", "value": 1.5e3},
                {"type": "metric.tokens.max", "value": 1e20},
                {"type": "output.contains", "text": "😀"},
            ],
        }
    ],
}


def problems_of(path: Path) -> list[str]:
    with pytest.raises(InputError) as info:
        load_dataset(path)
    return [str(p) for p in info.value.problems]


def test_a_dataset_json_dumps_wrote_loads_as_json_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    text = json.dumps(DATASET, indent=2)  # ASCII: the emoji as \ud83d\ude00, 1e-05, 1e+20
    assert "\\ud83d\\ude00" in text and "1e-05" in text and "1e+20" in text
    path.write_text(text, encoding="utf-8")
    assert load_document(path).data == DATASET  # YAML 1.1 read 1e-05 as text, refused \ud83d
    (case,) = load_dataset(path).cases
    assert case.id == "c-😀"
    assert [a["value"] for a in case.assertions[:3]] == [1e-05, 1500.0, 1e20]


def test_problems_in_a_json_file_are_located_in_it(tmp_path: Path) -> None:
    data = json.loads(json.dumps(DATASET))
    data["cases"][0]["assertions"][1] = {"type": "metric.latency.max", "value": "fast"}
    data["cases"][0]["asertions"] = []
    path = tmp_path / "d.json"
    text = json.dumps(data, indent=2)
    path.write_text(text, encoding="utf-8")
    lines = text.split("\n")
    value_line, value_column = place(lines, '"fast"')
    key_line, key_column = place(lines, '"asertions"')
    found = problems_of(path)
    assert any(p.startswith(f"{path}:{value_line}:{value_column}: 'value': ") for p in found), found
    assert any(
        p.startswith(f"{path}:{key_line}:{key_column}: ") and "unknown field 'asertions'" in p
        for p in found
    ), found


def place(lines: list[str], token: str) -> tuple[int, int]:
    """1-based line and column of the first ``token`` in ``lines``."""
    return next((i, line.index(token) + 1) for i, line in enumerate(lines, 1) if token in line)


def test_a_key_twice_in_a_json_object_is_named_where_it_is_again(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text('{"name": "x",\n "cases": [{"id": "a", "id": "b"}],\n "name": "y"}')
    assert problems_of(path) == [
        f"{path}:2:24: duplicate key 'id'",
        f"{path}:3:2: duplicate key 'name'",
    ]


@pytest.mark.parametrize(
    ("after", "problem"),
    [
        ('"a": 1 "b": 2}', "3:9: invalid JSON: Expecting ',' delimiter"),
        ('"a": "tab\there"}', "3:11: invalid JSON: Invalid control character at"),
        ('"a" {}}', "3:6: invalid JSON: Expecting ':' delimiter"),
    ],
)
def test_a_key_twice_before_what_is_no_json_says_what_is_no_json(
    tmp_path: Path, after: str, problem: str
) -> None:
    """The duplicate is met while parsing, the broken text after it is not: locating the
    keys read the broken text as JSON, and the command ended in a traceback (the fuzzer's
    seed 42: AttributeError, JSONDecodeError)."""
    path = tmp_path / "d.json"
    path.write_text('{"name": "x",\n "cases": [{"id": "a", "id": "b"}],\n ' + after)
    assert problems_of(path) == [f"{path}:{problem}"]


def test_half_a_surrogate_pair_is_refused_where_it_is(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text('{"name": "x",\n  "cases": [{"id": "\\ud83d alone"}]}')
    (problem,) = problems_of(path)
    assert problem.startswith(f"{path}:2:20: a \\u escape of half a UTF-16 surrogate pair")
    path.write_text('{"name": "a \\\\ud83d is no escape", "cases": []}')  # an escaped backslash
    assert load_document(path).data["name"] == "a \\ud83d is no escape"


def test_validate_takes_half_a_pair_in_a_result_or_a_trace_as_their_readers_do(
    tmp_path: Path,
) -> None:
    """A model's stream cut inside an emoji is written escaped in results and in an Agents
    SDK export; compare, report, import and run --traces read such files, and validate
    refused them. It still refuses one in a file a user writes, where it stands."""
    from signal_eval_cli.persistence import save_result
    from signal_eval_cli.results import CaseResult, DatasetResult
    from signal_eval_cli.validate import validate_path

    result = tmp_path / "r.json"
    save_result(DatasetResult("cut \ud83d", [CaseResult("a", True)]), result)
    assert validate_path(result) == ("result", [])
    trace = tmp_path / "t.json"
    at = "2026-01-10T00:00:00+00:00"
    span = {"object": "trace.span", "id": "s", "trace_id": "t", "started_at": at, "ended_at": at}
    data = {"type": "agent", "name": "\ud83d"}
    trace.write_text(json.dumps({"data": [{**span, "span_data": data, "error": None}]}))
    assert validate_path(trace) == ("trace: openai-agents", [])
    matrix = tmp_path / "m.json"
    matrix.write_text('{"dataset": "d.yaml", "variants": [{"id": "\\ud83d"}]}')
    kind, (problem,) = validate_path(matrix)
    assert (kind, problem.line, problem.column) == ("invalid", 1, 43)
    assert "half a UTF-16 surrogate pair" in problem.message


def test_json_events_give_libyaml_s_marks_for_json_text() -> None:
    """The same 0-based lines and columns libyaml gives, for JSON it can read."""
    import yaml

    text = '{"a": [1, -2.5e3, "x\\ny"],\n\t"b": {"c": null, "d": true}, "e": []}'

    def marks(events: list[Any]) -> list[tuple[str, int, int]]:
        inner = events[2:-2]  # the stream's and the document's events have no place
        return [(type(e).__name__, e.start_mark.line, e.start_mark.column) for e in inner]

    ours = list(json_events(text))
    assert marks(ours) == marks(list(yaml.parse(text, Loader=yaml.CSafeLoader)))
    assert [e.value for e in ours if hasattr(e, "value")][:5] == ["a", "1", "-2.5e3", "x\ny", "b"]


def test_a_damaged_result_file_written_by_json_dump_is_located(tmp_path: Path) -> None:
    """``json.dump``'s escapes in a result file with a problem: its place, not a traceback
    from reading the file as YAML."""
    from signal_eval_cli.persistence import save_result
    from signal_eval_cli.results import CaseResult, DatasetResult

    path = tmp_path / "r.json"
    save_result(DatasetResult(name="emo", cases=[CaseResult(case_id="c-😀", passed=True)]), path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["cases"][0]["passed"] = "yes"
    text = json.dumps(data, indent=2)
    assert "\\ud83d" in text
    path.write_text(text, encoding="utf-8")
    line = next(i for i, x in enumerate(text.split("\n"), 1) if '"passed": "yes"' in x)
    with pytest.raises(InputError) as info:
        load_result(path)
    assert [str(p) for p in info.value.problems] == [
        f"{path}:{line}:17: 'passed': expected true or false, got a string"
    ]


def test_a_case_is_appended_to_a_json_dataset_json_dumps_wrote(tmp_path: Path) -> None:
    """``import --case-into`` a JSON file with JSON's escapes and numbers: every old byte
    kept, the case added, as JSON reads it (YAML 1.1 could not read the old file)."""
    from signal_eval_cli import import_cases

    fixtures = Path(__file__).parent / "fixtures" / "traces"
    path = tmp_path / "d.json"
    old = json.dumps(DATASET, indent=2)
    path.write_text(old, encoding="utf-8")
    (case,) = import_cases([fixtures / "agents_simple.json"], path)
    new = path.read_text(encoding="utf-8")
    assert new.startswith(old[: old.rindex("}\n  ]")]) and new.endswith(old[old.rindex("]") :])
    assert json.loads(new) == {**DATASET, "cases": [*DATASET["cases"], case.to_data()]}


def test_update_expected_rewrites_one_string_of_a_json_scenario_json_dumps_wrote(
    tmp_path: Path,
) -> None:
    from signal_eval_cli.scenarios.update import rewrite_strings

    data = {"note": "😀 1e-05", "cost": 1e-05, "a": [{"d": "old"}]}
    path = tmp_path / "s.json"
    old = json.dumps(data, indent=2)
    path.write_text(old, encoding="utf-8")
    rewrite_strings(path, {("a", 0, "d"): "@@ -1 +1 @@\n-a\n+😀\n"})
    assert path.read_text(encoding="utf-8") == old.replace(
        '"old"', json.dumps("@@ -1 +1 @@\n-a\n+😀\n", ensure_ascii=False)
    )


def test_labels_in_a_json_file_are_their_json_text(tmp_path: Path) -> None:
    """Case ids and tags are labels, as in YAML: a JSON number or null is its JSON text."""
    path = tmp_path / "d.json"
    path.write_text(
        json.dumps(
            {"name": "x", "cases": [{"id": 7, "tags": [None, 1e-05, True], "assertions": []}]}
        )
    )
    (case,) = load_dataset(path).cases
    assert (case.id, case.tags) == ("7", ["null", "1e-05", "true"])


def test_only_a_json_value_that_is_no_string_has_a_plain_text(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text('{"a": ["x", 7, null, 1.50]}')
    assert load_document(path).as_written([("a", 0), ("a", 1), ("a", 2), ("a", 3)]) == [
        None, "7", "null", "1.5"
    ]  # fmt: skip
