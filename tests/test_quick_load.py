"""The fast path for large inputs: plain data first, locations only for a problem.

Each test holds the fast path to the located loader and to jsonschema: it must give
the same data, vouch only for what is valid, and step aside for anything unusual.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signal_eval_cli import InputError, load_dataset, loading
from signal_eval_cli.loading import load_document, parse_yaml, schema_validator
from signal_eval_cli.quick_yaml import Unsure, quick_data
from signal_eval_cli.schema_check import schema_check

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "datasets").rglob("*.yaml")) + sorted(
    (ROOT / "scenarios").rglob("*.yaml")
)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_quick_data_is_the_located_loaders_data(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    try:
        quick = quick_data(text).data
    except Unsure:
        return  # anchors, merge keys: the located loader's case
    assert quick == parse_yaml(text).data


SCALARS = st.sampled_from(
    [
        "yes", "no", "on", "off", "null", "~", "", "1", "01", "0x1f", "1_000", "1.5", ".inf",
        ".nan", "-.inf", "1e3", "2024-01-02", "2024-13-45", "2001-12-14t21:59:43.10-05:00",
        "true", "False", "'quoted'", '"x\\ty"', "text with: colon", "a#b", "- dash",
        "9" * 5000, "<<", "=", "!!str 3", "&a x", "*a", "[1, 2]", "{a: 1}", "? complex",
    ]
)  # fmt: skip
KEYS = st.sampled_from(["a", "b", "1", "yes", "'a'", "<<", "id"])


@st.composite
def documents(draw: st.DrawFn, depth: int = 0) -> str:
    """Small YAML texts, block and flow, with the scalars that resolve differently."""
    if depth > 2 or draw(st.booleans()):
        return str(draw(SCALARS))
    if draw(st.booleans()):
        items = draw(st.lists(documents(depth + 1), max_size=3))
        return "[" + ", ".join(items) + "]"
    pairs = draw(st.lists(st.tuples(KEYS, documents(depth + 1)), max_size=3))
    return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_quick_data_agrees_or_steps_aside(text: str) -> None:
    """Whatever the fast path returns, the located loader returns too; where the located
    loader refuses a text, the fast path is never sure of it."""
    try:
        fast = quick_data(text)
    except Unsure:
        return
    if fast.duplicates:  # the one problem the fast path reports itself
        with pytest.raises(InputError) as info:
            parse_yaml(text)
        assert [(p.line, p.column) for p in info.value.problems] == [
            (line, column) for line, column, _ in fast.duplicates
        ]
        return
    try:
        located = parse_yaml(text).data
    except InputError as exc:
        pytest.fail(f"fast path accepted what the located loader refuses: {exc}")
    assert json.dumps(fast.data, default=str, sort_keys=False) == json.dumps(located, default=str)


@pytest.mark.parametrize(
    "text",
    [
        "a: &x [1]\nb: *x\n",  # an alias
        "base: &b {x: 1}\nc: {<<: *b, y: 2}\n",  # a merge key
        "1: a\n'1': b\n",  # a non-string key
        "a: !!str 3\n",  # an explicit tag
        "n: " + "9" * 4301 + "\n",  # past MAX_INT_DIGITS
        "x: .nan\n",  # not finite
        "d: 2024-13-45\n",  # no such date
        "[" * 101 + "]" * 101,  # nested past MAX_DEPTH
        "a: 1\n---\nb: 2\n",  # two documents
        "a: [1\n",  # a syntax error
        "",
    ],
)
def test_quick_data_steps_aside_for_the_unusual(text: str) -> None:
    with pytest.raises(Unsure):
        quick_data(text)


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\na: 2\n",
        "a: 1\n'a': 2\n",  # the same key, quoted
        "x:\n  b: 1\n  c: {b: 2, b: 3}\n  b: 4\nx: 5\n",  # nested, flow, several
        "a: 1\na: 2\nb: &x 1\nc: *x\n",  # and an alias: the located loader's way
        "a: 1\na: 2\nb: [\n",  # and a syntax error after it, which comes first
        "\ufeffa: 1\r\na:\t2\r\n",
    ],
)
def test_duplicate_keys_are_the_located_loaders_problems(tmp_path: Path, text: str) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(text, encoding="utf-8", newline="")
    with pytest.raises(InputError) as fast:
        load_document(path)
    with pytest.raises(InputError) as located:
        parse_yaml(text.removeprefix("\ufeff"), str(path))
    assert [str(p) for p in fast.value.problems] == [str(p) for p in located.value.problems]
    assert "duplicate key" in str(fast.value.problems[0]) or "invalid YAML" in str(
        fast.value.problems[0]
    )


def test_the_plain_text_of_a_label_is_kept() -> None:
    quick = quick_data("tags: [null, yes, 1.50]\n")
    assert [quick.as_written(v) for v in quick.data["tags"]] == ["null", "yes", "1.50"]
    assert quick_data("a: null\nb: ~\n").as_written(None) is None  # two texts: ambiguous


def _assertion_variants() -> list[Any]:
    """Every example assertion, and each with one field broken in the ways users do."""
    found = []
    for path in sorted((ROOT / "datasets").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for case in data.get("cases", []) if isinstance(data, dict) else []:
            found.extend(case["assertions"])
    variants = []
    for assertion in found:
        variants.append(assertion)
        for key in assertion:
            for bad in (None, 1.5, True, "", [], {}, -1, "x" * 3):
                broken = copy.deepcopy(assertion)
                broken[key] = bad
                variants.append(broken)
        variants.append({**assertion, "typo": 1})
        variants.append({k: v for k, v in assertion.items() if k != "type"})
    return variants


VARIANTS = _assertion_variants()


def test_schema_check_vouches_only_for_what_jsonschema_accepts() -> None:
    check, full = schema_check("assertions"), schema_validator("assertions")
    vouched = 0
    for assertion in VARIANTS:
        if check(assertion):
            vouched += 1
            assert full.is_valid(assertion), assertion
    assert vouched > len(VARIANTS) // 10  # and it does vouch for the valid ones


@pytest.mark.parametrize("name", ["dataset", "scenario", "matrix", "agents", "cassette", "result"])
def test_schema_check_compiles_every_schema(name: str) -> None:
    assert schema_check(name)({}) is False or schema_validator(name).is_valid({})


def test_a_valid_dataset_is_never_parsed_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path reads and validates the examples without the located loader or
    jsonschema (what made a 100,000-case dataset take minutes)."""

    def refuse(*args: object) -> None:
        raise AssertionError("the slow path ran")

    monkeypatch.setattr(loading, "parse_yaml", refuse)
    monkeypatch.setattr(loading, "schema_validator", refuse)
    for name in ("code-review", "debugging", "assertion-syntax", "code-gen", "refactoring"):
        dataset = load_dataset(ROOT / "datasets" / f"{name}.yaml")
        assert dataset.cases


