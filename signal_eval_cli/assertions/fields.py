"""JSON Schema fragments the built-in types' fields share (``schema=`` of ``@assertion``).

``DEFS`` are the shared ``$defs`` of ``schemas/assertions.schema.json``; the others are
property schemas a family spreads into its types' ``properties``.
"""

from __future__ import annotations

from typing import Any

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
PAYLOAD: dict[str, Any] = {"$ref": "#/$defs/payload"}
PATH: dict[str, Any] = {"$ref": "#/$defs/path"}
VALUE: dict[str, Any] = {"$ref": "#/$defs/value"}
NAME: dict[str, Any] = {"type": "string", "minLength": 1}

NOTES: dict[str, Any] = {"description": {"type": "string"}, "note": {"type": "string"}}
"""What every trace assertion may carry besides its fields: a description and a note."""

_COUNT = {"type": "integer", "minimum": 0}
BOUNDS: dict[str, Any] = {"min": _COUNT, "max": _COUNT}
EXACT: dict[str, Any] = {"exact": _COUNT}
COUNT: dict[str, Any] = {**BOUNDS, **EXACT, "count": _COUNT}
"""``min``/``max``/``exact`` (``count``: the same as ``exact``) of a count."""
