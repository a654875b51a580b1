"""OpenInference's flattened chat messages, as the chat messages GenAI spans carry.

OpenInference instrumentations (Arize Phoenix: ``openinference-instrumentation-openai``,
``-langchain``, ...) write each message of an ``LLM`` span as indexed attributes:
``llm.input_messages.<i>.message.role`` / ``.content`` / ``.tool_call_id``, its text parts
as ``.contents.<j>.message_content.text``, and each tool call it requests as
``.tool_calls.<j>.tool_call.id`` / ``.function.name`` / ``.function.arguments`` (likewise
``llm.output_messages``). :func:`chat_messages` folds them back into Chat Completions
messages, which the OTLP importer reads as it reads ``gen_ai.input/output.messages``.
Its OpenAI Agents SDK instrumentation writes a handoff as a ``TOOL`` span (:func:`handoff`);
its LangChain one writes a LangGraph node run as a ``CHAIN`` span (:func:`langgraph_node`)
and a tool's output as the serialized ``ToolMessage`` (:func:`tool_output`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["chat_messages", "handoff", "langgraph_node", "tool_output"]

_FIELD = re.compile(r"llm\.(input|output)_messages\.(\d+)\.message\.(.+)")
_TOOL_CALL = re.compile(r"tool_calls\.(\d+)\.tool_call\.(id|function\.name|function\.arguments)")
_TEXT_PART = re.compile(r"contents\.(\d+)\.message_content\.text")
_PLAIN = frozenset({"role", "content", "tool_call_id", "name"})


def chat_messages(attributes: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """``{"input": [...], "output": [...]}``: the sides the attributes hold, in index order."""
    sides: dict[str, dict[int, dict[str, Any]]] = {}
    for key, value in attributes.items():
        field = _FIELD.fullmatch(key) if key.startswith("llm.") else None
        if field is None:
            continue
        side, index, name = field.group(1), int(field.group(2)), field.group(3)
        message = sides.setdefault(side, {}).setdefault(index, {})
        if name in _PLAIN:
            message[name] = value
        elif call := _TOOL_CALL.fullmatch(name):
            calls = message.setdefault("tool_calls", {})
            entry = calls.setdefault(int(call.group(1)), {"type": "function", "function": {}})
            if call.group(2) == "id":
                entry["id"] = value
            else:
                entry["function"][call.group(2).removeprefix("function.")] = value
        elif text := _TEXT_PART.fullmatch(name):
            message.setdefault("parts", {})[int(text.group(1))] = value
    return {side: [_message(m) for _, m in sorted(found.items())] for side, found in sides.items()}


def _message(fields: dict[str, Any]) -> dict[str, Any]:
    message = {k: v for k, v in fields.items() if k not in ("tool_calls", "parts")}
    if "content" not in message and "parts" in fields:
        message["content"] = "".join(str(t) for _, t in sorted(fields["parts"].items()))
    if "tool_calls" in fields:
        message["tool_calls"] = [c for _, c in sorted(fields["tool_calls"].items())]
    return message


def handoff(name: str, attributes: Mapping[str, Any]) -> tuple[str | None, str] | None:
    """``(from, to)`` of a ``TOOL`` span named ``handoff to <agent>``, as
    ``openinference-instrumentation-openai-agents`` writes a handoff (``input.value`` the
    agent handing off, ``output.value`` the one taking over), else None."""
    if not name.startswith("handoff to "):
        return None
    source, target = attributes.get("input.value"), attributes.get("output.value")
    return (str(source) if source else None, str(target or name.removeprefix("handoff to ")))


def langgraph_node(name: str, attributes: Mapping[str, Any]) -> str | None:
    """The node a ``CHAIN`` span ran, when it is a LangGraph node's own run (its
    ``metadata`` JSON names it as ``langgraph_node``; edges and the graph are not)."""
    metadata = _json(attributes.get("metadata"))
    node = metadata.get("langgraph_node") if isinstance(metadata, Mapping) else None
    return node if isinstance(node, str) and node == name and not node.startswith("__") else None


def tool_output(value: Any) -> Any:
    """A tool's result: the content of a LangChain ``ToolMessage`` serialized as
    ``{"type": "tool", "data": {"content": ...}}`` or by ``dumpd`` (``{"lc": 1, "kwargs":
    {"type": "tool", "content": ...}}``), text or parsed, else ``value`` as it is."""
    message = _json(value) if isinstance(value, str) and value.startswith("{") else value
    if isinstance(message, Mapping) and message.get("lc") == 1:
        message = {"type": None, "data": message.get("kwargs")}  # its fields are kwargs
    if not isinstance(message, Mapping) or not isinstance(message.get("data"), Mapping):
        return value
    data = message["data"]
    is_tool = "tool" in (message.get("type"), data.get("type"))
    return data["content"] if is_tool and "content" in data else value


def _json(value: Any) -> Any:
    try:
        return json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return None
