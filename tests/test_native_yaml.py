"""The native parser for a large dataset's cases: it gives PyYAML's data or steps aside.

Each test holds :func:`native_cases` (through :func:`quick_data`, with the size from
which it reads lowered to nothing) to the located loader: the same data, or
:class:`Unsure`; never a document the located loader refuses.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signal_eval_cli import InputError, load_dataset, native_yaml, quick_yaml
from signal_eval_cli.loading import parse_yaml
from signal_eval_cli.native_yaml import Unsure
from signal_eval_cli.quick_yaml import quick_data

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import load as load_bench  # noqa: E402 - the benchmark's own dataset writer

NATIVE: list[object] = []
"""What the native parser returned in the last :func:`quick_data` (None: it did not read)."""


def _spy(*args: object) -> object:
    NATIVE.clear()
    NATIVE.append(None)
    NATIVE[0] = native_yaml.native_cases(*args)  # type: ignore[arg-type]
    return NATIVE[0]


@pytest.fixture(autouse=True, scope="module")
def _every_size() -> object:
    """The native parser reads every ``cases:`` list, small ones too; a spy says when."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native_yaml, "NATIVE_FROM", 0)
        patch.setattr(quick_yaml, "native_cases", _spy)
        yield


def _agrees(text: str) -> bool:
    """The fast path's data is the located loader's (True when the native parser read the
    cases), or the fast path steps aside where the located loader refuses the text."""
    try:
        located = parse_yaml(text).data
    except InputError as exc:
        try:
            fast = quick_data(text)
        except Unsure:
            return False
        assert fast.duplicates, f"the fast path accepted what the located loader refuses: {exc}"
        return False  # a duplicate key: the one problem the fast path reports itself
    NATIVE.clear()
    try:
        fast = quick_data(text).data
    except Unsure:
        return False  # the located loader's way, then
    assert json.dumps(fast, default=repr) == json.dumps(located, default=repr)
    return bool(NATIVE) and NATIVE[0] is not None


PLAIN = [
    "yes", "no", "on", "off", "Yes", "NO", "On", "OFF", "y", "n", "true", "False", "TRUE",
    "null", "Null", "~", "0", "00", "010", "0o10", "09", "0x1F", "0X1F", "0b101", "1_000",
    "0_1", "190:20:30", "1:20", "12:30:00", "1e3", "1.0e3", "1.0e+3", "1E3", "1e+3", "+.5",
    "-.5", ".5", "1.", "-1.5", ".inf", "-.Inf", ".nan", ".NaN", "2002-12-14",
    "2001-12-14t21:59:43.10-05:00", "<<", "=", "+12", "-0", "9" * 30, "9" * 5000, "text",
    "two words", "a:b", "a#b", "-x", "?x", ":x", "é", "😀", "agent:*", "SQL.*injection|XSS",
    "x # comment", "&a x", "*a", "!!str 3", "!!int '3'", "!foo x", "! x", "[1, 2]",
    "{a: 1}", "{a:1}", "[a, {b: yes}]", '{"a":yes}', "[010, 1e3]", "{}", "[]",
]  # fmt: skip
QUOTED = [
    "yes", "010", "1e3", "1:20", "null", "2002-12-14", "<<", "a: b", "it's", "\\x41\\u00e9",
    "tab\\tend", "", "line one\\nline two",
]  # fmt: skip


SAFE = [
    "text", "two words", "0", "12", "-3", "0.5", "1.5e+3", "0x1F", "true", "False", "null", "~",
    "agent:*", "a:b", "x # comment", "[1, 2, a]", "{a: 1, b: [x]}", "{}", "[]", "é", "2 items",
]  # fmt: skip
"""Plain scalars both parsers read alike: documents of these are read natively."""


@st.composite
def scalars(draw: st.DrawFn) -> str:
    kind = draw(st.integers(-2, 3))
    if kind < 0:
        return draw(st.sampled_from(SAFE))
    if kind == 0:
        return draw(st.sampled_from(PLAIN))
    text = draw(st.sampled_from(QUOTED))
    if kind == 1:
        return "'" + text.replace("'", "''").replace("\\", "") + "'"
    if kind == 2:
        return '"' + text.replace('"', '\\"') + '"'
    header = draw(st.sampled_from(["|", ">", "|-", "|+", ">-", "|2", ">+"]))
    return header + "\n" + "".join(f"{{indent}}  {line}\n" if line else "\n" for line in draw(
        st.lists(st.sampled_from(["yes", "- x", "**bold**", "&x y", "!x", "010", "a: b", "", " ", "  more", "end  "]), min_size=1, max_size=4)
    )).rstrip("\n")  # fmt: skip


