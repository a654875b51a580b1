"""Globs, value matchers, partial payload match and paths (patterns.py).

Property tests compare against independent reference implementations written
here, never against the regex construction under test.
"""

from __future__ import annotations

import math
import re
from functools import cache
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from signal_eval_cli.patterns import (
    compile_glob,
    compile_regex,
    equal_indices,
    equal_to,
    get_path,
    is_matcher,
    match_value,
    parse_path,
    set_path,
    values_equal,
    where_equal,
)

PROPS = settings(max_examples=150, deadline=None)


def glob(pattern: str, name: str) -> bool:
    return compile_glob(pattern).fullmatch(name) is not None


# -- globs: examples ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "name", "expected"),
    [
        ("agent:*", "agent:activated", True),
        ("agent:*", "agent:", True),  # `*` may be empty
        ("agent:*", "agent:a:b", False),  # `*` never crosses `:`
        ("agent:*", "agent", False),
        ("agent:*", "xagent:a", False),  # whole name
        ("agent:*", "agent:aX", True),
        ("tool:**", "tool:call", True),
        ("tool:**", "tool:a:b:c", True),
        ("tool:**", "tool:", True),
        ("tool:**", "tool", False),
        ("**", "anything:at:all", True),
        ("**:changed", "state:a:b:changed", True),
        ("state:*:changed", "state:user:changed", True),
        ("state:*:changed", "state:user.name:changed", True),
        ("state:*:changed", "state:a:b:changed", False),
        ("*:complete", "review:complete", True),
        ("*:complete", "a:review:complete", False),
        ("*", "harness", True),
        ("*", "harness:start", False),
        ("harness:start", "harness:start", True),
        ("harness:start", "harness:start2", False),
        ("harness:start", "pre-harness:start", False),
        ("Agent:*", "agent:activated", False),  # case-sensitive
        ("agent:*", "AGENT:activated", False),
        ("error.*", "error.foo", True),  # `.` is literal, `*` still a wildcard after it
        ("error.*", "errorXfoo", False),
        ("error.*", "error", False),
        ("a.b", "aXb", False),
        ("a.b", "a.b", True),
        ("what?", "what?", True),
        ("what?", "what", False),
        ("what?", "whatX", False),
        ("[ab]", "[ab]", True),
        ("[ab]", "a", False),
        ("a+", "aa", False),
        ("a+", "a+", True),
        ("(x|y)", "x", False),
        ("(x|y)", "(x|y)", True),
        ("^a$", "^a$", True),
        ("a{2}", "a{2}", True),
        ("a{2}", "aa", False),
        ("back\\slash", "back\\slash", True),
        ("***", "a:b", True),
        ("a*b*c", "aXXbYYc", True),
        ("a*b*c", "aX:bc", False),
        ("a**c", "a:b:c", True),
    ],
)
def test_glob_examples(pattern: str, name: str, expected: bool) -> None:
    assert glob(pattern, name) is expected


@pytest.mark.parametrize("bad", ["", None, 3])
def test_glob_rejects_empty_or_non_string(bad: Any) -> None:
    with pytest.raises(ValueError):
        compile_glob(bad)


# -- globs: properties against an independent recursive matcher -------------------------

ANY, SEG = object(), object()


def tokens(pattern: str) -> tuple[Any, ...]:
    out: list[Any] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(ANY)
            i += 2
        elif pattern[i] == "*":
            out.append(SEG)
            i += 1
        else:
            out.append(pattern[i])
            i += 1
    return tuple(out)


def reference_glob(pattern: str, name: str) -> bool:
    toks = tokens(pattern)

    @cache
    def match(i: int, j: int) -> bool:
        if i == len(toks):
            return j == len(name)
        tok = toks[i]
        if tok is ANY:
            return any(match(i + 1, k) for k in range(j, len(name) + 1))
        if tok is SEG:
            k = j
            while True:
                if match(i + 1, k):
                    return True
                if k == len(name) or name[k] == ":":
                    return False
                k += 1
        return j < len(name) and name[j] == tok and match(i + 1, j + 1)

    return match(0, 0)


