"""Bounds on what an input file may hold, so a small hostile file cannot hang us or
exhaust memory, and strict JSON parsing that reports a breach as ``line:col``.

The README's "Limits" section states these numbers; a file that passes one is refused
with exit 2 and a located message, never a traceback.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any

from signal_eval_cli.errors import MAX_SUGGEST_LENGTH, EvalError

__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_SUGGEST_LENGTH",
    "OUT_OF_RANGE",
    "JsonProblem",
    "loads_json",
    "no_finite_number",
    "too_deep_at",
]

MAX_DEPTH = 100  # nested lists/mappings; realistic files stay under 20
MAX_ALIAS_NODES = 100_000  # values YAML aliases may add when expanded (the "billion laughs")
MAX_INT_DIGITS = 4300  # Python's own bound on int <-> str conversion
OUT_OF_RANGE = f"out of range (a number is at most ±{sys.float_info.max:.1e})"
"""Why ``1e400`` is no number, in JSON or YAML: a float of it is infinite."""

_WORDS_FOR_NONE = ("inf", "infinity", "nan")


def no_finite_number(text: str) -> str:
    """Why ``text``, which reads as a float that is not finite, is no number a file can
    hold, whichever way it is spelled: a word for none (YAML's ``.inf``, ``-.Inf``,
    ``.NaN``; ``inf`` or ``Infinity``, which YAML 1.1 reads as text), or a number past
    the largest a float holds (``1e400``, ``1.0e+400``, ``.5e+400``): out of range.
    The one rule YAML's loader and its hint for a number read as text share."""
    if text.strip().lstrip("+-").removeprefix(".").lower() in _WORDS_FOR_NONE:
        return (
            f"{text} is not a finite number: JSON and the schemas have none "
            "(for no bound, leave the bound out)"
        )
    return f"{text} is {OUT_OF_RANGE}"


class JsonProblem(EvalError, ValueError):
    """Invalid or out-of-bounds JSON, at a 1-based line and column."""

    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.line, self.column, self.message = line, column, message


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def too_deep_at(text: str, limit: int = MAX_DEPTH) -> tuple[int, int] | None:
    """``(line, column)`` where JSON ``text`` first nests deeper than ``limit``, if it does."""
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return _line_col(text, match.start())
        elif token in "]}":
            depth -= 1
    return None


def _line_col(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number: write a finite number or null")


def _parse_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"integer of {len(digits)} digits (at most {MAX_INT_DIGITS})")
    return int(digits)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(no_finite_number(text))
    return value


def loads_json(
    text: str,
    *,
    check_depth: bool = True,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
) -> Any:
    """``json.loads`` that refuses NaN/Infinity, huge numbers and deep nesting with a
    :class:`JsonProblem` (1-based line and column) instead of an arbitrary exception.

    ``check_depth=False`` skips the walk that bounds nesting to :data:`MAX_DEPTH` (for
    large result files, which only the parser's own recursion bound protects)."""
    try:
        try:
            data = _decode(text, _int_parser(), object_pairs_hook)
        except json.JSONDecodeError:
            raise
        except ValueError:  # json's own int may have refused one: say it our way
            data = _decode(text, _parse_int, object_pairs_hook)
    except json.JSONDecodeError as exc:
        raise JsonProblem(exc.lineno, exc.colno, f"invalid JSON: {exc.msg}") from None
    except RecursionError:
        where = too_deep_at(text) or (1, 1)
        raise JsonProblem(*where, f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # from the parse hooks: json gives no position, find it
        raise JsonProblem(*_value_position(text, str(exc)), str(exc)) from None
    if check_depth and _deeper_than(data, MAX_DEPTH):
        where = too_deep_at(text) or (1, 1)
        raise JsonProblem(*where, f"nested deeper than {MAX_DEPTH} levels")
    return data


def _decode(
    text: str,
    parse_int: Callable[[str], int] | None,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
) -> Any:
    return json.loads(
        text,
        parse_constant=_no_constant,
        parse_int=parse_int,
        parse_float=_parse_float,
        object_pairs_hook=object_pairs_hook,
    )


def _int_parser() -> Callable[[str], int] | None:
    """json's own int (None: in C) where the interpreter bounds int-from-text conversion
    at most as tightly as we do, so that it refuses a longer number itself: a hook per
    number costs a large results file about a third of its parse. Else our hook."""
    bound = getattr(sys, "get_int_max_str_digits", lambda: 0)()
    return None if 0 < bound <= MAX_INT_DIGITS else _parse_int


def _value_position(text: str, message: str) -> tuple[int, int]:
    """Where the offending token of a parse-hook error stands (best effort)."""
    for pattern in (r"\bNaN\b|-?\bInfinity\b", rf"-?\d{{{MAX_INT_DIGITS + 1},}}", r"\d[eE]\d"):
        match = re.search(pattern, text)
        if match:
            return _line_col(text, match.start())
    return 1, 1


_SCALARS = frozenset((str, int, float, bool, type(None)))


def _deeper_than(data: Any, limit: int) -> bool:
    """True when ``data`` nests deeper than ``limit``: a level of values at a time (no
    recursion, and no loop in Python over a mapping's values: a large document holds
    millions). Most values are scalars, each told by its type alone."""
    level = [data]
    for _ in range(limit):
        below: list[Any] = []
        extend = below.extend
        for value in level:
            kind = type(value)
            if kind in _SCALARS:
                continue
            if kind is dict or isinstance(value, dict):
                extend(value.values())
            elif kind is list or isinstance(value, list):
                extend(value)
        if not below:
            return False
        level = below
    return any(isinstance(value, (dict, list)) for value in level)
