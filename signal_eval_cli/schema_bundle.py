"""Self-contained copies of the JSON Schemas, for tools that cannot fetch ``$ref`` URLs.

The sources in ``signal_eval_cli/schemas`` refer to each other by relative URL
(``"$ref": "trace.schema.json"``), which resolves against their ``$id`` on
``https://signal-eval.dev`` — a URL a validator would have to fetch. A bundled
schema embeds every schema it refers to (transitively) under ``$defs``, each keeping
its ``$id`` (JSON Schema 2020-12 bundling), so the same ``$ref`` resolves inside the
file, offline, with a plain ``jsonschema.validate(data, schema)`` or Ajv.
``python -m signal_eval_cli.schema_bundle DIR`` writes them (the repo's ``schemas/``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from signal_eval_cli.schema_check import SCHEMA_DIR

__all__ = ["bundle", "bundled_text", "write_bundles"]


def _external_refs(node: Any) -> Iterator[str]:
    """File names of the other schemas ``node`` refers to."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            yield ref.split("#", 1)[0]
        for value in node.values():
            yield from _external_refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _external_refs(value)


def _load(file_name: str, source: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((source / file_name).read_text(encoding="utf-8"))
    return data


def bundle(name: str, source: Path = SCHEMA_DIR) -> dict[str, Any]:
    """``<name>.schema.json`` with every schema it reaches embedded under ``$defs``."""
    root = _load(f"{name}.schema.json", source)
    embedded: dict[str, Any] = {}
    pending = list(_external_refs(root))
    while pending:
        file_name = pending.pop(0)
        if file_name in embedded or file_name == f"{name}.schema.json":
            continue
        embedded[file_name] = _load(file_name, source)
        pending.extend(_external_refs(embedded[file_name]))
    if not embedded:
        return root
    defs = dict(root.get("$defs") or {})
    for file_name, schema in sorted(embedded.items()):
        inner = {k: v for k, v in schema.items() if k != "$schema"}
        defs[file_name] = inner
    return {**root, "$defs": defs}


def bundled_text(name: str, source: Path = SCHEMA_DIR) -> str:
    return json.dumps(bundle(name, source), indent=2, ensure_ascii=False) + "\n"


def write_bundles(target: Path, source: Path = SCHEMA_DIR) -> list[Path]:
    """Write every bundled schema into ``target``; the paths written, sorted.

    A schema is written after those it refers to: written over ``source`` itself, a
    bundle then embeds the others as they are now, not as they were (one run is enough)."""
    written = []
    for file_name in _referred_first(sorted(f.name for f in source.glob("*.schema.json")), source):
        path = target / file_name
        path.write_text(bundled_text(file_name.removesuffix(".schema.json"), source), "utf-8")
        written.append(path)
    return sorted(written)


def _referred_first(file_names: list[str], source: Path) -> list[str]:
    """``file_names``, each after the schemas it refers to (depth first)."""
    order: list[str] = []
    seen: set[str] = set()

    def visit(file_name: str) -> None:
        if file_name in seen or file_name not in file_names:
            return
        seen.add(file_name)
        for ref in _external_refs(_load(file_name, source)):
            visit(ref)
        order.append(file_name)

    for file_name in file_names:
        visit(file_name)
    return order


if __name__ == "__main__":
    for path in write_bundles(Path(sys.argv[1] if len(sys.argv) > 1 else "schemas")):
        print(path)