KEYS = st.one_of(
    st.sampled_from(["input", "name", "note", "'q'", "a b"]),
    st.sampled_from(["yes", "1", "<<", "x" * 1100]),  # keys PyYAML reads otherwise, or refuses
)


@st.composite
def cases(draw: st.DrawFn) -> str:
    """A ``cases:`` list of a few cases, each a mapping with an id and a few fields."""
    items = []
    for i in range(draw(st.integers(1, 4))):
        lines = [f"  - id: c{i}"]
        for key in draw(st.lists(KEYS, max_size=3, unique=True)):
            value = draw(scalars()).replace("{indent}", "    ")
            if draw(st.booleans()):
                lines.append(f"    {key}: {value}")
            else:
                inner = draw(scalars()).replace("{indent}", "        ")
                lines.append(
                    f"    {key}:\n      - {value.replace(chr(10), chr(10) + '  ')}\n      - k: {inner}"
                )
        if draw(st.booleans()):
            tag = draw(st.sampled_from(["a", "null", "1.50", "yes", '"b"']))
            lines.append(f"    tags: [{tag}]")
        items.append("\n".join(lines) + "\n")
    return "name: t\ncases:\n" + "".join(items)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_the_native_cases_are_the_located_loaders_or_step_aside(text: str) -> None:
    _agrees(text)


@st.composite
def benign_cases(draw: st.DrawFn) -> str:
    """Cases of what both parsers read alike: plain scalars of :data:`SAFE`, quoted
    lookalikes of what they read otherwise, block scalars of text (a line of a block
    scalar that looks like an anchor, a tag or a 1.1 number makes it step aside)."""
    items = []
    for i in range(draw(st.integers(1, 4))):
        lines = [f"  - id: c{i}"]
        for key in draw(st.lists(st.sampled_from(["input", "name", "note"]), unique=True)):
            kind = draw(st.integers(0, 2))
            if kind == 0:
                value = draw(st.sampled_from(SAFE))
            elif kind == 1:
                value = (
                    "'" + draw(st.sampled_from(QUOTED)).replace("\\", "").replace("'", "''") + "'"
                )
            else:
                body = draw(
                    st.lists(
                        st.sampled_from(["text", "- x", "**bold**", "a: b", "  more", "end  ", ""]),
                        min_size=1,
                        max_size=4,
                    ).filter(lambda body: body[0] not in ("", "  more"))
                )
                value = draw(st.sampled_from(["|", ">", "|-", ">+"])) + "".join(
                    f"\n      {line}" if line else "\n" for line in body
                )
            lines.append(f"    {key}: {value}")
        items.append("\n".join(lines) + "\n")
    return "name: t\ncases:\n" + "".join(items)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(benign_cases())
def test_what_both_parsers_read_alike_is_read_natively(text: str) -> None:
    assert _agrees(text), text


@pytest.mark.parametrize("plain", PLAIN)
def test_each_hostile_scalar_reads_as_pyyaml_does(plain: str) -> None:
    for line in (f"    value: {plain}\n", f"    value:\n      - {plain}\n", f"    {plain}: 1\n"):
        _agrees(f"name: t\ncases:\n  - id: a\n{line}  - id: b\n    value: 1\n")