GLOB_CHARS = "ab:.?[]()+$^|\\{}-A"
patterns_st = st.text(alphabet=GLOB_CHARS + "**", min_size=1, max_size=10)
names_st = st.text(alphabet=GLOB_CHARS + "*\n", max_size=12)


@PROPS
@given(patterns_st, names_st)
def test_glob_agrees_with_reference(pattern: str, name: str) -> None:
    assert glob(pattern, name) == reference_glob(pattern, name)


@st.composite
def pattern_and_matching_name(draw: st.DrawFn) -> tuple[str, str]:
    pattern = draw(patterns_st)
    parts = []
    for tok in tokens(pattern):
        if tok is ANY:
            parts.append(draw(st.text(alphabet="ab:.x", max_size=5)))
        elif tok is SEG:
            parts.append(draw(st.text(alphabet="ab.x?[", max_size=5)))
        else:
            parts.append(tok)
    return pattern, "".join(parts)


@PROPS
@given(pattern_and_matching_name())
def test_glob_matches_names_built_from_it(case: tuple[str, str]) -> None:
    pattern, name = case
    assert reference_glob(pattern, name)
    assert glob(pattern, name)


@PROPS
@given(st.text(alphabet=GLOB_CHARS, min_size=1, max_size=10), names_st)
def test_glob_without_star_is_literal_whole_name(pattern: str, name: str) -> None:
    assert glob(pattern, pattern)
    assert glob(pattern, name) == (name == pattern)
    assert not glob(pattern, "x" + pattern)
    assert not glob(pattern, pattern + "x")


@PROPS
@given(
    st.text(alphabet="ab.", max_size=4),
    st.text(alphabet="ab.", max_size=4),
    st.text(alphabet="ab.", max_size=4),
    st.text(alphabet="ab.", max_size=4),
)
def test_single_star_never_crosses_colon(pre: str, left: str, right: str, post: str) -> None:
    pattern = f"{pre}*{post}"
    assert glob(pattern, f"{pre}{left}{right}{post}")
    assert not glob(pattern, f"{pre}{left}:{right}{post}")
    assert glob(f"{pre}**{post}", f"{pre}{left}:{right}{post}")


@PROPS
@given(st.text(alphabet="abcXYZ:", min_size=1, max_size=10))
def test_glob_is_case_sensitive(name: str) -> None:
    assume(name.swapcase() != name)
    assert glob(name, name)
    assert not glob(name, name.swapcase())


@PROPS
@given(names_st)
def test_double_star_matches_anything(name: str) -> None:
    assert glob("**", name)


# -- regexes -------------------------------------------------------------------------


def test_compile_regex_flags_and_js_named_groups() -> None:
    assert compile_regex("sql", "i").search("SQL injection")
    assert not compile_regex("sql").search("SQL injection")
    assert compile_regex("^b", "m").search("a\nb")
    assert compile_regex("a.b", "s").search("a\nb")
    assert compile_regex("x", "gu").search("x")
    found = compile_regex(r"(?<word>\w+)!").search("hey!")
    assert found and found.group("word") == "hey"


@pytest.mark.parametrize(("source", "flags"), [("(", ""), ("[a-", ""), ("a", "q")])
def test_compile_regex_errors_are_value_errors(source: str, flags: str) -> None:
    with pytest.raises(ValueError):
        compile_regex(source, flags)


# -- paths ---------------------------------------------------------------------------


def test_parse_path() -> None:
    assert parse_path("analysis.confidence") == ("analysis", "confidence")
    assert parse_path("files[0].path") == ("files", "0", "path")
    assert parse_path("a[-1]") == ("a", "-1")
    assert parse_path('a["b"]') == ("a", '"b"')  # quotes are part of the key
    assert parse_path("[0].a") == ("0", "a")
    assert parse_path("") == ()  # the whole state
    assert parse_path("[") == ("[",) and parse_path("a[b") == ("a[b",)