def test_a_problem_in_a_large_dataset_keeps_its_line_and_column(tmp_path: Path) -> None:
    case = "  - id: c{i}\n    input: {{code: x}}\n    assertions:\n      - {{type: output.contains, text: ok}}\n"
    lines = "".join(case.format(i=i) for i in range(2000))
    broken = lines.replace("text: ok}", "txt: ok}", 1).replace("id: c1500\n", "id: c1499\n")
    path = tmp_path / "big.yaml"
    path.write_text("name: big\ncases:\n" + broken, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_dataset(path)
    messages = [str(p) for p in info.value.problems]
    assert f"{path}:6:33: unknown field 'txt' in output.contains — did you mean 'text'?" in messages
    path.write_text("name: big\ncases:\n" + lines.replace("id: c1500\n", "id: c1499\n"), "utf-8")
    with pytest.raises(InputError) as info:
        load_dataset(path)
    assert [str(p) for p in info.value.problems] == [
        f"{path}:{3 + 1500 * 4}:9: duplicate case id 'c1499' (first at case 1500)"
    ]


def test_a_fast_document_finds_its_locations_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text("name: x\ncases:\n  - id: a\n    assertions: []\n", encoding="utf-8")
    doc = load_document(path)
    assert doc.source is not None and doc.values == {}
    assert doc.problem(("cases", 0, "id"), "here").line == 3


LOCATABLE = [
    *EXAMPLES,
    "a: 1\n'b c': {d: [x, 'y', \"z\"]}\ne: |\n  block\n  text\nf:\n- - 1\n  - k: v\n- ~\n",
    "\ufeffname: bom\ncases:\n  - id: é\n    tags: [yes, '1', 0o7]\n",
    "a:\r\n  b: \tx\r\n  c: >-\r\n    folded\r\n    more\r\n",
    "? long key\n: value\nlist: [a, {b: c}, [d]]\n",
    "top: plain\n  continued on a line\nnext: 'quoted\n  folded'\n",
    "when: 2001-12-14t21:59:43.10-05:00\nday: 2002-12-14\noct: 010\nsex: 1:20\nf: 1.5e+3\n",
]


@pytest.mark.parametrize("source", LOCATABLE, ids=range(len(LOCATABLE)))
def test_a_fast_document_locates_every_value_as_the_located_loader_does(
    tmp_path: Path, source: Path | str
) -> None:
    """Each path's location found on demand (key and value, with the plain text) is the
    one the located loader records for it."""
    path = tmp_path / "doc.yaml"
    if isinstance(source, Path):
        path.write_bytes(source.read_bytes())
    else:
        path.write_bytes(source.encode("utf-8"))
    located = parse_yaml(path.read_bytes().decode("utf-8-sig"), str(path))
    doc = load_document(path)
    assert doc.source is not None, "the fast path should read this document"
    for where in located.values:
        assert load_document(path).at(where) == located.at(where), where
    for where in located.keys:
        assert load_document(path).at(where, key=True) == located.at(where, key=True), where
    doc.locate(list(located.values))  # all at once, in one pass
    assert {w: doc.at(w) for w in located.values} == {w: located.at(w) for w in located.values}


def _big_dataset(cases: int, broken: dict[int, tuple[str, str]]) -> str:
    case = "  - id: c{i}\n    input: {{code: x}}\n    assertions:\n      - {{type: output.contains, text: ok}}\n      - type: tool.called\n        name: Edit\n"
    lines = []
    for i in range(cases):
        text = case.format(i=i)
        if i in broken:
            text = text.replace(*broken[i])
        lines.append(text)
    return "name: big\ndefaultAssertions:\n  - {type: output.contains, txt: x}\ncases:\n" + "".join(
        lines
    )


def test_problems_in_a_large_dataset_are_the_located_loaders_and_only_theirs_are_located(
    tmp_path: Path,
) -> None:
    """jsonschema sees only the cases the quick check does not vouch for, and the fast
    document records the locations of those cases alone; the problems (messages, lines,
    columns, the quoting hint from the text as written) are the full, located path's."""
    broken = {
        7: ("name: Edit", "nam: Edit"),
        1200: ("text: ok", "text: yes"),
        1201: ("type: tool.called", "type: tool.caled"),
        2999: ("input: {code: x}", "input: {code: x}\n    timeout: -1"),
    }
    path = tmp_path / "big.yaml"
    path.write_text(_big_dataset(3000, broken), encoding="utf-8")
    doc = load_document(path)
    assert doc.source is not None
    fast = loading.validate_document(doc, "dataset")
    full = loading.validate_document(parse_yaml(path.read_text("utf-8"), str(path)), "dataset")
    assert [str(p) for p in fast] == [str(p) for p in full]
    messages = "\n".join(str(p) for p in fast)
    assert f"{path}:3:29: unknown field 'txt' in output.contains" in messages
    assert f"{path}:{4 + 7 * 6 + 6}:9: unknown field 'nam' in tool.called" in messages
    assert 'quote it: "yes"' in messages
    assert "did you mean 'tool.called'" in messages
    assert len(doc.values) < 200  # four cases and the top level, not 3,000 cases' worth


def test_a_duplicate_key_in_a_large_dataset_is_found_without_the_located_loader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The located loader would build a table of every value (gigabytes for 100,000
    cases) to report one duplicate key: the fast path reports it from its event."""

    def refuse(*args: object) -> None:
        raise AssertionError("the slow path ran")

    path = tmp_path / "big.yaml"
    text = _big_dataset(3000, {2500: ("input: {code: x}", "input: {code: x}\n    input: 2")})
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(loading, "parse_yaml", refuse)
    with pytest.raises(InputError) as info:
        load_dataset(path)
    assert [str(p) for p in info.value.problems] == [
        f"{path}:{4 + 2500 * 6 + 3}:5: duplicate key 'input'"
    ]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_a_fast_document_locates_any_path_as_the_located_loader_does(text: str) -> None:
    try:
        fast = quick_data(text)
        located = parse_yaml(text)
    except (Unsure, InputError):
        return
    if fast.duplicates:
        return
    doc = loading.Document("<string>", fast.data, {}, {}, source=text, quick=fast)
    for where in located.values:
        assert doc.at(where) == located.at(where), where
    for where in located.keys:
        assert doc.at(where, key=True) == located.at(where, key=True), where
