"""The Anthropic messages API, spoken over HTTP (no SDK: see :mod:`.http`).

Same shape as :mod:`signal_eval_cli.providers.openai_provider`, with the official
SDK's environment: ``ANTHROPIC_API_KEY`` (sent as ``X-Api-Key``), ``ANTHROPIC_BASE_URL``
(default ``https://api.anthropic.com``), ``ANTHROPIC_CUSTOM_HEADERS``, and its
``anthropic-version`` header; our body, and strict parsing of the answer (text and
``tool_use`` blocks, streamed or not). No retries here: the wrapper retries. The HTTP
both share is :class:`~signal_eval_cli.providers.http.HTTPProvider`; this module
supplies the headers, the request body, the parser and the stream's events.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from signal_eval_cli.providers.base import ProviderRequest, ToolCallRecord
from signal_eval_cli.providers.http import (
    SKIP,
    Answer,
    HTTPProvider,
    body_answer,
    malformed,
    usage_int,
)
from signal_eval_cli.providers.reliability import ProviderCallError

if TYPE_CHECKING:  # streamed events only (see providers.http)
    from signal_eval_cli.proxy.apis import SSEEvent

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicProvider", "parse_message", "to_anthropic_request"]

DEFAULT_MAX_TOKENS = 4096
"""The messages API requires ``max_tokens``; this is used when nobody sets one."""

API_VERSION = "2023-06-01"
"""The ``anthropic-version`` header the official SDK sends."""


def _tool(tool: Any) -> dict[str, Any]:
    if isinstance(tool, str):
        tool = {"name": tool}
    if tool.get("type") == "function" and "function" in tool:  # OpenAI's shape
        tool = {**tool["function"], "input_schema": tool["function"].get("parameters")}
    out: dict[str, Any] = {
        "name": tool["name"],
        "input_schema": tool.get("input_schema")
        or tool.get("parameters")
        or {"type": "object", "properties": {}},
    }
    if tool.get("description"):
        out["description"] = tool["description"]
    return out


def _content_text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content)


def to_anthropic_request(messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """``(system, messages)`` from neutral messages.

    ``system`` messages are joined into the top-level ``system``; an assistant's
    ``tool_calls`` (``[{id, name, input}]``) become ``tool_use`` blocks; ``tool``
    messages become ``tool_result`` blocks of one user turn.
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            system.append(_content_text(message.get("content")))
        elif role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id"),
                "content": _content_text(message.get("content")),
            }
            last = out[-1] if out else None
            if last is not None and last["role"] == "user" and isinstance(last["content"], list):
                last["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif role == "assistant" and message.get("tool_calls"):
            blocks: list[dict[str, Any]] = []
            if message.get("content"):
                blocks.append({"type": "text", "text": _content_text(message["content"])})
            for call in message["tool_calls"]:
                if "function" in call:  # OpenAI's shape
                    arguments = call["function"].get("arguments") or "{}"
                    call = {
                        "id": call["id"],
                        "name": call["function"]["name"],
                        "input": json.loads(arguments),
                    }
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["name"],
                        "input": call.get("input") or {},
                    }
                )
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": role, "content": message.get("content")})
    return ("\n\n".join(system) if system else None), out


def _api_error(data: Mapping[str, Any], label: str) -> ProviderCallError:
    error = data.get("error")
    message = error.get("message") if isinstance(error, Mapping) else error
    kind = error.get("type") if isinstance(error, Mapping) else None
    code = (
        "overloaded"
        if kind == "overloaded_error"
        else "rate_limited"
        if kind == "rate_limit_error"
        else "api_error"
    )
    return ProviderCallError(f"{label}: the API returned an error: {message} ({kind})", code=code)


def parse_message(data: Any, label: str, raw: bytes | None = None) -> Answer:
    """The answer in a messages-API body; anything off is ``malformed_response``."""
    shown = raw if raw is not None else data
    if not isinstance(data, Mapping):
        raise malformed(label, "the body is not a JSON object", shown)
    if data.get("type") == "error":
        raise _api_error(data, label)
    content = data.get("content")
    if not isinstance(content, list):
        raise malformed(label, "no content list", shown)
    texts: list[str] = []
    calls: list[ToolCallRecord] = []
    for block in content:
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise malformed(label, "a content block has no type", block)
        if block["type"] == "text":
            if not isinstance(block.get("text"), str):
                raise malformed(label, "a text block has no text", block)
            texts.append(block["text"])
        elif block["type"] == "tool_use":
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                raise malformed(label, "a tool_use block has no id or name", block)
            if not isinstance(block.get("input"), Mapping):
                raise malformed(label, f"tool_use '{block['name']}' input is not an object", block)
            calls.append(ToolCallRecord(block["id"], block["name"], dict(block["input"])))
    if not texts and not calls and data.get("stop_reason") is None:
        raise malformed(label, "no text, no tool use and no stop_reason", shown)
    return body_answer(data, label, "".join(texts), calls, "input_tokens", "output_tokens")


