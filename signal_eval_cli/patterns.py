"""Signal-name globs, value matchers and partial payload matching.

All pure functions. Globs and regexes are compiled once and cached, so the
same pattern used by a thousand cases costs one compilation.
"""

from __future__ import annotations

import itertools
import math
import operator
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import lru_cache, partial
from typing import Any

__all__ = [
    "MATCHER_KEYS",
    "compile_glob",
    "compile_regex",
    "equal_indices",
    "equal_to",
    "get_path",
    "is_matcher",
    "match_pattern",
    "match_value",
    "matcher_problems",
    "parse_path",
    "pattern_problems",
    "set_path",
    "values_equal",
    "where_equal",
]


# -- globs ---------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """``*`` is any run of characters without ``:`` (also empty), ``**`` is anything.

    The whole name must match, case-sensitively; every other character is literal.
    """
    if not isinstance(pattern, str) or not pattern:
        raise ValueError("a signal pattern must be a non-empty string")
    parts = re.split(r"(\*\*|\*)", pattern)
    body = "".join(
        ".*" if part == "**" else "[^:]*" if part == "*" else re.escape(part) for part in parts
    )
    return re.compile(body, re.DOTALL)


# -- regexes ---------------------------------------------------------------------------

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}
_NO_OP_FLAGS = frozenset("gu")  # JavaScript flags with no meaning for a single search
_JS_NAMED_GROUP = re.compile(r"\(\?<(?![=!])")


@lru_cache(maxsize=4096)
def compile_regex(source: str, flags: str = "") -> re.Pattern[str]:
    """Compile a regex written for JavaScript or Python, with JavaScript-style flags.

    Raises ``ValueError`` naming the problem (bad flag or bad pattern).
    """
    value = 0
    for flag in flags:
        if flag in _FLAGS:
            value |= _FLAGS[flag]
        elif flag not in _NO_OP_FLAGS:
            raise ValueError(f"unknown regex flag {flag!r} (use i, m, s, x, g, u)")
    try:
        return re.compile(_JS_NAMED_GROUP.sub("(?P<", source), value)
    except re.error as exc:
        raise ValueError(f"invalid regex {source!r}: {exc}") from None


def _search(pattern: re.Pattern[str], text: str) -> str | None:
    from signal_eval_cli.regex_budget import search  # a user's regex runs on a time budget

    return search(pattern, text)


# -- paths ---------------------------------------------------------------------------

_BRACKET = re.compile(r"\[([^\[\]]*)\]")
_CANONICAL_INDEX = re.compile(r"0|[1-9][0-9]{0,17}")


@lru_cache(maxsize=4096)
def parse_path(path: str) -> tuple[str, ...]:
    """The keys of a path: ``a.b[0].c`` → ``("a", "b", "0", "c")``; ``""`` → ``()``.

    Every string is a path, so a state key such as ``"["`` can never break anything:
    ``[x]`` means ``.x`` (``a[b]`` is ``a.b``), dots separate keys, and quotes or
    unmatched brackets are ordinary characters of a key.
    """
    if not path:
        return ()
    dotted = _BRACKET.sub(r".\1", path)
    if _BRACKET.match(path):
        dotted = dotted[1:]  # a leading [x] is the first key, not an empty key then x
    return tuple(dotted.split("."))


def _index(key: str, length: int) -> int | None:
    """``key`` as a list index below ``length``: canonical non-negative integers only
    (``0``, ``12``; never ``-1``, ``01`` or ``+1``), as JavaScript reads array keys."""
    if _CANONICAL_INDEX.fullmatch(key) is None:
        return None
    index = int(key)
    return index if index < length else None


def get_path(value: Any, path: str) -> tuple[bool, Any]:
    """Follow ``path`` into nested objects and lists: ``(found, value)``.

    ``files.0`` and ``files[0]`` both index a list; an empty path is ``value`` itself.
    """
    for key in parse_path(path):
        if isinstance(value, Mapping):
            if key not in value:
                return False, None
            value = value[key]
        elif isinstance(value, (list, tuple)) and (index := _index(key, len(value))) is not None:
            value = value[index]
        else:
            return False, None
    return True, value


def set_path(value: Any, path: str, new: Any) -> Any:
    """Return a copy of ``value`` with ``path`` set to ``new``; containers on the way are
    copied, missing ones created as objects; one past the end of a list appends to it."""
    spine: list[tuple[Any, Any]] = []  # (copied container, key or index), top down
    for key in parse_path(path):
        index = _index(key, len(value) + 1) if isinstance(value, list) else None
        if index is not None:
            container: Any = [*value, None] if index == len(value) else list(value)
            spine.append((container, index))
            value = container[index]
        else:
            container = dict(value) if isinstance(value, Mapping) else {}
            spine.append((container, key))
            value = container.get(key)
    for container, slot in reversed(spine):
        container[slot] = new
        new = container
    return new


# -- values ---------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def values_equal(expected: Any, actual: Any) -> bool:
    """Deep equality where booleans never equal numbers (``True != 1``)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if _is_number(expected):
        return _is_number(actual) and expected == actual
    if isinstance(expected, Mapping):
        return (
            isinstance(actual, Mapping)
            and expected.keys() == actual.keys()
            and all(values_equal(v, actual[k]) for k, v in expected.items())
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(expected) == len(actual)
            and all(values_equal(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if expected is None:
        return actual is None
    return bool(type(expected) is type(actual) and expected == actual)


def equal_to(expected: Any) -> Callable[[Any], bool]:
    """``values_equal(expected, ·)`` as one predicate, for comparing one value (an agent
    or tool name) with thousands: a string needs only a type check and ``==``."""
    if type(expected) is str:
        return lambda actual: type(actual) is str and actual == expected
    return partial(values_equal, expected)


def equal_indices(values: Sequence[Any], expected: Any) -> Iterator[int]:
    """Indices of the ``values`` :func:`equal_to` ``expected``, in order, one by one: a
    check that stops at the first reads no further. For a string (an agent's or a tool's
    name, against every activation or call of a long run), ``==`` runs at C speed over
    them and only its hits are checked to be strings; ``in`` first, which stops at the
    first equal value, answers a name that none has (``tool.notCalled``)."""
    if type(expected) is str:
        if expected not in values:
            return iter(())
        hits = itertools.compress(
            itertools.count(), map(operator.eq, values, itertools.repeat(expected))
        )
        return (i for i in hits if type(values[i]) is str)
    same = partial(values_equal, expected)
    return (i for i, value in enumerate(values) if same(value))


def where_equal(values: Sequence[Any], expected: Any) -> list[int]:
    """:func:`equal_indices`, all of them."""
    return list(equal_indices(values, expected))


def _numeric(test: Callable[[float, Any], bool]) -> Callable[[Any, Any], bool]:
    return lambda actual, operand: (
        _is_number(actual) and not math.isnan(actual) and test(actual, operand)
    )


def _contains(actual: Any, operand: Any) -> bool:
    if isinstance(actual, str):
        return isinstance(operand, str) and operand in actual
    if isinstance(actual, (list, tuple)):
        return any(values_equal(operand, item) for item in actual)
    return False


def _string(test: Callable[[str, str], bool]) -> Callable[[Any, Any], bool]:
    return lambda actual, operand: isinstance(actual, str) and test(actual, operand)


_MATCHERS: dict[str, Callable[[Any, Any], bool]] = {
    "gte": _numeric(lambda a, b: a >= b),
    "lte": _numeric(lambda a, b: a <= b),
    "gt": _numeric(lambda a, b: a > b),
    "lt": _numeric(lambda a, b: a < b),
    "between": _numeric(lambda a, b: b[0] <= a <= b[1]),
    "contains": _contains,
    "startsWith": _string(str.startswith),
    "endsWith": _string(str.endswith),
    "matches": _string(lambda a, b: _search(compile_regex(b), a) is not None),
}

MATCHER_KEYS = frozenset(_MATCHERS)


def is_matcher(value: Any) -> bool:
    """A non-empty object whose keys are all matcher names, e.g. ``{gte: 0.7}``."""
    return isinstance(value, Mapping) and bool(value) and all(k in _MATCHERS for k in value)


def match_value(expected: Any, actual: Any) -> bool:
    """Does ``actual`` satisfy ``expected``?

    - a matcher object (``{gte: 1}``, ``{contains: "x"}``, several keys = all) tests the value;
    - an object is a deep subset: every expected key must be present (a missing key
      never equals ``null``) and match;
    - an array matches element by element and must have the same length;
    - scalars compare strictly (booleans never equal numbers).

    Raises ``ValueError`` for a matcher with a bad operand (``between: [1]``).
    """
    if is_matcher(expected):
        for key, operand in expected.items():
            problem = _operand_problem(key, operand)
            if problem:
                raise ValueError(problem)
        return all(_MATCHERS[key](actual, operand) for key, operand in expected.items())
    if isinstance(expected, Mapping):
        return _match_object(expected, actual)
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(expected) == len(actual)
            and all(match_value(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return values_equal(expected, actual)


def _match_object(expected: Mapping[str, Any], actual: Any) -> bool:
    return isinstance(actual, Mapping) and all(
        key in actual and match_value(value, actual[key]) for key, value in expected.items()
    )


def match_pattern(expected: Any, actual: Any) -> bool:
    """Match a ``payload`` or ``args`` pattern: its top level is an object pattern, never
    a matcher (``{contains: a}`` wants a key ``contains`` equal to ``"a"``); matchers
    stand at any depth below. A non-object pattern matches as :func:`match_value`."""
    if isinstance(expected, Mapping):
        return _match_object(expected, actual)
    return match_value(expected, actual)


def matcher_problems(expected: Any, where: str = "") -> list[tuple[str, str]]:
    """Check matcher operands ahead of time: ``[(json_path_suffix, message)]``.

    Used by the loader so a bad regex or a ``between`` without two numbers is a
    load error with its location, not a failure at evaluation time.
    """
    problems: list[tuple[str, str]] = []
    if type(expected) in _SCALARS:  # most values: no matcher, and no ABC check to say so
        return problems
    if is_matcher(expected):
        for key, operand in expected.items():
            message = _operand_problem(key, operand)
            if message:
                problems.append((f"{where}/{key}", message))
    elif isinstance(expected, Mapping):
        for key, value in expected.items():
            if type(value) not in _SCALARS:
                problems.extend(matcher_problems(value, f"{where}/{key}"))
    elif isinstance(expected, (list, tuple)):
        for i, value in enumerate(expected):
            if type(value) not in _SCALARS:
                problems.extend(matcher_problems(value, f"{where}/{i}"))
    return problems


_SCALARS = frozenset((str, int, float, bool, type(None)))


def pattern_problems(expected: Any, where: str = "") -> list[tuple[str, str]]:
    """:func:`matcher_problems` of a ``payload``/``args`` pattern (top level: an object)."""
    if isinstance(expected, Mapping):
        return [
            p
            for k, v in expected.items()
            if type(v) not in _SCALARS
            for p in matcher_problems(v, f"{where}/{k}")
        ]
    return matcher_problems(expected, where)


def _operand_problem(key: str, operand: Any) -> str | None:
    if key in ("gte", "lte", "gt", "lt") and not _is_number(operand):
        return f"'{key}' needs a number, got {operand!r}"
    if key == "between" and not (
        isinstance(operand, list) and len(operand) == 2 and all(map(_is_number, operand))
    ):
        return f"'between' needs [min, max] numbers, got {operand!r}"
    if key in ("startsWith", "endsWith", "matches") and not isinstance(operand, str):
        return f"'{key}' needs a string, got {operand!r}"
    if key == "matches":
        try:
            compile_regex(operand)
        except ValueError as exc:
            return str(exc)
    return None
