"""Saving and loading results: versioned JSON, written atomically.

Layout of a saved file: the top-level object and its object-valued fields are indented,
one key per line, but every element of a list of objects (a case, a scenario, a
regression…) is one compact JSON line, and so is every element of a list of ids::

    {
      "schemaVersion": 1,
      "kind": "dataset",
      ...
      "cases": [
        {"caseId": "a", "kind": "case", "passed": true, ...},
        {"caseId": "b", "kind": "case", "passed": false, ...}
      ]
    }

so a file diffs and greps one case per line, and costs about what compact JSON costs:
for 100,000 cases of bench/compare.py, 69 MB (before the index) instead of 114 MB fully indented, written
in 2.3 s instead of 5.5 s (each line by the C encoder; ``indent`` makes ``json`` use its
pure-Python one), and read and decoded in 0.12 s instead of 0.19 s. An element that
embeds a whole result (a matrix variant's ``result``) is laid out like the top level.

A result with cases also gets, right after them, the sealed case index of
:mod:`signal_eval_cli.case_index`, which ``load_result(path, lean=True)`` reads
instead of decoding every case.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from signal_eval_cli.case_index import INDEX_KEY, build_index, open_sealed, seal
from signal_eval_cli.collector import gc_paused
from signal_eval_cli.errors import InputError, Problem, malformed, shorten, undecodable
from signal_eval_cli.files import atomic_write_bytes, read_input, utf8
from signal_eval_cli.journal import is_journal
from signal_eval_cli.kinds import (
    RESULT_KINDS,
    DocumentKind,
    Result,
    document_kind,
    has_cases,
    register_result_kind,
    result_type,
)
from signal_eval_cli.limits import JsonProblem, loads_json
from signal_eval_cli.redaction import redact_text
from signal_eval_cli.result_check import missing_field_problems, result_problems
from signal_eval_cli.results import RESULT_SCHEMA_VERSION, SignalsPolicy

__all__ = ["load_result", "register_result_kind", "result_to_json", "save_result"]

_INDENT = "  "
_LINE_BREAKS = (("\x85", "\\u0085"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))
_encode_strict = json.JSONEncoder(
    ensure_ascii=False, separators=(", ", ": "), default=str, allow_nan=False
).encode


def _encode(value: Any) -> str:
    """JSON text; NaN and ±Infinity (not JSON) are written as null."""
    try:
        return _encode_strict(value)
    except ValueError:
        return _encode_strict(_finite(value))


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def result_to_json(result: Result, signals: SignalsPolicy = "failed") -> str:
    """``result.to_dict(signals)`` as JSON in the layout described in the module docstring.

    Parses to the same value as ``json.dumps(..., default=str)`` plus, for a result
    with cases, the sealed case index; key order is the order of ``to_dict``.
    """
    return _result_bytes(result, signals).decode()


def _result_bytes(result: Result, signals: SignalsPolicy) -> bytes:
    data = result.to_dict(signals)
    cases = data.get("cases")
    indexed = (
        type(cases) is list
        and bool(cases)
        and all(type(c) is dict and not _holds_result(c) for c in cases)  # one line each
    )
    if indexed:  # the index goes right after the cases
        data = dict(_with_index_after_cases(data))
    out: list[str] = []
    _write_expanded(data, "", 0, out)
    out.append("\n")
    text = redact_text("".join(out))  # before the seal, which must cover what is written
    return seal(text) if indexed else utf8(text)


def _with_index_after_cases(data: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    for key, value in data.items():
        yield key, value
        if key == "cases":
            yield INDEX_KEY, build_index(value)


def _compact(value: Any) -> str:
    text = _encode(value)
    if not text.isascii():  # O(1): CPython knows
        # Characters that some tools (Python's splitlines, editors) take for line breaks
        # can only be inside strings here, where an escape means the same.
        for char, escape in _LINE_BREAKS:
            if char in text:
                text = text.replace(char, escape)
    return text


def _write_expanded(value: Any, indent: str, level: int, out: list[str]) -> None:
    """Objects and lists are laid out down to ``level`` 1 (the fields of the top object or
    of an embedded result, and their fields): one key or element per line. A list element
    is one compact line unless it holds a result; anything deeper is compact."""
    if level > 1:
        out.append(_compact(value))
    elif type(value) is dict and value and all(type(k) is str for k in value):
        inner, below = indent + _INDENT, 1 if _is_result(value) else level + 1
        sep = "{\n"
        for key, item in value.items():
            out += (sep, inner, _compact(key), ": ")
            _write_expanded(item, inner, below, out)
            sep = ",\n"
        out += ("\n", indent, "}")
    elif isinstance(value, (list, tuple)) and value:
        inner = indent + _INDENT
        sep = "[\n"
        for item in value:
            out += (sep, inner)
            if type(item) is dict and _holds_result(item):
                _write_expanded(item, inner, 0, out)
            else:
                out.append(_compact(item))
            sep = ",\n"
        out += ("\n", indent, "]")
    else:
        out.append(_compact(value))


def _holds_result(item: dict[Any, Any]) -> bool:
    """A result (``schemaVersion`` and ``kind``), or an object with one as a field (a
    matrix variant): laid out rather than written on one line."""
    return _is_result(item) or any(type(v) is dict and _is_result(v) for v in item.values())


def _is_result(item: dict[Any, Any]) -> bool:
    return "schemaVersion" in item and "kind" in item


def save_result(result: Result, path: str | Path, *, signals: SignalsPolicy = "failed") -> None:
    """Write ``result.to_dict()`` as JSON; a reader never sees half a file."""
    atomic_write_bytes(path, _result_bytes(result, signals))


def load_result(path: str | Path, *, lean: bool = False) -> Result:
    """Load any saved result (of a kind in :data:`~signal_eval_cli.kinds.RESULT_KINDS`);
    old, foreign or malformed files raise :class:`InputError`.

    ``lean=True`` reads the cases through the file's case index when its seal holds
    (see :mod:`signal_eval_cli.case_index`): a case that failed no assertion then comes
    without its assertions, signals, final state, tags and extra fields — everything
    :func:`~signal_eval_cli.compare.compare` reads is there, in a fraction of the time.

    The cyclic garbage collector is paused meanwhile: parsing and building 100,000
    cases makes millions of small acyclic objects, and CPython's collector would rescan
    them over and over (more than half the load time).
    """
    with gc_paused():
        return _load_result(path, lean)


def _load_result(path: str | Path, lean: bool) -> Result:
    name = str(path)
    try:
        raw = read_input(path)
    except OSError as exc:
        raise InputError(
            [Problem(name, 0, 0, f"cannot read result file: {exc.strerror}")]
        ) from None
    return parse_result(name, raw, lean=lean)


def parse_result(name: str, raw: bytes, *, lean: bool = False) -> Result:
    """The saved result ``raw``, read from ``name`` (see :func:`load_result`): a file read
    once, a pipe's bytes included."""
    if is_journal(raw):  # what a run writes as it goes: said, not "invalid JSON: Extra data"
        results = name.removesuffix(".journal.jsonl") if name.endswith(".journal.jsonl") else ""
        message = (
            "a run's journal (the cases it has finished), not a results file: the run writes "
            f"{results or 'its --output'} when it ends; one that was cut off is finished by "
            "running it again with the same --output and --resume"
        )
        raise InputError([Problem(name, 1, 1, message)])
    sealed = open_sealed(raw) if lean else None
    data = sealed.head if sealed is not None else _parse(name, raw)
    kind, loaded = _type_for(name, data)
    if problems := result_problems(name, raw, data, kind):
        raise InputError(problems)
    try:
        result = loaded.from_dict(data)
    except _MALFORMED as exc:  # a field its reader needs is missing, else a shape it cannot read
        needed = exc.args[0] if type(exc) is KeyError and len(exc.args) == 1 else None
        missing = (
            missing_field_problems(name, raw, data, kind, needed) if isinstance(needed, str) else []
        )
        raise InputError(
            missing or [Problem(name, 1, 1, f"malformed {kind} result: {malformed(exc)}")]
        ) from None
    if sealed is None:
        return result
    if not has_cases(result):  # the kind was edited to one without cases: only the lines tell
        return parse_result(name, raw, lean=False)
    result.cases[:] = sealed.cases  # into the (empty) list the head gave
    return result