def test_get_path() -> None:
    state = {"files": [{"path": "a.py"}, {"path": "b.py"}], "n": None, "x.y": 1}
    assert get_path(state, "files[1].path") == (True, "b.py")
    assert get_path(state, "files.0.path") == (True, "a.py")
    assert get_path(state, "files[-1].path") == (False, None)  # no negative indexing
    assert get_path(state, "n") == (True, None)  # null exists
    assert get_path(state, "files[2]") == (False, None)
    assert get_path(state, "missing.deep") == (False, None)
    assert get_path(state, "n.deeper") == (False, None)
    assert get_path(state, "") == (True, state)
    assert get_path("text", "length") == (False, None)
    assert get_path(None, "a") == (False, None)


def test_set_path_copies_and_creates() -> None:
    state = {"a": {"b": 1}, "l": [1, 2]}
    new = set_path(state, "a.c", 2)
    assert new == {"a": {"b": 1, "c": 2}, "l": [1, 2]}
    assert state == {"a": {"b": 1}, "l": [1, 2]}  # untouched
    assert set_path(state, "l[1]", 9)["l"] == [1, 9]
    assert set_path(None, "x.y", 1) == {"x": {"y": 1}}
    assert set_path({"a": 5}, "a.b", 1) == {"a": {"b": 1}}


def test_set_path_one_past_the_end_appends_to_a_list() -> None:
    state = {"files": ["a.py", "b.py"]}
    assert set_path(state, "files.2", "c.py") == {"files": ["a.py", "b.py", "c.py"]}
    assert set_path(state, "files[2].path", "c.py") == {"files": ["a.py", "b.py", {"path": "c.py"}]}
    assert set_path({"files": []}, "files[0]", 1) == {"files": [1]}
    assert state == {"files": ["a.py", "b.py"]}


