"""A fast yes/no check of a document against one of our JSON Schemas.

``jsonschema`` walks the schema anew for every value and tries each of the
assertions' 39 ``if``/``then`` branches on every assertion: minutes for a
100,000-case dataset. :func:`schema_check` compiles a schema once into nested
closures, and turns the ``allOf`` of ``if type is X then ...`` branches into a
lookup by ``type``. It only ever answers "certainly valid": a keyword it does not
know, or a value it is not sure of (``1.0`` for an integer), answers False, and the
caller then asks ``jsonschema`` for the located, worded problems. So the two can
disagree only in the slow direction.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin

__all__ = [
    "SCHEMA_DIR",
    "Check",
    "definition_check",
    "failing_items",
    "schema_check",
    "schema_documents",
]

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"

Check = Callable[[Any], bool]

_ANNOTATIONS = {"$schema", "$id", "$defs", "$comment", "title", "description", "default"}
_OBJECT = {"type", "properties", "required", "additionalProperties"}
"""The keywords of a plain object schema, checked in one (see ``_Compiler._object``)."""
_NUMBER = (int, float)


def _never(_: Any) -> bool:
    return False


def _always(_: Any) -> bool:
    return True


def _is_number(value: Any) -> bool:
    return type(value) is int or type(value) is float


_JSON_TYPES: dict[str, frozenset[type]] = {
    "object": frozenset((dict,)),
    "array": frozenset((list,)),
    "string": frozenset((str,)),
    "integer": frozenset((int,)),
    "number": frozenset((int, float)),
    "boolean": frozenset((bool,)),
    "null": frozenset((type(None),)),
}
"""The exact Python types of each JSON type, as parsed (``bool`` is no integer)."""


@cache
def schema_documents(generated: str | None = None) -> dict[str, Any]:
    """Every schema file's contents, by file name.

    With ``generated`` (a JSON list of schemas generated with plugins' assertion types),
    each of those stands in for the file with its ``$id`` and for every copy of it that
    another schema embeds."""
    documents = {
        file.name: json.loads(file.read_text(encoding="utf-8"))
        for file in sorted(SCHEMA_DIR.glob("*.schema.json"))
    }
    if generated is None:
        return documents
    replacements = {schema["$id"]: schema for schema in json.loads(generated)}

    def swap(node: Any, embedded: bool) -> Any:
        if isinstance(node, dict):
            if node.get("$id") in replacements:
                node = replacements[node["$id"]]
                if embedded:  # as the bundles embed a schema: without its $schema
                    node = {key: value for key, value in node.items() if key != "$schema"}
            return {key: swap(value, True) for key, value in node.items()}
        if isinstance(node, list):
            return [swap(value, True) for value in node]
        return node

    return {name: swap(document, False) for name, document in documents.items()}


@cache
def _resources(generated: str | None = None) -> dict[str, Any]:
    """Every schema and embedded schema, by its absolute ``$id``."""
    found: dict[str, Any] = {}

    def collect(node: Any, base: str) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("$id"), str):
                base = urljoin(base, node["$id"])
                found[base] = node
            for value in node.values():
                collect(value, base)
        elif isinstance(node, list):
            for value in node:
                collect(value, base)

    for name, document in schema_documents(generated).items():
        collect(document, (SCHEMA_DIR / name).as_uri())
    return found


def _resolve(ref: str, base: str, generated: str | None) -> tuple[Any, str]:
    """The subschema ``ref`` points at from a schema whose ``$id`` is ``base``."""
    url, fragment = urldefrag(urljoin(base, ref))
    node = _resources(generated)[url]
    for token in filter(None, fragment.split("/")):
        token = token.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node, url


class _Compiler:
    def __init__(self, generated: str | None = None) -> None:
        self.done: dict[tuple[int, str], Check] = {}
        self.generated = generated

    def compile(self, schema: Any, base: str) -> Check:
        if schema is True or schema == {}:
            return _always
        if schema is False or not isinstance(schema, dict):
            return _never
        if isinstance(schema.get("$id"), str):
            base = urljoin(base, schema["$id"])
        memo = (id(schema), base)
        if memo not in self.done:  # a recursive $ref meets the slot, filled below
            slot: list[Check] = []
            self.done[memo] = lambda v: slot[0](v)
            slot.append(self._compile(schema, base))
            self.done[memo] = slot[0]
        return self.done[memo]

    def _compile(self, schema: dict[str, Any], base: str) -> Check:
        checks: list[Check] = []
        done = _ANNOTATIONS | {"then", "else"}  # (an `if`'s branches: see _if)
        if schema.get("type") == "object":
            checks.append(self._object(schema, base))
            done |= _OBJECT
        for keyword, rule in schema.items():
            if keyword in done:
                continue
            build = getattr(self, "_" + keyword.replace("$", "dollar_"), None)
            if build is None:
                return _never  # a keyword this compiler does not know: let jsonschema decide
            checks.append(build(rule, schema, base))
        if not checks:
            return _always
        return _all_of(checks)

    def _dollar_ref(self, ref: str, schema: Any, base: str) -> Check:
        # the target's own check, no wrapper per value: a recursive ref meets the
        # target's slot (see compile)
        return self.compile(*_resolve(ref, base, self.generated))

    def _type(self, rule: Any, schema: Any, base: str) -> Check:
        names = rule if isinstance(rule, list) else [rule]
        # one set lookup, not a check per name (``["number", "null"]`` on every metric)
        allowed = frozenset(t for n in names for t in _JSON_TYPES.get(n, ()))
        if len(allowed) == 1:
            (only,) = allowed
            return lambda v: type(v) is only
        return lambda v: type(v) in allowed

    def _const(self, rule: Any, schema: Any, base: str) -> Check:
        return self._enum([rule], schema, base)

    def _enum(self, rule: list[Any], schema: Any, base: str) -> Check:
        if all(type(r) is str for r in rule):
            allowed = frozenset(rule)
            return lambda v: type(v) is str and v in allowed
        scalars = [(type(r), r) for r in rule if r is None or type(r) in (str, bool, int, float)]
        if len(scalars) < len(rule):
            return _never  # a list or mapping constant: jsonschema decides
        return lambda v: any(type(v) is t and v == r for t, r in scalars)

    def _required(self, rule: list[str], schema: Any, base: str) -> Check:
        keys = tuple(rule)

        def check(v: Any) -> bool:
            if type(v) is dict:
                for key in keys:
                    if key not in v:
                        return False
            return True

        return check

    def _object(self, schema: dict[str, Any], base: str) -> Check:
        """A mapping's ``type``, ``required`` and ``properties`` (the shape of nearly
        every object schema) in one check: one call per mapping, not four."""
        keys = tuple(schema.get("required", ()))
        return self._mapping(schema.get("properties", {}), schema, base, keys, others=False)

    def _properties(self, rule: dict[str, Any], schema: Any, base: str) -> Check:
        return self._mapping(rule, schema, base)

    def _mapping(
        self,
        rule: dict[str, Any],
        schema: Any,
        base: str,
        required: tuple[str, ...] = (),
        *,
        others: bool = True,
    ) -> Check:
        """A mapping with every ``required`` key, each value held to its property's check
        (``rule``) or to that of any other key (``additionalProperties``; false: no other
        key); a value that is no mapping passes if ``others``."""
        props = {k: self.compile(s, base) for k, s in rule.items()}
        extra = schema.get("additionalProperties", True)
        other: Check | None
        if extra is False:
            other = None
        elif extra is True or extra == {}:
            other = _always
        else:
            other = self.compile(extra, base)

        def check(v: Any) -> bool:
            if type(v) is not dict:
                return others
            for key in required:
                if key not in v:
                    return False
            for key, value in v.items():
                prop = props.get(key, other)
                if prop is None or not prop(value):
                    return False
            return True

        return check

    def _additionalProperties(self, rule: Any, schema: Any, base: str) -> Check:
        if "properties" in schema:
            return _always  # checked with the properties
        return self._properties({}, schema, base)

    def _items(self, rule: Any, schema: Any, base: str) -> Check:
        item = self.compile(rule, base)

        def check(v: Any) -> bool:
            if type(v) is list:
                for x in v:
                    if not item(x):
                        return False
            return True

        return check

    def _minItems(self, rule: int, schema: Any, base: str) -> Check:
        return lambda v: type(v) is not list or len(v) >= rule

    def _minLength(self, rule: int, schema: Any, base: str) -> Check:
        return lambda v: type(v) is not str or len(v) >= rule

    def _minProperties(self, rule: int, schema: Any, base: str) -> Check:
        return lambda v: type(v) is not dict or len(v) >= rule

    def _pattern(self, rule: str, schema: Any, base: str) -> Check:
        search = re.compile(rule).search
        return lambda v: type(v) is not str or search(v) is not None

    def _minimum(self, rule: float, schema: Any, base: str) -> Check:
        return lambda v: not _is_number(v) or v >= rule

    def _maximum(self, rule: float, schema: Any, base: str) -> Check:
        return lambda v: not _is_number(v) or v <= rule

    def _exclusiveMinimum(self, rule: float, schema: Any, base: str) -> Check:
        return lambda v: not _is_number(v) or v > rule

    def _not(self, rule: Any, schema: Any, base: str) -> Check:
        if not _exact(rule):
            return _never
        inner = self.compile(rule, base)
        return lambda v: not inner(v)

    def _anyOf(self, rule: list[Any], schema: Any, base: str) -> Check:
        checks = [self.compile(s, base) for s in rule]
        return lambda v: any(c(v) for c in checks)

    def _oneOf(self, rule: list[Any], schema: Any, base: str) -> Check:
        if not all(_exact(s) for s in rule):
            return _never  # "exactly one" needs every branch's answer to be exact
        checks = [self.compile(s, base) for s in rule]
        return lambda v: sum(1 for c in checks if c(v)) == 1

    def _if(self, rule: Any, schema: Any, base: str) -> Check:
        if not _exact(rule):
            return _never  # an unsure condition: either branch could apply
        condition = self.compile(rule, base)
        then = self.compile(schema.get("then", True), base)
        otherwise = self.compile(schema.get("else", True), base)
        return lambda v: then(v) if condition(v) else otherwise(v)

    def _allOf(self, rule: list[Any], schema: Any, base: str) -> Check:
        by_type: dict[str, Check] = {}
        rest: list[Any] = []
        for branch in rule:
            label = _type_branch(branch)
            if label is None:
                rest.append(branch)
            else:
                by_type[label] = self.compile(branch["then"], base)
        general = _all_of([self.compile(s, base) for s in rule])
        others = _all_of([self.compile(s, base) for s in rest])

        def check(v: Any) -> bool:
            if type(v) is not dict:  # a branch's `if` holds vacuously: try them all
                return general(v)
            label = v.get("type")
            branch = by_type.get(label) if type(label) is str else None
            return (branch is None or branch(v)) and others(v)

        def typed(v: Any) -> bool:  # the same, with no branch but by type
            if type(v) is not dict:
                return general(v)
            label = v.get("type")
            branch = by_type.get(label) if type(label) is str else None
            return branch is None or branch(v)

        return check if rest else typed


def _all_of(checks: list[Check]) -> Check:
    """One check for a list of them (plain loops: a generator per value costs more than
    most checks)."""
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)
    frozen = tuple(checks)

    def check(v: Any) -> bool:
        for c in frozen:  # noqa: SIM110 - all() would make a generator per value
            if not c(v):
                return False
        return True

    return check


def _type_branch(branch: Any) -> str | None:
    """``X`` for ``{"if": {"properties": {"type": {"const": X}}, "required": ["type"]},
    "then": ...}`` (no ``else``): the branch applies to a mapping exactly when its
    ``type`` is the string X."""
    if not isinstance(branch, dict) or set(branch) != {"if", "then"}:
        return None
    condition = branch["if"]
    if condition.keys() != {"properties", "required"} or condition["required"] != ["type"]:
        return None
    props = condition["properties"]
    const = props.get("type", {}).get("const") if props.keys() == {"type"} else None
    return const if isinstance(const, str) and props["type"].keys() == {"const"} else None


_EXACT_TYPES = {"string", "object", "array", "boolean", "null"}  # not 1.0 as an integer


def _exact(schema: Any) -> bool:
    """True when this compiler's answer for ``schema`` is jsonschema's, no and yes alike
    (so it may sit under ``not``, in an ``if`` or a ``oneOf``)."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or not schema.keys() <= {
        "type",
        "const",
        "enum",
        "required",
        "properties",
        "description",
    }:
        return False
    types = schema.get("type", "string")
    if not set(types if isinstance(types, list) else [types]) <= _EXACT_TYPES:
        return False
    constants = [*schema.get("enum", []), *([schema["const"]] if "const" in schema else [])]
    if not all(isinstance(c, str) for c in constants):
        return False
    return all(_exact(s) for s in schema.get("properties", {}).values())