# What reading a well-formed JSON file of the wrong shape raises (a field of the wrong
# type, a number out of range, nesting the parser accepted but a reader cannot follow).
_MALFORMED = (KeyError, TypeError, ValueError, AttributeError, OverflowError, RecursionError)


def _parse(name: str, raw: bytes) -> Any:
    try:
        return loads_json(raw.decode("utf-8-sig"), check_depth=False)
    except UnicodeDecodeError as exc:  # at the first byte that is not UTF-8
        raise InputError([undecodable(name, exc, "not a result file: not UTF-8 text")]) from None
    except JsonProblem as exc:
        other = _input_kind(raw)
        if other is not None:  # a dataset given to compare, say: what it is, not its JSON
            message = f"not a result file ({other.name} file): {other.use}"
            raise InputError([Problem(name, 1, 1, message)]) from None
        raise InputError(
            [Problem(name, exc.line, exc.column, f"not a result file: {exc.message}")]
        ) from None


def _input_kind(raw: bytes) -> DocumentKind | None:
    """The kind of input file (YAML) ``raw`` is, if it is one."""
    from signal_eval_cli.loading import parse_yaml

    try:
        data = parse_yaml(raw.decode("utf-8-sig")).data
    except (InputError, UnicodeDecodeError):
        return None
    return document_kind(data) if isinstance(data, Mapping) else None


def _type_for(name: str, data: Any) -> tuple[str, type[Result]]:
    """The class of ``data``'s kind, once its ``schemaVersion`` is one we read."""
    if not isinstance(data, Mapping) or "schemaVersion" not in data:
        raise InputError([Problem(name, 1, 1, "not a signal-eval result file (no schemaVersion)")])
    version = data["schemaVersion"]
    if version != RESULT_SCHEMA_VERSION:
        raise InputError(
            [
                Problem(
                    name,
                    1,
                    1,
                    f"result schemaVersion {version!r} is not supported (this version reads "
                    f"{RESULT_SCHEMA_VERSION}); re-run to regenerate it",
                )
            ]
        )
    # Seed 002's DatasetResult has no kind: a versioned file with cases is one.
    kind = data.get("kind", "dataset" if "cases" in data else None)
    loaded = result_type(kind) if isinstance(kind, str) else None
    if loaded is None:
        what = "no result kind" if kind is None else f"unknown result kind {shorten(repr(kind))}"
        known = ", ".join(sorted(RESULT_KINDS))
        raise InputError([Problem(name, 1, 1, f"{what} (known: {known})")])
    return str(kind), loaded
