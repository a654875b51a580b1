"""The Vercel AI SDK's telemetry (``experimental_telemetry``), as GenAI attributes.

The AI SDK (TypeScript: ``generateText``, ``streamText``, ``generateObject``, its agents)
names each span's operation in ``ai.operationId``, not ``gen_ai.operation.name``, and
keeps the messages in attributes of its own: a model call (``ai.generateText.doGenerate``,
``ai.streamText.doStream``, ...) has ``ai.prompt.messages``, ``ai.response.text`` and
``ai.response.toolCalls``; a tool run (``ai.toolCall``) has ``ai.toolCall.name`` / ``.id``
/ ``.args`` / ``.result``; the call around them (``ai.generateText``, ...) has ``ai.prompt``
and, when the caller named it, ``ai.telemetry.functionId``, the agent's name here.
:func:`operation` says which GenAI operation a span is and adds the GenAI attributes the
OTLP importer reads, where they are absent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["operation"]

_CALLS = ("generateText", "streamText", "generateObject", "streamObject")
_MODEL_CALLS = frozenset(f"ai.{c}.{step}" for c in _CALLS for step in ("doGenerate", "doStream"))
_RUNS = frozenset(f"ai.{c}" for c in _CALLS)
_ANSWER_KEYS = ("ai.response.text", "ai.response.object", "ai.response.toolCalls")


def operation(attributes: dict[str, Any]) -> str | None:
    """The GenAI operation of a span carrying ``ai.operationId`` (None: not one we map)."""
    kind = attributes.get("ai.operationId")
    if kind in _MODEL_CALLS:
        _add(attributes, "gen_ai.input.messages", _json(attributes.get("ai.prompt.messages")))
        if any(key in attributes for key in _ANSWER_KEYS):  # none: recordOutputs was false
            _add(attributes, "gen_ai.output.messages", [_answer(attributes)])
        _add(attributes, "gen_ai.request.model", attributes.get("ai.model.id"))
        _add(attributes, "gen_ai.usage.input_tokens", attributes.get("ai.usage.promptTokens"))
        _add(attributes, "gen_ai.usage.output_tokens", attributes.get("ai.usage.completionTokens"))
        return "chat"
    if kind == "ai.toolCall":
        _add(attributes, "gen_ai.tool.name", attributes.get("ai.toolCall.name"))
        _add(attributes, "gen_ai.tool.call.id", attributes.get("ai.toolCall.id"))
        _add(attributes, "gen_ai.tool.call.arguments", attributes.get("ai.toolCall.args"))
        if "ai.toolCall.result" in attributes:  # written as JSON: a string result is quoted
            _add(attributes, "gen_ai.tool.call.result", _json(attributes["ai.toolCall.result"]))
        return "execute_tool"
    if kind in _RUNS:
        _add(attributes, "gen_ai.input.messages", _prompt(_json(attributes.get("ai.prompt"))))
        name = attributes.get("ai.telemetry.functionId")
        if isinstance(name, str) and name:
            _add(attributes, "gen_ai.agent.name", name)
            return "invoke_agent"
    return None


def _add(attributes: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        attributes.setdefault(key, value)


def _json(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _answer(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The model's answer as a Chat Completions message: its text (``generateObject``'s
    object, as JSON) and the tool calls it requested (``{toolCallId, toolName, input}``;
    ``args`` in older versions)."""
    calls = _json(attributes.get("ai.response.toolCalls"))
    requested = [
        {
            "id": call.get("toolCallId"),
            "type": "function",
            "function": {
                "name": call.get("toolName"),
                "arguments": call.get("input", call.get("args")),
            },
        }
        for call in (calls if isinstance(calls, list) else [])
        if isinstance(call, Mapping)
    ]
    text = attributes.get("ai.response.text", attributes.get("ai.response.object"))
    return {
        "role": "assistant",
        "content": text if isinstance(text, str) else "",
        "tool_calls": requested,
    }


def _prompt(prompt: Any) -> Any:
    """``ai.prompt`` (``{system?, prompt}`` or ``{system?, messages}``) as messages."""
    if not isinstance(prompt, Mapping):
        return None
    if isinstance(prompt.get("messages"), list):
        return prompt["messages"]
    if prompt.get("prompt") is not None:
        return [{"role": "user", "content": prompt["prompt"]}]
    return None
