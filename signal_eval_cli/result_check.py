"""The types of a results file's fields, checked before it is read.

The readers convert what they find (``bool("false")`` is true), so a results file edited
by hand with ``"passed": "false"`` read as passed, and gated a merge. A file is checked
against the published result schema *relaxed to what the writer may write*: a number may
be ``null`` (NaN and ±Infinity are written so) and may be negative (a harness's
``durationMs``), a field may be missing (older files; the readers have defaults), a key
may be added; what is left are the fields' JSON types and the enumerations. A field of
the wrong type is a located problem (``file:line:col``). The compiled check of
:mod:`.schema_check` vouches for a well-formed file (a 100,000-case file in 0.8-1.1 s, a
fifth of a full load; a lean one checks its head alone); only a file it does not vouch for is
walked by ``jsonschema``.
"""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from typing import Any

from signal_eval_cli.case_index import INDEX_KEY
from signal_eval_cli.errors import Problem, shorten
from signal_eval_cli.loading import (
    Document,
    explain_error,
    schema_problems,
    schema_validator,
)
from signal_eval_cli.schema_check import definition_check, schema_check, schema_documents

__all__ = ["journal_entry_problems", "missing_field_problems", "result_problems"]

_RELAXED = frozenset(
    {"required", "minimum", "maximum", "exclusiveMinimum", "minItems", "minLength",
     "minProperties", "pattern", "unevaluatedProperties"}
)  # fmt: skip
"""Rules of a value, not of its type: the writer may break them (a negative latency)."""
_NUMBERS = frozenset({"number", "integer"})
_WHOLE = frozenset({"goalResult", "trace.schema.json"})
"""Definitions every writer wrote whole and whose readers need what they require (a
goal's name, a signal's): their ``required`` and ``minLength`` hold."""
_KEPT = frozenset({"required", "minLength"})


_NAMED = frozenset({"properties", "$defs", "patternProperties", "dependentSchemas"})
"""Keywords whose value maps names (not keywords) to schemas."""


def _relax(schema: Any, needed: str | None, relaxed: frozenset[str] = _RELAXED) -> Any:
    if isinstance(schema, list):
        return [_relax(item, needed, relaxed) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "required" and needed in value:
            out[key] = [needed]
        elif key in relaxed or (key == "additionalProperties" and value is False):
            continue
        elif key == "if":  # a condition, not a rule: kept as it is
            out[key] = value
        elif key in _NAMED and isinstance(value, dict):
            out[key] = {
                name: _relax(
                    item, needed, _RELAXED - _KEPT if key == "$defs" and name in _WHOLE else relaxed
                )
                for name, item in value.items()
            }
        elif key == "type":
            types = value if isinstance(value, list) else [value]
            out[key] = [*types, "null"] if _NUMBERS & set(types) else value
        else:
            out[key] = _relax(value, needed, relaxed)
    return out


@cache
def _reading_schemas(needed: str | None = None) -> str:
    """The result and trace schemas relaxed, as the ``generated`` stand-ins of
    :func:`.schema_check.schema_documents` (they replace the embedded copies too); with
    ``needed``, that field stays required wherever the schemas require it."""
    documents = schema_documents()
    result = _relax(documents["result.schema.json"], needed)
    trace = _relax(documents["trace.schema.json"], needed, _RELAXED - _KEPT)
    return json.dumps([result, trace])


@cache
def _schema_kinds() -> frozenset[str]:
    return frozenset(schema_documents()["result.schema.json"]["properties"]["kind"]["enum"])


def result_problems(name: str, raw: bytes, data: dict[str, Any], kind: str) -> list[Problem]:
    """The located problems of the field types of ``data``, a result of ``kind`` parsed
    from the file ``name`` whose bytes are ``raw`` (none: it reads as written). A kind
    the schema does not describe (a plugin's) is its reader's to check."""
    if kind not in _schema_kinds():
        return []
    return _problems(name, raw, data, kind, _reading_schemas())


def missing_field_problems(
    name: str, raw: bytes, data: dict[str, Any], kind: str, field: str
) -> list[Problem]:
    """Where ``data`` (as :func:`result_problems` has it) lacks ``field`` that the result
    schema requires there: its reader could not do without the field (it raised
    ``KeyError(field)``). Most required fields have defaults, so the type check leaves
    them out; this names the one that was needed, at the object that lacks it."""
    if kind not in _schema_kinds():
        return []
    return _problems(name, raw, data, kind, _reading_schemas(field))


def _problems(
    name: str, raw: bytes, data: dict[str, Any], kind: str, reading: str
) -> list[Problem]:
    # the index is checked where it is read, if trusted; a file without kind (seed 002)
    # is checked as the kind it is read as
    checked = {key: value for key, value in data.items() if key != INDEX_KEY} | {"kind": kind}
    if schema_check("result", reading)(checked):
        return []
    doc = Document(name, checked, {}, {}, source=raw.decode("utf-8-sig"), syntax="json")
    return schema_problems(doc, "result", reading)


_UNITS = {"dataset": ("caseId", "caseResult"), "matrix": ("caseId", "caseResult")}
"""The id key and the result schema's definition of a journal unit's result, by the
journal's kind (a scenario run's otherwise)."""
_SCENARIO_UNIT = ("id", "scenarioResult")


def journal_entry_problems(
    name: str, number: int, line: bytes, kind: str, entry: dict[str, Any]
) -> list[Problem]:
    """The problems of line ``number`` of the journal ``name`` (a run of ``kind``), which
    holds ``entry``: its ``result`` must not be another unit's, must say whether it
    passed, and be typed as a results file's case (or scenario run) is. Located in the line."""
    result, unit = entry["result"], entry["case"]
    id_key, definition = _UNITS.get(kind, _SCENARIO_UNIT)
    found: list[tuple[tuple[str, ...], str]] = []
    if id_key in result and result[id_key] != unit:
        other, own = shorten(repr(result[id_key])), shorten(repr(unit))
        found.append((("result",), f"its result is {id_key} {other}, not {own}"))
    if "passed" not in result:
        found.append((("result",), "its result has no 'passed'"))
    reading = _reading_schemas()
    typed = definition_check("result", definition, reading)(result)
    if typed and not found:
        return []
    doc = Document(name, entry, {}, {}, source=line.decode("utf-8"), syntax="json")
    problems = doc.problems((path, f"damaged journal entry: {message}") for path, message in found)
    if not typed:
        checker = schema_validator("result", reading).evolve(
            schema={"$ref": f"result.schema.json#/$defs/{definition}"}
        )
        errors = list(checker.iter_errors(result))

        def path_of(error: Any) -> tuple[str | int, ...]:
            return ("result", *error.absolute_path)

        doc.locate(map(path_of, errors))
        problems += [p for error in errors for p in explain_error(doc, error, path_of)]
    return [dataclasses.replace(p, line=number) for p in problems]