@cache
def _root(name: str, generated: str | None = None) -> tuple[Any, str]:
    file = f"{name}.schema.json"
    root = schema_documents(generated)[file]
    base = urljoin((SCHEMA_DIR / file).as_uri(), root.get("$id", ""))
    return _resources(generated).get(base, root), base


@cache
def schema_check(name: str, generated: str | None = None) -> Check:
    """True only when ``data`` is certainly valid against ``schemas/<name>.schema.json``
    (with ``generated``: see :func:`schema_documents`)."""
    return _Compiler(generated).compile(*_root(name, generated))


@cache
def definition_check(name: str, definition: str, generated: str | None = None) -> Check:
    """:func:`schema_check` for ``#/$defs/<definition>`` of ``schemas/<name>.schema.json``."""
    root, base = _root(name, generated)
    return _Compiler(generated).compile(root["$defs"][definition], base)


@cache
def _item_checks(name: str, generated: str | None = None) -> dict[str, Check]:
    """The top-level lists of ``name`` whose schema says nothing of the list as a whole
    (``{"type": "array", "items": ...}``): a check for one item of each. Found in the
    root's properties and in those of the schemas it applies to the whole document
    (``$ref``, ``allOf``, an ``if``'s ``then``/``else``: a result's ``cases``); an item
    is vouched for when every one of its key's item schemas vouches for it."""
    root, base = _root(name, generated)
    compiler = _Compiler(generated)
    found: dict[str, list[Check]] = {}
    seen: set[int] = set()

    def visit(schema: Any, base: str) -> None:
        if not isinstance(schema, dict) or id(schema) in seen:
            return
        seen.add(id(schema))
        if isinstance(schema.get("$id"), str):
            base = urljoin(base, schema["$id"])
        for key, prop in schema.get("properties", {}).items():
            plain = (
                isinstance(prop, dict) and prop.keys() <= {"type", "items", "description"}
                and prop.get("type") == "array" and "items" in prop
            )  # fmt: skip
            found.setdefault(key, []).append(
                compiler.compile(prop["items"], base) if plain else _never
            )
        for branch in [*schema.get("allOf", []), schema.get("then"), schema.get("else")]:
            visit(branch, base)
        if isinstance(schema.get("$ref"), str):
            visit(*_resolve(schema["$ref"], base, generated))

    visit(root, base)
    return {key: _all_of(checks) for key, checks in found.items() if _never not in checks}


def failing_items(
    name: str, data: Any, generated: str | None = None
) -> tuple[Any, dict[str, list[int]]]:
    """``data`` with each top-level list of items kept to the items this check does not
    vouch for, and their indices in the original lists.

    jsonschema takes milliseconds per case: one bad case of 100,000 would cost minutes
    if it walked them all. The list as a whole has no rule of its own, so the problems
    of the shortened document are the original's, at the mapped indices."""
    if type(data) is not dict:
        return data, {}
    narrowed = dict(data)
    kept: dict[str, list[int]] = {}
    for key, check in _item_checks(name, generated).items():
        items = data.get(key)
        if type(items) is list:
            kept[key] = [i for i, item in enumerate(items) if not check(item)]
            narrowed[key] = [items[i] for i in kept[key]]
    return narrowed, kept