class AnthropicProvider(HTTPProvider):
    """One messages-API call per :meth:`complete` (no retries: the wrapper retries)."""

    name = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    base_url_env = "ANTHROPIC_BASE_URL"
    default_base_url = "https://api.anthropic.com"
    headers_env = "ANTHROPIC_CUSTOM_HEADERS"
    path = "/v1/messages"
    default_max_tokens = DEFAULT_MAX_TOKENS

    def headers(self, api_key: str) -> dict[str, str]:
        return {"X-Api-Key": api_key, "anthropic-version": API_VERSION}

    def body(self, request: ProviderRequest) -> dict[str, Any]:
        model = self.model or request.model
        if not model:
            raise ProviderCallError(
                "anthropic: no model: name one in the provider spec (anthropic:<model>) or the request",
                code="bad_request",
            )
        system, messages = to_anthropic_request(request.messages)
        body: dict[str, Any] = {"model": model, "max_tokens": self.max_tokens, "messages": messages}
        if system is not None:
            body["system"] = system
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.tools:
            body["tools"] = [_tool(t) for t in request.tools]
        if self.stream:
            body["stream"] = True
        body.update(self.extra_body)
        return body

    def parse(self, data: Any, label: str, raw: bytes | None = None) -> Answer:
        return parse_message(data, label, raw)

    def event_data(self, event: SSEEvent, label: str) -> Any:
        if event.event is None or event.event == "ping":  # the SDK reads named events only
            return SKIP
        if event.event == "error":
            try:
                body = json.loads(event.data)
            except json.JSONDecodeError:
                body = {"error": {"message": event.data or "error event"}}
            raise _api_error(body if isinstance(body, Mapping) else {"error": body}, label)
        data = json.loads(event.data)
        if isinstance(data, dict) and "type" not in data:
            data["type"] = event.event
        return data

    async def _stream(
        self, body: dict[str, Any], label: str, on_delta: Callable[[str], None] | None
    ) -> Answer:
        parts: list[str] = []
        blocks: dict[int, dict[str, Any]] = {}
        tokens_in = tokens_out = 0
        model: str | None = None
        stopped = False
        async with self._events(body, label) as stream:
            async for event in stream:
                if not isinstance(event, Mapping) or not isinstance(event.get("type"), str):
                    raise malformed(label, "a stream event has no type", event)
                kind = event["type"]
                if kind == "message_start":
                    message = event.get("message") or {}
                    usage = message.get("usage") or {}
                    tokens_in = usage_int(usage.get("input_tokens"), label, "input_tokens")
                    tokens_out = usage_int(usage.get("output_tokens"), label, "output_tokens")
                    if isinstance(message.get("model"), str):
                        model = message["model"]
                elif kind == "content_block_start":
                    block = event.get("content_block")
                    if not isinstance(block, Mapping):
                        raise malformed(label, "content_block_start without a block", event)
                    blocks[int(event.get("index", len(blocks)))] = {**block, "json": ""}
                elif kind == "content_block_delta":
                    delta = event.get("delta") or {}
                    slot = blocks.get(int(event.get("index", 0)))
                    if slot is None:
                        raise malformed(label, "a delta for a block that never started", event)
                    if delta.get("type") == "text_delta":
                        text = delta.get("text")
                        if not isinstance(text, str):
                            raise malformed(label, "a text delta has no text", event)
                        parts.append(text)
                        if on_delta is not None:
                            on_delta(text)
                    elif delta.get("type") == "input_json_delta":
                        slot["json"] += delta.get("partial_json") or ""
                elif kind == "message_delta":
                    usage = event.get("usage") or {}
                    if "output_tokens" in usage:
                        tokens_out = usage_int(usage.get("output_tokens"), label, "output_tokens")
                elif kind == "message_stop":
                    stopped = True
        if not stopped:
            raise ProviderCallError(
                f"{label}: the stream ended before message_stop: connection dropped or body truncated",
                code="connection_error",
            )
        calls = []
        for _, block in sorted(blocks.items()):
            if block.get("type") != "tool_use":
                continue
            try:
                arguments = (
                    json.loads(block["json"]) if block["json"] else dict(block.get("input") or {})
                )
            except json.JSONDecodeError:
                raise malformed(
                    label, f"input of tool_use '{block.get('name')}' is not JSON", block["json"]
                ) from None
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                raise malformed(label, "a tool_use block has no id or name", block)
            calls.append(ToolCallRecord(block["id"], block["name"], arguments))
        return Answer("".join(parts), calls, tokens_in, tokens_out, model, parts)
