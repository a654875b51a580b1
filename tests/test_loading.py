"""Dataset loading: every problem located (file:line:col), all at once, never a traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from signal_eval_cli import InputError, load_dataset, save_dataset
from signal_eval_cli.assertions.documents import assertion_nodes
from signal_eval_cli.dataset import EvalCase, EvalDataset
from signal_eval_cli.validate import validate_path

DATASETS = Path(__file__).resolve().parent.parent / "datasets"
SEED_EXAMPLES = ["code-review", "code-gen", "refactoring", "debugging", "assertion-syntax"]


def write(tmp_path: Path, text: str, name: str = "d.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(InputError) as info:
        load_dataset(path)
    return [str(p) for p in info.value.problems]


MINIMAL = """\
name: demo
cases:
  - id: one
    input: {{}}
    assertions:
      - type: {type}
        {field}: {value}
"""


@pytest.mark.parametrize("name", SEED_EXAMPLES)
def test_every_seed_example_validates(name: str) -> None:
    kind, found = validate_path(DATASETS / f"{name}.yaml")
    assert found == [] and kind.startswith("dataset")  # assertion-syntax: no harness


def test_seed_examples_keep_every_case() -> None:
    dataset = load_dataset(DATASETS / "code-review.yaml")
    assert len(dataset.cases) == 11
    assert dataset.cases[0].id == "sql-injection"
    assert [a["type"] for a in dataset.default_assertions] == [
        "metric.latency.max",
        "signal.not",
        "signal.trajectory",
    ]


def test_labels_are_taken_as_written() -> None:
    """The seed writes `tags: [debugging, null]`: a label, not a YAML null."""
    dataset = load_dataset(DATASETS / "debugging.yaml")
    assert dataset.cases[0].tags == ["debugging", "null"]


def test_labels_the_fast_path_cannot_tell_are_located_in_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``null`` and ``~`` both read as None, so the fast path keeps no text for None: each
    such label is found in the file, all of them in one pass (a pass per label made a
    large dataset quadratic)."""
    import signal_eval_cli.loading as loading

    passes = []
    locate = loading._locate
    monkeypatch.setattr(loading, "_locate", lambda *a: passes.append(1) or locate(*a))
    cases = "".join(
        f"  - id: c{i}\n    tags: [{'~' if i % 2 else 'null'}, {i}.50]\n    assertions: []\n"
        for i in range(200)
    )
    path = write(tmp_path, f"name: x\ncases:\n{cases}")
    dataset = load_dataset(path)
    assert [c.tags for c in dataset.cases[:2]] == [["null", "0.50"], ["~", "1.50"]]
    assert len(passes) == 1


def test_a_problem_near_the_top_of_a_large_file_reads_no_more_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Locating a problem gave libyaml the whole text, which it holds again as UTF-8: a
    warning on a 100,000-case dataset (cases that check nothing) cost 50 MB at peak. The
    parser now reads a chunk at a time, and stops after the problem's case."""
    import signal_eval_cli.loading as loading

    read: list[int] = []
    chunks = loading._Chunks

    class Counted(chunks):
        def read(self, size: int = -1, /) -> str:
            chunk = super().read(size)
            read.append(len(chunk))
            return chunk

    monkeypatch.setattr(loading, "_Chunks", Counted)
    cases = "".join(
        f"  - id: c{i}\n    input: {i}\n    assertions: [{{type: output.contains, text: x}}]\n"
        for i in range(20_000)
    )
    path = write(tmp_path, f"name: x\ncases:\n{cases}".replace("id: c3\n", "id: c3\n    bad: 1\n"))
    assert problems(path) == [f"{path}:13:5: unknown field 'bad' — did you mean 'id'?"]
    assert 0 < sum(read) < path.stat().st_size / 20  # a chunk or two of 1.6 MB


