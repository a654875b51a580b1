"""OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, LiteLLM, any ``/v1/chat/completions``).

Speaks the API over HTTP itself (:class:`~signal_eval_cli.providers.http.HTTPProvider`,
our own HTTP client): the request body is built here and the answer parsed here, strictly, so a
malformed body is an error instead of a half-empty object. The environment is the
official SDK's: ``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` (default
``https://api.openai.com/v1``), ``OPENAI_ORG_ID``, ``OPENAI_PROJECT_ID`` and
``OPENAI_CUSTOM_HEADERS``. No SDK is imported (``import openai`` alone costs about
1.5 s of CPU) and no retries happen here:
:class:`~signal_eval_cli.providers.reliability.ReliableProvider` is the only policy.

One instance makes one attempt per :meth:`complete`; :func:`make_provider` wraps it
with retries, the concurrency limit and the timeout. This module supplies the headers,
the request body, the parser and the stream's chunks.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from signal_eval_cli.providers.base import ProviderRequest, ToolCallRecord
from signal_eval_cli.providers.http import (
    DONE,
    Answer,
    HTTPProvider,
    body_answer,
    malformed,
    usage_int,
)
from signal_eval_cli.providers.reliability import ProviderCallError, server_message

if TYPE_CHECKING:  # streamed events only (see providers.http)
    from signal_eval_cli.proxy.apis import SSEEvent

__all__ = [
    "Answer",
    "OpenAIProvider",
    "parse_chat_completion",
    "to_openai_messages",
    "to_openai_tools",
]


def to_openai_tools(tools: list[Any]) -> list[dict[str, Any]]:
    """Tools given as a name, ``{name, description, input_schema|parameters}`` or OpenAI's shape."""
    out = []
    for tool in tools:
        if isinstance(tool, str):
            tool = {"name": tool}
        if tool.get("type") == "function" and "function" in tool:
            out.append(dict(tool))
            continue
        schema = (
            tool.get("input_schema")
            or tool.get("parameters")
            or {"type": "object", "properties": {}}
        )
        function: dict[str, Any] = {"name": tool["name"], "parameters": schema}
        if tool.get("description"):
            function["description"] = tool["description"]
        out.append({"type": "function", "function": function})
    return out


