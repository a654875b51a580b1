"""Typed options: an assertion type's fields as a ``TypedDict``, its JSON Schema derived.

A check takes its options class (``def check(a: TextOptions, ctx) -> Outcome``), so a
type checker sees every field it reads; at run time the assertion is the same plain dict
(a ``TypedDict`` costs nothing). The registry derives the type's schema from the class
(:func:`options_schema`): a field is required when the class says so (``Required``,
``NotRequired``, ``total``); its schema comes from its annotation — ``str``, ``bool``,
``int``, ``float``, ``Any``, a mapping, ``list[...]``, ``Literal[...]``, a union of those,
a nested ``TypedDict`` — refined by ``Annotated`` metadata: :class:`Field` adds JSON Schema
keywords (``minLength``, ``description``, …), a plain dict is the field's schema as
written (a ``$ref`` to a shared definition, a form no annotation says). A field nothing
maps is an error when the type registers, naming it.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, TypedDict, Union, get_args, get_origin

try:
    from typing import NotRequired, Required, get_type_hints
except ImportError:  # pragma: no cover - 3.10: the backports (declared for it in pyproject)
    from typing_extensions import NotRequired, Required, get_type_hints

__all__ = ["Field", "NotRequired", "Options", "Required", "field_schema", "options_schema"]


class Options(TypedDict):
    """What every assertion has: its ``type`` (the schema's ``const``). Options classes
    derive from it; a class without ``type`` is accepted too."""

    type: str


class Field:
    """JSON Schema keywords a field's annotation cannot say:
    ``Annotated[str, Field(minLength=1, description="...")]``."""

    __slots__ = ("keywords",)

    def __init__(self, **keywords: Any) -> None:
        self.keywords = keywords


def options_schema(options: type[Any]) -> dict[str, Any]:
    """``{"required": [...], "properties": {...}}`` of an options class, ``type`` left out
    (the registry adds it). Raises ``TypeError`` naming a field no schema maps."""
    try:
        return _fields(options, skip="type")
    except TypeError as exc:
        raise TypeError(f"{exc}; annotate it Annotated[..., {{<its JSON Schema>}}]") from None


def _fields(options: type[Any], skip: str | None = None) -> dict[str, Any]:
    hints = get_type_hints(options, include_extras=True)
    required = set(getattr(options, "__required_keys__", hints))
    properties: dict[str, Any] = {}
    for name, hint in hints.items():
        origin = get_origin(hint)
        if origin is Required or origin is NotRequired:
            (hint,) = get_args(hint)
            (required.add if origin is Required else required.discard)(name)
        if name == skip:
            continue
        try:
            properties[name] = field_schema(hint)
        except TypeError as exc:
            raise TypeError(f"{options.__qualname__}.{name}: {exc}") from None
    wanted = [name for name in properties if name in required]
    return {"required": wanted, "properties": properties} if wanted else {"properties": properties}


_SIMPLE: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    Any: {},
}


def field_schema(hint: Any) -> dict[str, Any]:
    """The JSON Schema of one field's annotation (see the module's docstring)."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        written = [meta for meta in hint.__metadata__ if isinstance(meta, Mapping)]
        schema = dict(written[-1]) if written else field_schema(args[0])
        for meta in hint.__metadata__:
            if isinstance(meta, Field):
                schema.update(meta.keywords)
        return schema
    if hint is Any or (isinstance(hint, type) and hint in _SIMPLE):
        return dict(_SIMPLE[hint])
    if origin is Literal:
        return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
    if origin in (list, Sequence):
        return {"type": "array", "items": field_schema(args[0])}
    if hint in (dict, Mapping) or origin in (dict, Mapping):
        return {"type": "object"}
    if origin is Union or origin is types.UnionType:
        kinds = [field_schema(arg) for arg in args]
        if all(list(kind) == ["type"] for kind in kinds):
            return {"type": [kind["type"] for kind in kinds]}
    if typing.is_typeddict(hint):
        return {"type": "object", "additionalProperties": False, **_fields(hint)}
    raise TypeError(f"no JSON Schema for {getattr(hint, '__name__', hint)!r}")
