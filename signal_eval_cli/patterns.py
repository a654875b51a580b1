"""Signal-name globs, value matchers and partial payload matching.

All pure functions. Globs and regexes are compiled once and cached, so the
same pattern used by a thousand cases costs one compilation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

__all__ = [
    "MATCHER_KEYS",
    "compile_glob",
    "compile_regex",
    "get_path",
    "is_matcher",
    "match_value",
    "parse_path",
    "set_path",
    "values_equal",
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

_PATH_TOKEN = re.compile(r"\[(-?\d+)\]|\[[\"']([^\"']*)[\"']\]|([^.\[\]]+)|(\.)")


@lru_cache(maxsize=4096)
def parse_path(path: str) -> tuple[str | int, ...]:
    """``a.b[0].c`` → ``("a", "b", 0, "c")``; ``["x.y"]`` quotes a key with dots."""
    tokens: list[str | int] = []
    pos = 0
    while pos < len(path):
        found = _PATH_TOKEN.match(path, pos)
        if found is None:
            raise ValueError(f"invalid path {path!r} at character {pos + 1}")
        index, quoted, key, _dot = found.groups()
        if index is not None:
            tokens.append(int(index))
        elif quoted is not None:
            tokens.append(quoted)
        elif key is not None:
            tokens.append(key)
        pos = found.end()
    if not tokens:
        raise ValueError("a path must not be empty")
    return tuple(tokens)


def get_path(value: Any, path: str) -> tuple[bool, Any]:
    """Follow ``path`` into nested dicts/lists: ``(found, value)``.

    A numeric segment after a dot (``files.0``) indexes a list too.
    """
    for token in parse_path(path):
        if isinstance(value, Mapping):
            key = str(token)
            if key not in value:
                return False, None
            value = value[key]
        elif isinstance(value, list) and _as_index(token, len(value)) is not None:
            value = value[_as_index(token, len(value))]  # type: ignore[index]
        else:
            return False, None
    return True, value


def set_path(value: Any, path: str, new: Any) -> Any:
    """Return a copy of ``value`` with ``path`` set to ``new``; containers on the way are copied."""
    return _set(value, parse_path(path), new)


def _set(value: Any, tokens: tuple[str | int, ...], new: Any) -> Any:
    if not tokens:
        return new
    head, rest = tokens[0], tokens[1:]
    if isinstance(value, list):
        index = _as_index(head, len(value))
        if index is not None:
            copy = list(value)
            copy[index] = _set(value[index], rest, new)
            return copy
        if str(head) == str(len(value)):  # one past the end appends, as in JavaScript
            return [*value, _set(None, rest, new)]
    result = dict(value) if isinstance(value, Mapping) else {}
    result[str(head)] = _set(result.get(str(head)), rest, new)
    return result


def _as_index(token: str | int, length: int) -> int | None:
    if isinstance(token, str):
        if not token.lstrip("-").isdigit():
            return None
        token = int(token)
    index = token + length if token < 0 else token
    return index if 0 <= index < length else None


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
    """
    if is_matcher(expected):
        return all(_MATCHERS[key](actual, operand) for key, operand in expected.items())
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            key in actual and match_value(value, actual[key]) for key, value in expected.items()
        )
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(actual, (list, tuple))
            and len(expected) == len(actual)
            and all(match_value(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return values_equal(expected, actual)


def matcher_problems(expected: Any, where: str = "") -> list[tuple[str, str]]:
    """Check matcher operands ahead of time: ``[(json_path_suffix, message)]``.

    Used by the loader so a bad regex or a ``between`` without two numbers is a
    load error with its location, not a failure at evaluation time.
    """
    problems: list[tuple[str, str]] = []
    if is_matcher(expected):
        for key, operand in expected.items():
            message = _operand_problem(key, operand)
            if message:
                problems.append((f"{where}/{key}", message))
    elif isinstance(expected, Mapping):
        for key, value in expected.items():
            problems.extend(matcher_problems(value, f"{where}/{key}"))
    elif isinstance(expected, (list, tuple)):
        for i, value in enumerate(expected):
            problems.extend(matcher_problems(value, f"{where}/{i}"))
    return problems


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