def test_misspelled_field_is_located_with_a_suggestion(tmp_path: Path) -> None:
    source = (DATASETS / "code-review.yaml").read_text(encoding="utf-8")
    lines = source.split("\n")
    target = next(i for i, line in enumerate(lines) if "caseSensitive: false" in line)
    lines[target] = lines[target].replace("caseSensitive", "caseSensitve")
    path = write(tmp_path, "\n".join(lines))
    found = problems(path)
    column = lines[target].index("caseSensitve") + 1
    assert found == [
        f"{path}:{target + 1}:{column}: unknown field 'caseSensitve' in output.contains"
        " — did you mean 'caseSensitive'?"
    ]


def test_unknown_assertion_type_suggests_the_intended_one(tmp_path: Path) -> None:
    source = (DATASETS / "code-review.yaml").read_text(encoding="utf-8")
    lines = source.split("\n")
    target = next(i for i, line in enumerate(lines) if "type: agent.causedBy" in line)
    lines[target] = lines[target].replace("agent.causedBy", "agent.causedby")
    path = write(tmp_path, "\n".join(lines))
    found = problems(path)
    assert len(found) == 1
    assert found[0].startswith(f"{path}:{target + 1}:")
    assert "unknown assertion type 'agent.causedby'" in found[0]
    assert "did you mean 'agent.causedBy'?" in found[0]


def test_all_problems_are_reported_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
name: demo
cases:
  - id: a
    input: {}
    assertions:
      - type: signal.contians
        pattern: x
      - type: metric.latency.max
        value: fast
  - id: b
    input: {}
    assertions:
      - type: output.contains
""",
    )
    found = problems(path)
    assert [f.split(": ", 1)[0] for f in found] == [f"{path}:6:15", f"{path}:9:16", f"{path}:13:9"]
    assert "did you mean 'signal.contains'" in found[0]
    assert "expected a number, got a string" in found[1]
    assert "missing required field 'text' in output.contains" in found[2]


@pytest.mark.parametrize(
    ("type_", "field", "value", "message"),
    [
        ("output.matches", "regex", '"(unclosed"', "invalid regex"),
        ("signal.contains", "pattern", '"***"', "bad pattern"),
        ("signal.contains", "pattern", '""', "should be non-empty"),
        ("signal.contains", "pattern", '" tool:call"', "leading or trailing whitespace"),
        ("signal.contains", "pattern", '" a***"', "leading or trailing whitespace"),  # one problem
        ("output.json", "schema", "{type: 5}", "invalid JSON Schema"),
    ],
)
def test_bad_regex_or_glob_is_a_located_load_error(
    tmp_path: Path, type_: str, field: str, value: str, message: str
) -> None:
    path = write(tmp_path, MINIMAL.format(type=type_, field=field, value=value))
    found = problems(path)
    assert len(found) == 1 and found[0].startswith(f"{path}:7:"), found
    assert message in found[0]


def test_bad_regex_inside_a_payload_matcher_is_located(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
name: demo
cases:
  - id: a
    input: {}
    assertions:
      - type: tool.calledWith
        name: Bash
        args:
          command:
            matches: "test|(vitest"
""",
    )
    found = problems(path)
    assert len(found) == 1 and found[0].startswith(f"{path}:10:22:"), found
    assert "invalid regex" in found[0]


def test_unquoted_star_pattern_hints_to_quote_it(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL.format(type="signal.not", field="pattern", value="*:error"))
    (found,) = problems(path)
    assert re.match(rf"{re.escape(str(path))}:7:18: invalid YAML", found), found
    assert "quote the pattern" in found


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("name: t\ncases:\n\t- id: a\n", "3:1"),  # a tab as the indent
        ("name: t\ncases:\n  - id: a\n  \tinput: {}\n", "4:3"),  # after spaces
    ],
)
def test_a_tab_in_the_indentation_is_named(tmp_path: Path, text: str, where: str) -> None:
    """An editor's tab read 'found character that cannot start any token': a new user
    sees no character there."""
    path = tmp_path / "d.yaml"
    path.write_text(text)
    (found,) = problems(path)
    assert found.startswith(f"{path}:{where}: invalid YAML"), found
    assert found.endswith(
        "— a tab: YAML indents with spaces only (an editor may have put it there)"
    )