@pytest.mark.parametrize(
    "text",
    [
        "name: t\ncases:\n  - id: a\n    x: 1\n    x: 2\n",  # a duplicate key
        "name: t\ncases:\n  - id: a\n    x: &k 1\n  - id: b\n    x: *k\n",  # an alias
        "name: t\ncases:\n  - id: a\n    x: &k 1\n    y: &k 2\n",  # a repeated anchor
        "name: t\ncases:\n  - id: a\n    x: !!binary aGk=\n",  # a tag
        "name: t\ncases:\n  - id: a\n    x:\n"
        + "".join("  " * d + "      - \n" for d in range(120)),
        "name: t\ncases:\n  - id: a\n    x: " + "[" * 120 + "]" * 120 + "\n",  # deep flow
        "name: t\ncases:\n  - id: a\n    x:\n      " + "-  " * 60_000 + "x\n",  # crashed yaml_rs
        "name: t\ncases:\n  - id: a\n    x:\n      " + "? " * 60_000 + "x\n",
        "name: t\ncases:\r\n  - id: a\r\n    x: yes\r\n",  # CRLF
        "name: t\ncases:\n  - id: a\n    x:\tyes\n",  # a tab
        "name: t\ncases:\n  - id: a\n    x: a\x85b\n",  # NEL: a line break to PyYAML
        "name: t\ncases:\n  - id: a\n    x: a\x07b\n",  # a control character
        "name: t\ncases:\n  - id: a\n---\nname: u\n",  # two documents
        "name: t\ncases:\n  - id: a\n    : x\n",  # an empty key
        "name: t\ncases:\n  - id: a\n    [a]: x\n",  # a flow collection as a key
        'name: t\ncases:\n  - id: a\n    x: "a\n  - id: b"\n',  # a quoted scalar over the split
        "name: t\ncases:\n  - id: a\n    x: [a,\n  - id: b]\n",  # a flow one
        "name: t\ncases:\n  - id: a\n    x: " + "9" * 4400 + "\n",  # a huge int
        "name: t\ncases:\n  - id: 1\n    tags: [null, yes, 1.50]\n  - id: b\n",  # labels
        "name: t\ncases:\n  - id: a\ncases:\n  - id: b\n",  # the key twice
        "name: t\ncases:\n- id: a\n  x: yes\n- id: b\ndefaultAssertions: []\n",  # at column 0
        "name: t\ncases:\n  - id: a\n    note: |\n      yes\n      &x\n  - id: b\n",
    ],
)
def test_hostile_datasets_read_as_pyyaml_does(text: str) -> None:
    _agrees(text)


def test_labels_keep_their_text_through_the_native_path() -> None:
    text = "name: t\ncases:\n  - id: 1\n    tags: [null, yes, 1.50]\n  - id: b\n    tags: [x]\n"
    assert _agrees(text)
    quick = quick_data(text)
    assert [quick.as_written(v) for v in quick.data["cases"][0]["tags"]] == ["null", "yes", "1.50"]
    assert quick.as_written(1) == "1"


def test_the_benchmark_dataset_is_read_natively(tmp_path: Path) -> None:
    """The benchmark's dataset (every example case, as safe_dump writes it) is what the
    native path is for: it must vouch for it, and give the located loader's data."""
    path = tmp_path / "d.yaml"
    load_bench.write_dataset(path, 60)
    text = path.read_text(encoding="utf-8")
    assert _agrees(text)


EXAMPLES = sorted((ROOT / "datasets").rglob("*.yaml")) + sorted(
    (ROOT / "scenarios").rglob("*.yaml")
)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_reads_as_the_located_loader_reads_it(path: Path) -> None:
    _agrees(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        (
            ("text: ok\n", "txt: ok\n"),
            "7:9: unknown field 'txt' in output.contains — did you mean 'text'?",
        ),
        (
            ("id: c250\n", "id: c249\n"),
            f"{3 + 250 * 5}:9: duplicate case id 'c249' (first at case 250)",
        ),
    ],
)
def test_a_problem_in_a_natively_read_dataset_keeps_its_line_and_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken: tuple[str, str], expected: str
) -> None:
    """The problems are located from the text, whichever parser read the cases: the
    same messages, lines and columns as when the exact way reads them."""
    case = "  - id: c{i}\n    input: {{code: 'x: 1'}}\n    assertions:\n      - type: output.contains\n        text: ok\n"
    text = "name: big\ncases:\n" + "".join(case.format(i=i) for i in range(300))
    path = tmp_path / "big.yaml"
    path.write_text(text.replace(*broken, 1))
    assert _agrees(path.read_text())
    with pytest.raises(InputError) as native:
        load_dataset(path)
    monkeypatch.setattr(native_yaml, "NATIVE_FROM", 1 << 40)
    with pytest.raises(InputError) as exact:
        load_dataset(path)
    assert [str(p) for p in native.value.problems] == [str(p) for p in exact.value.problems]
    assert f"{path}:{expected}" in [str(p) for p in native.value.problems]


def test_a_panic_of_the_native_parser_takes_the_exact_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Rust panic reaches Python as a BaseException (pyo3's PanicException): the
    document is read the exact way, not a traceback."""

    class PanicException(BaseException):
        pass

    def panic(*args: object, **kwargs: object) -> object:
        raise PanicException("explicit panic")

    monkeypatch.setattr("yaml_rs.loads", panic)
    text = "name: t\ncases:\n  - id: a\n    x: 1\n"
    assert not _agrees(text)
    assert quick_data(text).data["cases"] == [{"id": "a", "x": 1}]
