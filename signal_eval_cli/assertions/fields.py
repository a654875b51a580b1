"""The fields the built-in types share: options classes to derive from, annotated types.

``DEFS`` are the shared ``$defs`` of ``schemas/assertions.schema.json``; ``Pattern``,
``Payload``, ``StatePath`` and ``Value`` refer to them. ``Notes`` is what every trace
assertion may carry; ``Bounds``, ``Exact`` and ``Counted`` are the bounds of a count.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, TypedDict

from signal_eval_cli.assertions.options import Field, Options

DEFS: dict[str, Any] = {
    "pattern": {
        "type": "string",
        "minLength": 1,
        "description": "Signal-name glob: * = any run without ':', ** = anything.",
    },
    "path": {
        "type": "string",
        "description": 'Dot path with [n] indexes, e.g. files[0].path; "" is the whole state.',
    },
    "payload": {
        "type": "object",
        "description": "Partial match: deep subset; matcher objects allowed at any depth.",
    },
    "value": {
        "description": "A literal (partial match for objects) or a matcher such as {gte: 0.7}.",
    },
}

PATTERN: dict[str, Any] = {"$ref": "#/$defs/pattern"}
NAME: dict[str, Any] = {"type": "string", "minLength": 1}

Pattern = Annotated[str, PATTERN]
"""A signal-name glob."""
Payload = Annotated[Mapping[str, Any], {"$ref": "#/$defs/payload"}]
"""A partial-match pattern of a payload."""
StatePath = Annotated[str, {"$ref": "#/$defs/path"}]
"""A dot path into the state."""
Value = Annotated[Any, {"$ref": "#/$defs/value"}]
"""A literal or a matcher."""
Name = Annotated[str, Field(minLength=1)]
"""A non-empty name (an agent's, a tool's)."""
Count = Annotated[int, Field(minimum=0)]


class Notes(Options, total=False):
    """What every trace assertion may carry besides its fields: a description and a note."""

    description: Annotated[str, Field(description="What the assertion checks, in words.")]
    note: Annotated[str, Field(description="A remark for readers; not checked.")]


class Bounds(TypedDict, total=False):
    """``min``/``max`` of a count."""

    min: Annotated[Count, Field(description="At least this many.")]
    max: Annotated[Count, Field(description="At most this many.")]


class Exact(TypedDict, total=False):
    exact: Annotated[Count, Field(description="Exactly this many (instead of min and max).")]


class Counted(Bounds, Exact, total=False):
    """``min``/``max``/``exact`` of a count (``count``: the same as ``exact``)."""

    count: Annotated[Count, Field(description="The same as exact.")]
