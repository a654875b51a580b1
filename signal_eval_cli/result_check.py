"""The types of a results file's fields, checked before it is read.

The readers convert what they find (``bool("false")`` is true), so a results file edited
by hand with ``"passed": "false"`` read as passed, and gated a merge. A file is checked
against the published result schema *relaxed to what the writer may write*: a number may
be ``null`` (NaN and ±Infinity are written so) and may be negative (a harness's
``durationMs``), a field may be missing (older files; the readers have defaults), a key
may be added; what is left are the fields' JSON types and the enumerations. A field of
the wrong type is a located problem (``file:line:col``). The compiled check of
:mod:`.schema_check` vouches for a well-formed file (a 100,000-case file in about a tenth
of its load time); only a file it does not vouch for is walked by ``jsonschema``.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from signal_eval_cli.case_index import INDEX_KEY
from signal_eval_cli.errors import Problem
from signal_eval_cli.loading import Document, schema_problems
from signal_eval_cli.schema_check import schema_check, schema_documents

__all__ = ["result_problems"]

_RELAXED = frozenset(
    {"required", "minimum", "maximum", "exclusiveMinimum", "minItems", "minLength",
     "minProperties", "pattern", "unevaluatedProperties"}
)  # fmt: skip
"""Rules of a value, not of its type: the writer may break them (a negative latency)."""
_NUMBERS = frozenset({"number", "integer"})


_NAMED = frozenset({"properties", "$defs", "patternProperties", "dependentSchemas"})
"""Keywords whose value maps names (not keywords) to schemas."""


def _relax(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_relax(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _RELAXED or (key == "additionalProperties" and value is False):
            continue
        if key == "if":  # a condition, not a rule: kept as it is
            out[key] = value
        elif key in _NAMED and isinstance(value, dict):
            out[key] = {name: _relax(item) for name, item in value.items()}
        elif key == "type":
            types = value if isinstance(value, list) else [value]
            out[key] = [*types, "null"] if _NUMBERS & set(types) else value
        else:
            out[key] = _relax(value)
    return out


@cache
def _reading_schemas() -> str:
    """The result and trace schemas relaxed, as the ``generated`` stand-ins of
    :func:`.schema_check.schema_documents` (they replace the embedded copies too)."""
    documents = schema_documents()
    return json.dumps([_relax(documents[f"{n}.schema.json"]) for n in ("result", "trace")])


@cache
def _schema_kinds() -> frozenset[str]:
    return frozenset(schema_documents()["result.schema.json"]["properties"]["kind"]["enum"])


def result_problems(name: str, raw: bytes, data: dict[str, Any], kind: str) -> list[Problem]:
    """The located problems of the field types of ``data``, a result of ``kind`` parsed
    from the file ``name`` whose bytes are ``raw`` (none: it reads as written). A kind
    the schema does not describe (a plugin's) is its reader's to check."""
    if kind not in _schema_kinds():
        return []
    # the index is checked where it is read, if trusted; a file without kind (seed 002)
    # is checked as the kind it is read as
    checked = {key: value for key, value in data.items() if key != INDEX_KEY} | {"kind": kind}
    reading = _reading_schemas()
    if schema_check("result", reading)(checked):
        return []
    doc = Document(name, checked, {}, {}, source=raw.decode("utf-8"))
    return schema_problems(doc, "result", reading)