# -- value equality and matchers --------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "actual", "equal"),
    [
        (1, 1, True),
        (1, 1.0, True),
        (True, True, True),
        (True, 1, False),
        (1, True, False),
        (False, 0, False),
        (0, False, False),
        (None, None, True),
        (None, False, False),
        (None, 0, False),
        ("1", 1, False),
        ([1, 2], [1, 2], True),
        ([1, 2], [1, 2, 3], False),
        ([True], [1], False),
        ({"a": 1}, {"a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),  # equality is not partial
        ({"a": 1}, {"a": True}, False),
    ],
)
def test_values_equal(expected: Any, actual: Any, equal: bool) -> None:
    assert values_equal(expected, actual) is equal


# (matcher, actual, passes)
MATCHER_CASES = [
    ({"gte": 0.7}, 0.7, True),
    ({"gte": 0.7}, 0.69, False),
    ({"gte": 1}, True, False),
    ({"gte": 0}, "1", False),
    ({"lte": 5}, 5, True),
    ({"lte": 5}, 5.01, False),
    ({"lte": 1}, False, False),
    ({"gt": 3}, 4, True),
    ({"gt": 3}, 3, False),
    ({"gt": 0}, True, False),
    ({"lt": 3}, 2.5, True),
    ({"lt": 3}, 3, False),
    ({"lt": 1}, False, False),
    ({"between": [1, 3]}, 1, True),
    ({"between": [1, 3]}, 3, True),
    ({"between": [1, 3]}, 2.2, True),
    ({"between": [1, 3]}, 3.01, False),
    ({"between": [1, 3]}, 0, False),
    ({"between": [0, 1]}, True, False),
    ({"between": [0, 1]}, None, False),
    ({"gte": 0}, math.nan, False),
    ({"contains": "inj"}, "SQL injection", True),
    ({"contains": "INJ"}, "SQL injection", False),  # case-sensitive
    ({"contains": "x"}, "abc", False),
    ({"contains": "sqli"}, ["sqli", "xss"], True),  # membership
    ({"contains": "sql"}, ["sqli", "xss"], False),  # not substring of an element
    ({"contains": 2}, [1, 2, 3], True),
    ({"contains": 1}, [True], False),
    ({"contains": True}, [1], False),
    ({"contains": {"a": 1}}, [{"a": 1}], True),
    ({"contains": "a"}, {"a": 1}, False),
    ({"contains": "1"}, 1, False),
    ({"startsWith": "SQL"}, "SQL injection", True),
    ({"startsWith": "injection"}, "SQL injection", False),
    ({"startsWith": "1"}, 12, False),
    ({"endsWith": "tion"}, "SQL injection", True),
    ({"endsWith": "SQL"}, "SQL injection", False),
    ({"endsWith": "2"}, 12, False),
    ({"matches": "SQL.*inj"}, "SQL injection", True),
    ({"matches": "inj"}, "SQL injection", True),  # unanchored search
    ({"matches": "^inj"}, "SQL injection", False),
    ({"matches": "\\d+"}, 123, False),  # strings only
    ({"gte": 1, "lte": 5}, 3, True),  # several keys: all must hold
    ({"gte": 1, "lte": 5}, 6, False),
]


@pytest.mark.parametrize(("matcher", "actual", "ok"), MATCHER_CASES)
def test_matcher(matcher: dict[str, Any], actual: Any, ok: bool) -> None:
    assert is_matcher(matcher)
    assert match_value(matcher, actual) is ok


def test_is_matcher() -> None:
    assert not is_matcher({})
    assert not is_matcher({"gte": 1, "agent": "x"})
    assert not is_matcher([{"gte": 1}])
    assert not is_matcher("gte")


def test_partial_match_examples() -> None:
    actual = {"agent": "reviewer", "meta": {"score": 0.9, "tags": ["a", "b"]}, "n": None}
    assert match_value({"agent": "reviewer"}, actual)
    assert match_value({}, actual)
    assert match_value({"meta": {"score": {"gte": 0.5}}}, actual)
    assert match_value({"meta": {"tags": ["a", {"startsWith": "b"}]}}, actual)
    assert match_value({"meta": {"tags": {"contains": "b"}}}, actual)
    assert match_value({"n": None}, actual)
    assert not match_value({"missing": None}, actual)  # a missing key never equals null
    assert not match_value({"meta": {"tags": ["a"]}}, actual)  # arrays: equal length
    assert not match_value({"meta": {"tags": ["b", "a"]}}, actual)  # element by element
    assert not match_value({"meta": {"score": {"gte": 0.95}}}, actual)
    assert not match_value({"agent": "reviewer"}, None)
    assert not match_value({}, "text")
    assert not match_value({"a": 1}, {"a": True})
    assert not match_value({"a": True}, {"a": 1})
    assert not match_value({"a": 0}, {"a": False})
    assert not match_value({"a": False}, {"a": 0})
    deep = {"a": [{"b": {"c": [1, {"d": "deep value"}]}}]}
    assert match_value({"a": [{"b": {"c": [{"lt": 2}, {"d": {"matches": "v.l"}}]}}]}, deep)
    assert not match_value({"a": [{"b": {"c": [{"lt": 1}, {"d": {"matches": "v.l"}}]}}]}, deep)


# -- matcher properties -----------------------------------------------------------------

finite = st.one_of(
    st.integers(-1000, 1000), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
)


@PROPS
@given(finite, finite, finite)
def test_between_is_inclusive_range(a: float, b: float, x: float) -> None:
    assert match_value({"between": [a, b]}, x) == (a <= x <= b)


@PROPS
@given(finite, finite)
def test_numeric_matchers_are_complementary(bound: float, x: float) -> None:
    assert match_value({"gte": bound}, x) != match_value({"lt": bound}, x)
    assert match_value({"gt": bound}, x) != match_value({"lte": bound}, x)
    assert match_value({"gte": bound}, x) == (x >= bound)
    assert match_value({"gt": bound}, x) == (x > bound)


@PROPS
@given(st.booleans(), finite, finite)
def test_booleans_never_match_numeric_matchers(flag: bool, a: float, b: float) -> None:
    for key in ("gte", "lte", "gt", "lt"):
        assert not match_value({key: a}, flag)
    assert not match_value({"between": [min(a, b), max(a, b)]}, flag)
    assert not match_value(int(flag), flag)
    assert not match_value(flag, int(flag))
    assert not match_value(float(flag), flag)


@PROPS
@given(st.text(max_size=8), st.text(max_size=20))
def test_string_matchers_agree_with_str_methods(operand: str, text: str) -> None:
    assert match_value({"contains": operand}, text) == (operand in text)
    assert match_value({"startsWith": operand}, text) == text.startswith(operand)
    assert match_value({"endsWith": operand}, text) == text.endswith(operand)
    assert match_value({"matches": re.escape(operand)}, text) == (operand in text)


@PROPS
@given(st.lists(st.integers(0, 5), max_size=6), st.integers(0, 5))
def test_contains_on_arrays_is_membership(items: list[int], x: int) -> None:
    assert match_value({"contains": x}, items) == (x in items)


# -- partial payload match properties -------------------------------------------------

# keys never spell a matcher name, so a generated object is never read as a matcher
keys = st.text(alphabet="abcxyz", min_size=1, max_size=3)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(-5, 5, allow_nan=False),
    st.text(alphabet="abc", max_size=3),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(keys, children, max_size=3)
    ),
    max_leaves=12,
)
objects = st.dictionaries(keys, json_values, max_size=4)


