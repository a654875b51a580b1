"""Load-time checks of assertions, beyond what their schema says (globs, matchers, bounds).

The conventions every type shares live here: a ``pattern``-like field is a signal-name
glob, ``payload``/``args`` are partial-match patterns, ``value`` may be a matcher,
``min`` is not above ``max``. A type's own checks (a regex that must compile, …) sit
beside its check, as its ``problems``. Each looks only at values of the right type, so
a value the schema already rejected is not reported twice.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from signal_eval_cli.assertions.registry import AssertionType
from signal_eval_cli.patterns import compile_glob, matcher_problems, pattern_problems

__all__ = [
    "Found",
    "JsonPath",
    "assertion_problems",
    "glob_message",
    "located_matchers",
]

JsonPath = tuple[str | int, ...]
Found = tuple[JsonPath, str]
"""A problem's path and message, to be located in a batch."""

GLOB_FIELDS = ("pattern", "afterSignal", "triggerPattern", "signal")
_GLOBS = frozenset(GLOB_FIELDS)
_MATCHED = frozenset(("payload", "args", "value"))


def assertion_problems(
    path: JsonPath, node: Mapping[str, Any], kind: AssertionType
) -> Iterator[Found]:
    """The problems of the assertion ``node`` at ``path``, of the registered type ``kind``
    (a path is made only for a problem: a large dataset has hundreds of thousands of
    assertions, nearly all of them sound; and a field is looked for only when the node
    has a key of its kind, which one pass over its few keys tells)."""
    if not _GLOBS.isdisjoint(node):
        for field in GLOB_FIELDS:
            pattern = node.get(field)
            if isinstance(pattern, str):
                message = glob_message(pattern)
                if message is not None:
                    yield ((*path, field), message)
    if kind.problems is not None:
        for inner, message in kind.problems(node):
            yield ((*path, *inner), message)
    if not _MATCHED.isdisjoint(node):
        for field in ("payload", "args"):
            if field in node:
                found = pattern_problems(node[field])
                if found:
                    yield from located_matchers((*path, field), found)
        if "value" in node:
            found = matcher_problems(node["value"])
            if found:
                yield from located_matchers((*path, "value"), found)
    if "min" in node and "max" in node:
        low, high = node["min"], node["max"]
        if isinstance(low, (int, float)) and isinstance(high, (int, float)) and low > high:
            yield ((*path, "min"), f"min ({low}) is greater than max ({high})")


def located_matchers(path: JsonPath, found: list[tuple[str, str]]) -> Iterator[Found]:
    """``patterns.matcher_problems``' JSON-pointer suffixes as paths under ``path``."""
    for suffix, message in found:
        yield ((*path, *(_token(t) for t in suffix.split("/")[1:])), message)


def _token(text: str) -> str | int:
    return int(text) if text.isdigit() else text


def glob_message(pattern: str) -> str | None:
    """What is wrong with the signal-name glob ``pattern``, if anything."""
    if not pattern:
        return None  # the schema reports an empty pattern
    if not pattern.strip() or pattern != pattern.strip():
        return f"bad pattern {pattern!r}: leading or trailing whitespace"
    if "***" in pattern:
        return f"bad pattern {pattern!r}: '***' is ambiguous; use '**'"
    try:
        compile_glob(pattern)
    except ValueError as exc:
        return f"bad pattern {pattern!r}: {exc}"
    return None
