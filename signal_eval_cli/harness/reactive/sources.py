"""Sources: where an update or an emitted payload takes its value (``text``, ``json``,
``{json: a.b}``, ``{tool: Write, input: file_path}``, ``{state: a.b}``, ``{value: 42}``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from signal_eval_cli.harness.reactive.templates import extract_json
from signal_eval_cli.patterns import get_path
from signal_eval_cli.providers.base import ToolCallRecord

__all__ = ["Reply", "read_source"]


@dataclass(slots=True)
class Reply:
    """What one activation produced, for sources to read (JSON parsed once, lazily)."""

    text: str = ""
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    _json: tuple[bool, Any] | None = None

    @property
    def json(self) -> tuple[bool, Any]:
        if self._json is None:
            self._json = extract_json(self.text)
        return self._json


def read_source(source: Any, reply: Reply, state: Any) -> tuple[bool, Any]:
    """``(found, value)`` of a source (see the module docstring)."""
    if source == "text":
        return True, reply.text
    if source == "json":
        return reply.json
    if "value" in source:
        return True, source["value"]
    found, value = False, None
    if "json" in source:
        found, data = reply.json
        if found and source["json"] not in ("", "."):
            found, value = get_path(data, source["json"])
        else:
            value = data
    elif "state" in source:
        found, value = get_path(state, source["state"])
    elif "tool" in source:
        inputs = [c.input for c in reply.tool_calls if c.name == source["tool"]]
        if source.get("input"):
            picked = [get_path(i, source["input"]) for i in inputs]
            inputs = [v for ok, v in picked if ok]
        if source.get("all"):
            found, value = True, inputs
        elif inputs:
            found, value = True, inputs[-1]
    if not found and "default" in source:
        return True, source["default"]
    return found, value