@st.composite
def deep_subset(draw: st.DrawFn, value: Any) -> Any:
    """Drop any keys at any depth; arrays keep their length."""
    if isinstance(value, dict):
        kept = draw(st.lists(st.sampled_from(sorted(value)), unique=True)) if value else []
        return {k: draw(deep_subset(value[k])) for k in kept}
    if isinstance(value, list):
        return [draw(deep_subset(item)) for item in value]
    return value


def family(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def leaf_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in leaf_paths(v, (*prefix, k))]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in leaf_paths(v, (*prefix, i))]
    return [prefix]


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: replaced(value[head], rest, new)}
    copy = list(value)
    copy[head] = replaced(value[head], rest, new)
    return copy


OTHER_TYPED = {
    "null": [False, 0, "", [], {"a": None}],
    "bool": [None, 0, 1, "true", []],
    "number": [None, True, False, "1", [1]],
    "str": [None, 0, True, ["a"], {"a": "a"}],
}


@PROPS
@given(json_values)
def test_value_matches_itself(value: Any) -> None:
    assert match_value(value, value)


@PROPS
@given(st.data(), objects)
def test_any_deep_subset_matches(data: st.DataObject, value: dict[str, Any]) -> None:
    assert match_value(data.draw(deep_subset(value)), value)


@PROPS
@given(st.data(), objects, keys, json_values)
def test_adding_an_absent_key_fails(
    data: st.DataObject, value: dict[str, Any], key: str, extra: Any
) -> None:
    assume(key not in value)
    expected = data.draw(deep_subset(value))
    assert not match_value({**expected, key: extra}, value)
    # and at depth: inside any nested object of the value
    for k, v in value.items():
        if isinstance(v, dict) and key not in v:
            assert not match_value({k: {**v, key: extra}}, value)


@PROPS
@given(st.data(), objects)
def test_changing_a_leaf_to_another_type_fails(data: st.DataObject, value: dict[str, Any]) -> None:
    paths = [p for p in leaf_paths(value) if p]
    assume(paths)
    path = data.draw(st.sampled_from(paths))
    leaf = value
    for step in path:
        leaf = leaf[step]
    new = data.draw(st.sampled_from(OTHER_TYPED[family(leaf)]))
    assert family(new) != family(leaf)
    assert not match_value(replaced(value, path, new), value)


class _Name(str):
    """A str subclass: values_equal compares types exactly, so equal_to must too."""


@pytest.mark.parametrize(
    "expected", ["Edit", "Read", "5", 5, 5.0, True, None, {"a": 1}, ["Edit"], "Missing"]
)
def test_equal_to_is_values_equal_as_one_predicate(expected: object) -> None:
    candidates = ["Edit", "5", 5, 5.0, 1, True, False, None, {"a": 1}, ["Edit"], _Name("Edit")]
    candidates.append(_Name("Read"))  # equal to "Read" (as ``in`` sees it), yet no str
    same = equal_to(expected)
    assert [same(c) for c in candidates] == [values_equal(expected, c) for c in candidates]
    hits = [i for i, c in enumerate(candidates) if values_equal(expected, c)]
    assert where_equal(candidates, expected) == list(equal_indices(candidates, expected)) == hits
