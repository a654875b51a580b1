"""Anthropic messages API through the official ``anthropic`` SDK (``signal-eval[anthropic]``).

Same shape as :mod:`signal_eval_cli.providers.openai_provider`: the SDK's client,
auth (``ANTHROPIC_API_KEY``), base URL (``ANTHROPIC_BASE_URL``), version header and
error types, its low-level ``client.post`` with our body, and strict parsing of
the answer (text and ``tool_use`` blocks, streamed or not). SDK retries are off.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from signal_eval_cli.errors import InputError
from signal_eval_cli.providers.base import ProviderRequest, ProviderResponse, ToolCallRecord
from signal_eval_cli.providers.openai_provider import Answer
from signal_eval_cli.providers.pricing import PriceTable, default_prices
from signal_eval_cli.providers.reliability import (
    NoCookies,
    ProviderCallError,
    classify_exception,
    close_on_loop_exit,
    redact,
)

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicProvider", "parse_message", "to_anthropic_request"]

DEFAULT_MAX_TOKENS = 4096
"""The messages API requires ``max_tokens``; this is used when nobody sets one."""


def _malformed(label: str, what: str, raw: Any = None) -> ProviderCallError:
    sample = ""
    if raw is not None:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        sample = f"; got: {text[:200]!r}"
    return ProviderCallError(
        f"{label}: malformed response: {what}{sample}", code="malformed_response"
    )


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


def _int(value: Any, label: str, field: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise _malformed(label, f"usage.{field} is not an integer", value)
    return value


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
        raise _malformed(label, "the body is not a JSON object", shown)
    if data.get("type") == "error":
        raise _api_error(data, label)
    content = data.get("content")
    if not isinstance(content, list):
        raise _malformed(label, "no content list", shown)
    texts: list[str] = []
    calls: list[ToolCallRecord] = []
    for block in content:
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise _malformed(label, "a content block has no type", block)
        if block["type"] == "text":
            if not isinstance(block.get("text"), str):
                raise _malformed(label, "a text block has no text", block)
            texts.append(block["text"])
        elif block["type"] == "tool_use":
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                raise _malformed(label, "a tool_use block has no id or name", block)
            if not isinstance(block.get("input"), Mapping):
                raise _malformed(label, f"tool_use '{block['name']}' input is not an object", block)
            calls.append(ToolCallRecord(block["id"], block["name"], dict(block["input"])))
    if not texts and not calls and data.get("stop_reason") is None:
        raise _malformed(label, "no text, no tool use and no stop_reason", shown)
    usage = data.get("usage") or {}
    if not isinstance(usage, Mapping):
        raise _malformed(label, "usage is not an object", usage)
    model = data.get("model")
    return Answer(
        "".join(texts),
        calls,
        _int(usage.get("input_tokens"), label, "input_tokens"),
        _int(usage.get("output_tokens"), label, "output_tokens"),
        model if isinstance(model, str) else None,
    )


class AnthropicProvider:
    """One messages-API call per :meth:`complete` (no retries: the wrapper retries)."""

    name = "anthropic"

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
        stream: bool = False,
        max_connections: int = 100,
        max_tokens: int | None = None,
        prices: PriceTable | None = None,
        transport: str | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        try:
            import anthropic
        except ImportError:
            raise InputError(
                "the anthropic provider needs the Anthropic SDK: pip install 'signal-eval[anthropic]'"
            ) from None
        self._sdk: Any = anthropic
        self.model = model or None
        self.api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not self.api_key:
            raise InputError("the anthropic provider needs an API key: set ANTHROPIC_API_KEY")
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self.timeout = timeout
        self.stream = stream
        self.max_connections = max_connections
        self.max_tokens = max_tokens or DEFAULT_MAX_TOKENS
        self.prices = prices or default_prices()
        self.transport = transport or ("aiohttp" if _has_aiohttp(anthropic) else "httpx")
        self.extra_body = dict(extra_body or {})
        self._clients: dict[asyncio.AbstractEventLoop, Any] = {}

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.api_key,) if self.api_key else ()

    def client(self) -> Any:
        """The SDK client of the running event loop (aiohttp sessions belong to one loop)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            import httpx

            limits = httpx.Limits(
                max_connections=self.max_connections, max_keepalive_connections=self.max_connections
            )
            timeout = httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0))
            http_client_class = (
                self._sdk.DefaultAioHttpClient
                if self.transport == "aiohttp"
                else self._sdk.DefaultAsyncHttpxClient
            )
            client = self._sdk.AsyncAnthropic(
                api_key=self.api_key,
                base_url=self.base_url,
                max_retries=0,
                timeout=timeout,
                http_client=http_client_class(limits=limits, timeout=timeout, cookies=NoCookies()),
            )
            self._clients = {k: v for k, v in self._clients.items() if not k.is_closed()}
            self._clients[loop] = client
            close_on_loop_exit(client)
        return client

    async def aclose(self) -> None:
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()

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

    async def complete(
        self, request: ProviderRequest, on_delta: Callable[[str], None] | None = None
    ) -> ProviderResponse:
        body = self.body(request)
        label = f"anthropic:{body['model']}"
        began = time.perf_counter()
        try:
            answer = await (
                self._stream(body, label, on_delta) if self.stream else self._post(body, label)
            )
        except Exception as exc:
            error = classify_exception(exc, label=label)
            raise ProviderCallError(
                redact(str(error), self.secrets),
                code=error.code,
                status=error.status,
                retry_after=error.retry_after,
            ) from None
        return ProviderResponse(
            text=answer.text,
            tool_calls=answer.tool_calls,
            input_tokens=answer.input_tokens,
            output_tokens=answer.output_tokens,
            cost=self.prices.cost(body["model"], answer.input_tokens, answer.output_tokens),
            latency_ms=round((time.perf_counter() - began) * 1000, 3),
            model=answer.model or body["model"],
            deltas=answer.deltas,
        )

    async def _post(self, body: dict[str, Any], label: str) -> Answer:
        import httpx

        response = await self.client().post("/v1/messages", body=body, cast_to=httpx.Response)
        raw = response.content
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise _malformed(label, "the body is not JSON", raw) from None
        return parse_message(data, label, raw)

    async def _stream(
        self, body: dict[str, Any], label: str, on_delta: Callable[[str], None] | None
    ) -> Answer:
        stream_class: Any = self._sdk.AsyncStream[object]  # events as parsed JSON, unchanged
        stream = await self.client().post(
            "/v1/messages", body=body, cast_to=object, stream=True, stream_cls=stream_class
        )
        parts: list[str] = []
        blocks: dict[int, dict[str, Any]] = {}
        tokens_in = tokens_out = 0
        model: str | None = None
        stopped = False
        try:
            async for event in stream:
                if not isinstance(event, Mapping) or not isinstance(event.get("type"), str):
                    raise _malformed(label, "a stream event has no type", event)
                kind = event["type"]
                if kind == "message_start":
                    message = event.get("message") or {}
                    usage = message.get("usage") or {}
                    tokens_in = _int(usage.get("input_tokens"), label, "input_tokens")
                    tokens_out = _int(usage.get("output_tokens"), label, "output_tokens")
                    if isinstance(message.get("model"), str):
                        model = message["model"]
                elif kind == "content_block_start":
                    block = event.get("content_block")
                    if not isinstance(block, Mapping):
                        raise _malformed(label, "content_block_start without a block", event)
                    blocks[int(event.get("index", len(blocks)))] = {**block, "json": ""}
                elif kind == "content_block_delta":
                    delta = event.get("delta") or {}
                    slot = blocks.get(int(event.get("index", 0)))
                    if slot is None:
                        raise _malformed(label, "a delta for a block that never started", event)
                    if delta.get("type") == "text_delta":
                        text = delta.get("text")
                        if not isinstance(text, str):
                            raise _malformed(label, "a text delta has no text", event)
                        parts.append(text)
                        if on_delta is not None:
                            on_delta(text)
                    elif delta.get("type") == "input_json_delta":
                        slot["json"] += delta.get("partial_json") or ""
                elif kind == "message_delta":
                    usage = event.get("usage") or {}
                    if "output_tokens" in usage:
                        tokens_out = _int(usage.get("output_tokens"), label, "output_tokens")
                elif kind == "message_stop":
                    stopped = True
        except json.JSONDecodeError as exc:
            raise _malformed(label, f"a stream event is not JSON ({exc.msg})") from None
        finally:
            await stream.close()
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
                raise _malformed(
                    label, f"input of tool_use '{block.get('name')}' is not JSON", block["json"]
                ) from None
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                raise _malformed(label, "a tool_use block has no id or name", block)
            calls.append(ToolCallRecord(block["id"], block["name"], arguments))
        return Answer("".join(parts), calls, tokens_in, tokens_out, model, parts)


def _has_aiohttp(sdk: Any) -> bool:
    try:
        import httpx_aiohttp  # noqa: F401
    except ImportError:
        return False
    return hasattr(sdk, "DefaultAioHttpClient")