def to_openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Neutral messages to chat-completions messages.

    Neutral: ``{role, content}``; an assistant message may carry ``tool_calls`` as
    ``[{id, name, input}]``; a ``tool`` message carries ``tool_call_id`` and ``content``.
    Messages already in OpenAI's shape pass through.
    """
    out = []
    for message in messages:
        calls = message.get("tool_calls")
        if message.get("role") == "assistant" and calls:
            converted = []
            for call in calls:
                if "function" in call:
                    converted.append(call)
                else:
                    arguments = call.get("input")
                    converted.append(
                        {
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["name"], "arguments": json.dumps(arguments)},
                        }
                    )
            message = {**message, "tool_calls": converted}
        elif message.get("role") == "tool" and not isinstance(message.get("content"), str):
            message = {**message, "content": json.dumps(message.get("content"))}
        out.append(message)
    return out


def _tool_call(raw: Any, label: str) -> ToolCallRecord:
    if not isinstance(raw, Mapping):
        raise malformed(label, "a tool call is not an object", raw)
    function = raw.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise malformed(label, "a tool call has no function name", raw)
    arguments = function.get("arguments")
    if arguments is None or arguments == "":
        parsed: Any = {}
    elif isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except json.JSONDecodeError:
            raise malformed(
                label, f"arguments of tool call '{function['name']}' are not JSON", arguments
            ) from None
    else:
        raise malformed(label, "tool call arguments are not a string", arguments)
    call_id = raw.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise malformed(label, f"tool call '{function['name']}' has no id", raw)
    return ToolCallRecord(call_id, function["name"], parsed)


def parse_chat_completion(data: Any, label: str, raw: bytes | None = None) -> Answer:
    """The answer in a chat-completion body; anything off is ``malformed_response``."""
    if not isinstance(data, Mapping):
        raise malformed(label, "the body is not a JSON object", raw if raw is not None else data)
    if "error" in data and data.get("error"):
        error = data["error"]
        message = error.get("message") if isinstance(error, Mapping) else error
        raise ProviderCallError(f"{label}: the API returned an error: {message}", code="api_error")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise malformed(label, "no choices", raw if raw is not None else data)
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        raise malformed(label, "the first choice has no message", raw if raw is not None else data)
    content = message.get("content")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise malformed(label, "tool_calls is not a list", raw_calls)
    calls = [_tool_call(c, label) for c in raw_calls]
    if content is None:
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            content = refusal
        elif not calls:
            raise malformed(
                label,
                "the message has neither content nor tool calls",
                raw if raw is not None else data,
            )
        else:
            content = ""
    if not isinstance(content, str):
        raise malformed(label, "message content is not a string", content)
    return body_answer(data, label, content, calls, "prompt_tokens", "completion_tokens")


class OpenAIProvider(HTTPProvider):
    """One chat-completions call per :meth:`complete` (no retries: see the module doc)."""

    name = "openai"
    key_env = "OPENAI_API_KEY"
    key_note = " (any non-empty value for a local endpoint that ignores it)"
    base_url_env = "OPENAI_BASE_URL"
    default_base_url = "https://api.openai.com/v1"
    headers_env = "OPENAI_CUSTOM_HEADERS"
    path = "/chat/completions"

    def headers(self, api_key: str) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {api_key}"}
        for header, variable in (
            ("OpenAI-Organization", "OPENAI_ORG_ID"),
            ("OpenAI-Project", "OPENAI_PROJECT_ID"),
        ):
            value = os.environ.get(variable)
            if value:
                headers[header] = value
        return headers

    def body(self, request: ProviderRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model or request.model,
            "messages": to_openai_messages(request.messages),
        }
        if not body["model"]:
            raise ProviderCallError(
                "openai: no model: name one in the provider spec (openai:<model>) or the request",
                code="bad_request",
            )
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.tools:
            body["tools"] = to_openai_tools(request.tools)
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        body.update(self.extra_body)
        return body

    def parse(self, data: Any, label: str, raw: bytes | None = None) -> Answer:
        return parse_chat_completion(data, label, raw)

    def event_data(self, event: SSEEvent, label: str) -> Any:
        if event.data.startswith("[DONE]"):
            return DONE
        data = json.loads(event.data)
        if isinstance(data, Mapping) and data.get("error"):  # an error inside the stream
            detail = server_message(data["error"]) or "An error occurred during streaming"
            raise ProviderCallError(f"{label}: {detail[:500]}", code="api_error")
        return data

    async def _stream(
        self, body: dict[str, Any], label: str, on_delta: Callable[[str], None] | None
    ) -> Answer:
        parts: list[str] = []
        tools: dict[int, dict[str, Any]] = {}
        tokens_in = tokens_out = 0
        finished = False
        model: str | None = None
        async with self._events(body, label) as stream:
            async for chunk in stream:
                if not isinstance(chunk, Mapping):
                    raise malformed(label, "a stream chunk is not an object", chunk)
                if isinstance(chunk.get("model"), str):
                    model = chunk["model"]
                usage = chunk.get("usage")
                if isinstance(usage, Mapping):
                    tokens_in = usage_int(usage.get("prompt_tokens"), label, "prompt_tokens")
                    tokens_out = usage_int(
                        usage.get("completion_tokens"), label, "completion_tokens"
                    )
                choices = chunk.get("choices")
                if not isinstance(choices, list):
                    raise malformed(label, "a stream chunk has no choices", chunk)
                for choice in choices:
                    if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                        continue
                    delta = choice.get("delta") or {}
                    if not isinstance(delta, Mapping):
                        raise malformed(label, "a stream delta is not an object", delta)
                    content = delta.get("content")
                    if isinstance(content, str) and content:
                        parts.append(content)
                        if on_delta is not None:
                            on_delta(content)
                    for fragment in delta.get("tool_calls") or []:
                        _merge_tool_fragment(tools, fragment, label)
                    if choice.get("finish_reason"):
                        finished = True
        if not finished:
            raise ProviderCallError(
                f"{label}: the stream ended before the answer did (no finish_reason): "
                "connection dropped or body truncated",
                code="connection_error",
            )
        calls = [
            _tool_call(
                {
                    "id": t.get("id"),
                    "function": {"name": t.get("name"), "arguments": t.get("arguments")},
                },
                label,
            )
            for _, t in sorted(tools.items())
        ]
        return Answer("".join(parts), calls, tokens_in, tokens_out, model, parts)


def _merge_tool_fragment(tools: dict[int, dict[str, Any]], fragment: Any, label: str) -> None:
    if not isinstance(fragment, Mapping):
        raise malformed(label, "a streamed tool call is not an object", fragment)
    index = fragment.get("index", 0)
    slot = tools.setdefault(index if isinstance(index, int) else 0, {"arguments": ""})
    if isinstance(fragment.get("id"), str):
        slot["id"] = fragment["id"]
    function = fragment.get("function") or {}
    if isinstance(function.get("name"), str) and function["name"]:
        slot.setdefault("name", function["name"])
    if isinstance(function.get("arguments"), str):
        slot["arguments"] += function["arguments"]
