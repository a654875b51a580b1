"""The assertion types' JSON Schema, generated from the registry.

``schemas/assertions.schema.json`` (every trace assertion type) and the pattern
assertions of ``schemas/scenario.schema.json`` are written from each type's ``schema=``
by ``python -m signal_eval_cli.assertions.schema [DIR]``, which also re-bundles the
schemas that embed them; a test fails when the committed files drift. The loader
validates a dataset naming a plugin's type against :func:`assertions_schema` of the
registry as it then is.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from signal_eval_cli.assertions.fields import DEFS
from signal_eval_cli.assertions.registry import AssertionType, definitions
from signal_eval_cli.schema_check import SCHEMA_DIR, schema_documents

__all__ = [
    "ASSERTIONS_ID",
    "assertions_schema",
    "current_text",
    "definition",
    "generated_texts",
    "write_schemas",
]

ASSERTIONS_ID = "https://signal-eval.dev/schemas/assertions.schema.json"


def definition(kind: AssertionType) -> dict[str, Any]:
    """The ``$defs`` entry of one type: a mapping with ``type: <name>`` and its fields."""
    const = {"type": {"const": kind.name}}
    about = {"description": kind.doc} if kind.doc else {}
    if kind.schema is None:  # registered without fields: any are accepted
        return {"type": "object", **about, "required": ["type"], "properties": const}
    out: dict[str, Any] = {
        "type": "object",
        **about,
        "additionalProperties": False,
        "required": ["type", *kind.schema.get("required", ())],
    }
    for key, value in kind.schema.items():
        if key != "required":
            out[key] = {**const, **value} if key == "properties" else value
    out.setdefault("properties", const)
    return out


def dispatch(names: Iterable[str]) -> dict[str, Any]:
    """A mapping whose ``type`` is one of ``names``, checked against that type's entry."""
    names = list(names)
    return {
        "type": "object",
        "required": ["type"],
        "properties": {"type": {"enum": names}},
        "allOf": [
            {
                "if": {"properties": {"type": {"const": name}}, "required": ["type"]},
                "then": {"$ref": f"#/$defs/{name}"},
            }
            for name in names
        ],
    }


def assertions_schema() -> dict[str, Any]:
    """``assertions.schema.json`` for every trace assertion type registered now."""
    kinds = [kind for kind in definitions().values() if not kind.workspace]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": ASSERTIONS_ID,
        "title": "signal-eval assertions",
        "description": "Every assertion type with its exact fields. One $defs entry per type; "
        "`assertion` dispatches on `type`.",
        "$ref": "#/$defs/assertion",
        "$defs": {
            **DEFS,
            "assertion": dispatch(kind.name for kind in kinds),
            **{kind.name: definition(kind) for kind in kinds},
        },
    }


def current_text() -> str:
    """The generated assertions and scenario schemas, as a JSON list: what the loader
    validates a document naming a plugin's type against (see
    :func:`.schema_check.schema_documents`); computed again only after a type registered."""
    return _text_of(tuple(definitions()))


@cache
def _text_of(names: tuple[str, ...]) -> str:  # what is registered, in order: the version
    scenario = _with_pattern_assertions(schema_documents()["scenario.schema.json"])
    return json.dumps([assertions_schema(), scenario])


def _with_pattern_assertions(scenario: dict[str, Any]) -> dict[str, Any]:
    """``scenario`` (its schema) with the ``patternAssertion`` entries of the registry's
    workspace types (in place of the old ones, where they stood)."""
    kinds = [kind for kind in definitions().values() if kind.workspace]
    defs = dict(scenario["$defs"])
    defs["patternAssertion"] = dispatch(kind.name for kind in kinds)
    for kind in kinds:
        defs[kind.name] = definition(kind)
    return {**scenario, "$defs": defs}


def _text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def write_schemas(target: Path = SCHEMA_DIR) -> list[Path]:
    """Write the generated schemas into ``target`` and re-bundle those that embed them."""
    from signal_eval_cli.schema_bundle import write_bundles

    (target / "assertions.schema.json").write_text(_text(assertions_schema()), "utf-8")
    scenario = target / "scenario.schema.json"
    text = _text(_with_pattern_assertions(json.loads(scenario.read_text("utf-8"))))
    scenario.write_text(text, "utf-8")
    return write_bundles(target, target)


def generated_texts(source: Path = SCHEMA_DIR) -> dict[str, str]:
    """What :func:`write_schemas` would write over ``source``: file name → text."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        for file in source.glob("*.schema.json"):
            shutil.copyfile(file, Path(scratch) / file.name)
        return {path.name: path.read_text("utf-8") for path in write_schemas(Path(scratch))}


if __name__ == "__main__":
    for path in write_schemas(Path(sys.argv[1]) if len(sys.argv) > 1 else SCHEMA_DIR):
        print(path)
