"""The assertions in a document: where they sit, and what the loader asks of them.

A document (dataset, result, matrix, …) holds assertions at any depth; the loader
validates each against its type. What it needs of the registry is here: the checks a
schema cannot express (:func:`document_problems`) and the schema of types the committed
one does not know (:func:`plugin_schema`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from functools import cache
from typing import Any

from signal_eval_cli.assertions.problems import Found, JsonPath, assertion_problems
from signal_eval_cli.assertions.registry import definitions, is_builtin, resolve
from signal_eval_cli.assertions.schema import current_text
from signal_eval_cli.schema_check import schema_documents

__all__ = ["assertion_nodes", "document_problems", "plugin_schema"]


_CONTAINERS = frozenset((dict, list))


def assertion_nodes(data: Any, path: JsonPath = ()) -> Iterator[tuple[JsonPath, Mapping[str, Any]]]:
    """Every mapping with a string ``type`` under an ``assertions``-like list, recursively
    (in document order). A dataset may hold millions of containers, all parsed as plain
    dicts and lists: a loop over the containers that may hold an assertion only, not
    over a list of none (``map(type, ...)`` tells, without a loop in Python)."""
    stack: list[tuple[Any, JsonPath]] = [(data, path)]
    pop, push, leaf = stack.pop, stack.append, _CONTAINERS.isdisjoint
    while stack:
        node, where = pop()
        if type(node) is dict:
            if (
                where
                and isinstance(node.get("type"), str)
                and (isinstance(where[-1], int) or where[-1] == "assertion")
            ):
                yield where, node
            if leaf(map(type, node.values())):
                continue
            for key, value in reversed(node.items()):
                if type(value) is dict or (type(value) is list and not leaf(map(type, value))):
                    push((value, (*where, key)))
        elif type(node) is list:
            for i in range(len(node) - 1, -1, -1):
                value = node[i]
                if type(value) is dict or (type(value) is list and not leaf(map(type, value))):
                    push((value, (*where, i)))


def document_problems(
    data: Any, mappings: Iterable[Mapping[str, Any]] | None = None
) -> Iterator[Found]:
    """Checks a schema cannot express, of every assertion in ``data`` of a registered type
    (each type's own, and the conventions they share: see :mod:`.problems`); a scenario's
    pattern assertions are its own loader's. ``mappings``, every mapping in ``data``
    (:attr:`.loading.Document.mappings`), saves the walk that finds the assertions and
    their paths when none of them has a problem, as in nearly every document."""
    types = definitions()
    if mappings is not None and not _any_problem(mappings, types):
        return
    for path, node in assertion_nodes(data):
        kind = types.get(node["type"])
        if kind is not None and not kind.workspace:
            yield from assertion_problems(path, node, kind)


def _any_problem(mappings: Iterable[Mapping[str, Any]], types: Mapping[str, Any]) -> bool:
    """Whether any of ``mappings`` with a registered type has a problem as an assertion:
    they hold every assertion :func:`assertion_nodes` finds, and more (the top level, a
    mapping under another key), so False means the document has none; True only sends
    the caller the walk, which tells. A check that raises on a mapping is True too."""
    try:
        for node in mappings:
            name = node.get("type")
            kind = types.get(name) if isinstance(name, str) else None
            if kind is None or kind.workspace:
                continue
            if next(assertion_problems((), node, kind), None) is not None:
                return True
    except Exception:  # the walk asks again of the assertions only
        return True
    return False


@cache
def _committed_types() -> frozenset[str]:
    """The types the committed assertions schema knows: the built-in ones."""
    schema = schema_documents()["assertions.schema.json"]
    return frozenset(schema["$defs"]["assertion"]["properties"]["type"]["enum"])


def plugin_schema(data: Any) -> str | None:
    """The schemas to validate ``data`` against when it names an assertion type the
    committed ones do not know: generated from the registry (plugins loaded) when that
    holds types beyond the built-in ones (a plugin's, ``@assertion`` from Python); else
    None."""
    named = {node["type"] for _, node in assertion_nodes(data)} - _committed_types()
    if not named or all(is_builtin(kind) for kind in resolve(named).values()):
        return None
    return current_text()