@pytest.mark.parametrize("word", ["no", "yes", "on", "off"])
def test_yaml11_booleans_get_a_hint(tmp_path: Path, word: str) -> None:
    path = write(tmp_path, MINIMAL.format(type="output.contains", field="text", value=word))
    (found,) = problems(path)
    assert found.startswith(f"{path}:7:15: 'text': expected a string, got a boolean")
    assert f'quote it: "{word}"' in found


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "file is empty"),
        (b"   \n\n", "file is empty"),
        (b"\x00\x01\x02binary", "binary file"),
        (b"\xfa\xff not utf8", "not UTF-8"),  # (not \xff\xfe: UTF-16's mark)
        (b"name: x\ncases: [\n", "invalid YAML"),
        (b"- just\n- a list\n", "a dataset must be a mapping"),
        (b"name: x\n", "missing required field 'cases'"),
        (b"name: x\ncases:\n  - id: a\n    id: b\n    assertions: []\n", "duplicate key 'id'"),
    ],
)
def test_malformed_files_get_located_messages(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    found = problems(path)
    assert any(message in f for f in found), found
    assert all(re.match(rf"{re.escape(str(path))}:\d+:\d+: ", f) for f in found), found


def test_a_stray_nul_byte_is_located_where_it_is(tmp_path: Path) -> None:
    """One NUL pasted into a text file (a bad copy, a tool's bug) is shown at its line and
    column, in characters: it was always reported at 1:1, leaving the user to hunt."""
    path = tmp_path / "bad.yaml"
    path.write_bytes("name: café\ncases:\n  - id: é\x00\n".encode())
    (found,) = problems(path)
    assert found.startswith(f"{path}:3:10: binary file (a NUL byte)"), found


def test_duplicate_case_ids_are_rejected(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "name: x\ncases:\n  - id: a\n    assertions: []\n  - id: a\n    assertions: []\n",
    )
    (found,) = problems(path)
    assert found.startswith(f"{path}:5:9: duplicate case id 'a'")


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    found = problems(tmp_path / "nope.yaml")
    assert "cannot read file" in found[0]


def test_save_dataset_round_trips(tmp_path: Path) -> None:
    original = load_dataset(DATASETS / "code-gen.yaml")
    target = tmp_path / "copy.yaml"
    save_dataset(original, target)
    again = load_dataset(target)
    assert again.to_data() == original.to_data()
    assert yaml.safe_load(target.read_text(encoding="utf-8"))["name"] == original.name


def test_default_assertions_come_first(tmp_path: Path) -> None:
    dataset = load_dataset(DATASETS / "code-review.yaml")
    case = dataset.cases[1]
    combined = dataset.assertions_for(case)
    assert combined[:3] == dataset.default_assertions
    assert combined[3:] == case.assertions


def test_case_fields_are_kept(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
name: x
defaultTimeout: 500
metadata: {owner: team}
cases:
  - id: a
    skip: true
    only: false
    tags: [smoke]
    timeout: 100
    metadata: {ticket: 12}
    input: {code: "x"}
    assertions: []
""",
    )
    dataset = load_dataset(path)
    case = dataset.cases[0]
    assert (case.skip, case.only, case.tags, case.timeout, case.metadata) == (
        True,
        False,
        ["smoke"],
        100,
        {"ticket": 12},
    )
    assert dataset.default_timeout == 500 and dataset.metadata == {"owner": "team"}


def test_schema_and_semantic_problems_are_reported_together(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
name: demo
cases:
  - id: a
    input: {}
    assertions:
      - type: output.contains
        txt: x
      - type: snapshot.final
        path: ""
        value: {between: [1]}
      - type: signal.trajectory
        patterns:
          - {pattern: b, payload: {q: {matches: "(("}}}
""",
    )
    found = problems(path)
    assert [f.split(": ", 1)[0] for f in found] == [
        f"{path}:6:9",
        f"{path}:7:9",
        f"{path}:10:26",
        f"{path}:13:49",
    ], found
    assert "unknown field 'txt'" in found[1] and "'between' needs [min, max]" in found[2]
    assert "invalid regex" in found[3]


def test_yaml_merge_keys_override_without_duplicate_errors(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
name: demo
cases:
  - &base
    id: a
    input: {code: x}
    assertions:
      - &check {type: signal.contains, pattern: harness:start}
  - <<: *base
    id: b
    assertions:
      - {<<: *check, pattern: harness:end}
""",
    )
    dataset = load_dataset(path)
    assert [c.id for c in dataset.cases] == ["a", "b"]
    assert dataset.cases[1].input == {"code": "x"}
    assert dataset.cases[1].assertions == [{"type": "signal.contains", "pattern": "harness:end"}]


def test_a_real_duplicate_key_is_still_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "name: x\nname: y\ncases: []\n")
    (found,) = problems(path)
    assert found == f"{path}:2:1: duplicate key 'name'"


def test_uses_judge_finds_a_judge_at_any_depth() -> None:
    judge = {"type": "llm.judge", "rubric": "r"}
    nested = {"type": "not", "assertion": {"type": "any", "assertions": [{"type": "x"}, judge]}}
    plain = {"type": "output.contains", "text": "llm.judge", "value": {"type": ["llm.judge"]}}
    for default, own, expected in (
        ([], [plain], False),
        ([judge], [plain], True),
        ([], [plain, nested], True),
    ):
        dataset = EvalDataset("d", [EvalCase("a", own)], default_assertions=default)
        assert dataset.uses_judge() is expected


@pytest.mark.parametrize(
    ("written", "number"),
    [("1e-3", "0.001"), ("5e4", "50000.0"), ("1.5E3", "1500.0"), ("1e-9", "1.0e-09")],
)
def test_a_yaml11_exponent_read_as_text_gets_a_hint(
    tmp_path: Path, written: str, number: str
) -> None:
    """PyYAML (YAML 1.1) reads a float only with a dot and a signed exponent: ``1e-3``
    is the text "1e-3", and ``value: 1e-3`` said only "expected a number, got a string"."""
    path = write(tmp_path, MINIMAL.format(type="metric.cost.max", field="value", value=written))
    (found,) = problems(path)
    assert found.startswith(f"{path}:7:16: 'value': expected a number, got a string"), found
    assert f"YAML reads unquoted {written} as text: write {number}" in found


NO_NUMBER = (
    "not a finite number: JSON and the schemas have none (for no bound, leave the bound out)"
)


@pytest.mark.parametrize(
    ("written", "hint"),
    [
        ("1e400", "1e400 is out of range (a number is at most ±1.8e+308)"),
        ("-1E99999", "-1E99999 is out of range (a number is at most ±1.8e+308)"),
        ("inf", f"inf is {NO_NUMBER}"),
        ("-Infinity", f"-Infinity is {NO_NUMBER}"),
        ("-.5E+400", "-.5E+400 is out of range (a number is at most ±1.8e+308)"),  # text: signed
    ],
)
def test_a_number_no_float_holds_says_so(tmp_path: Path, written: str, hint: str) -> None:
    """``value: 1e400`` (text to YAML 1.1) said only "expected a number, got a string":
    the hint for ``1e4`` is left out when the number it would suggest is infinite."""
    path = write(tmp_path, MINIMAL.format(type="metric.cost.max", field="value", value=written))
    assert problems(path) == [f"{path}:7:16: 'value': expected a number, got a string — {hint}"]


@pytest.mark.parametrize(
    ("written", "says"),
    [
        ("1.0e+400", "out of range (a number is at most ±1.8e+308)"),
        # a leading dot made it "not a finite number … leave the bound out", as .inf is
        (".5e+400", "out of range (a number is at most ±1.8e+308)"),
        ("-1.5E+400", "out of range (a number is at most ±1.8e+308)"),
        ("1_000.0e+400", "out of range (a number is at most ±1.8e+308)"),
        (".inf", NO_NUMBER),
        ("-.Inf", NO_NUMBER),
        (".NaN", NO_NUMBER),
    ],
)
def test_a_yaml_float_that_is_not_finite_says_why_whatever_its_spelling(
    tmp_path: Path, written: str, says: str
) -> None:
    """The YAML loader and the hint for a number read as text share one rule
    (:func:`~signal_eval_cli.limits.no_finite_number`): a word for none, else too large."""
    path = write(tmp_path, MINIMAL.format(type="metric.cost.max", field="value", value=written))
    assert problems(path) == [f"{path}:7:16: {written} is {says}"]


def test_a_yaml11_exponent_where_a_whole_number_is_wanted_is_hinted_as_one(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, MINIMAL.format(type="tool.called", field="max", value="1e3"))
    found = problems(path)
    assert (
        f"{path}:7:14: 'max': expected a whole number, got a string — YAML reads unquoted 1e3 as text: write 1000"
        in found
    ), found


def test_a_byte_that_is_not_utf8_is_located_at_its_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_bytes('name: é\ncases:\n  - id: a\n    input: "ok '.encode() + b'\xff"\n')
    (found,) = problems(path)
    assert found == f"{path}:4:16: not UTF-8 text", found


def test_a_trace_byte_that_is_not_utf8_is_located_too(tmp_path: Path) -> None:
    from signal_eval_cli.errors import InputError
    from signal_eval_cli.traces.source import Source

    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"name": "a"}\n{"name": "\xe9"}\n')
    with pytest.raises(InputError) as raised:
        Source.read(path)
    assert str(raised.value).startswith(f"{path}:2:11: not UTF-8 text"), raised.value


def test_bad_glob_in_a_trajectory_step_or_under_not_is_located(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
name: demo
cases:
  - id: a
    input: {}
    assertions:
      - type: signal.trajectory
        patterns:
          - pattern: "a***"
      - type: not
        assertion:
          type: signal.contains
          pattern: "b***"
""",
    )
    found = problems(path)
    assert [f.split(": ", 1)[0] for f in found] == [f"{path}:8:22", f"{path}:12:20"], found
    assert all("'***' is ambiguous" in f for f in found)


def test_the_assertions_of_a_document_are_found_at_any_depth_in_document_order() -> None:
    """A mapping with a string ``type`` is taken for an assertion where a list holds it
    (at any depth, in an input too) or under ``assertion`` (a ``not``'s), in the order
    the file has them: what the loader checks of each. A mapping under another key, or
    with another ``type``, is none."""
    data = {
        "type": "output.contains",  # the document itself
        "cases": [
            {
                "id": "a",
                "input": {"type": "text", "parts": [[{"type": "p"}], ["s", 1]]},
                "assertions": [
                    {"type": "not", "assertion": {"type": "x", "args": {"type": "q"}}},
                    {"type": 1, "assertions": [{"type": "deep"}]},
                    {"type": "y", "tags": ["t"]},
                ],
            }
        ],
        "meta": {"type": "z"},
    }
    assert [path for path, _ in assertion_nodes(data)] == [
        ("cases", 0, "input", "parts", 0, 0),
        ("cases", 0, "assertions", 0),
        ("cases", 0, "assertions", 0, "assertion"),
        ("cases", 0, "assertions", 1, "assertions", 0),
        ("cases", 0, "assertions", 2),
    ]
    assert list(assertion_nodes([{"type": "t"}])) == [((0,), {"type": "t"})]
    assert list(assertion_nodes("text")) == []
