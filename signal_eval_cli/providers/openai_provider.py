"""OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, LiteLLM, any ``/v1/chat/completions``).

Uses the official ``openai`` SDK (``pip install 'signal-eval[openai]'``): its client,
auth, base URL and error types, through its documented low-level ``client.post``
with the request body we build and the response parsed here, strictly. That skips
the SDK's request-param transform and lenient response models (measured at about
0.3–0.4 ms CPU per call, a third of the SDK's cost), and makes a malformed body an
error instead of a half-empty object. The SDK's retries are off (``max_retries=0``):
:class:`~signal_eval_cli.providers.reliability.ReliableProvider` is the only policy.

The HTTP transport is aiohttp (``openai[aiohttp]``) when installed, else httpx:
measured on the project's 2-core machine against a loopback mock, ~0.7 ms CPU per
call with aiohttp against ~3 ms with the default httpx transport.

One instance makes one attempt per :meth:`complete`; :func:`make_provider` wraps it
with retries, the concurrency limit and the timeout.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from signal_eval_cli.errors import InputError
from signal_eval_cli.providers.base import ProviderRequest, ProviderResponse, ToolCallRecord
from signal_eval_cli.providers.pricing import PriceTable, default_prices
from signal_eval_cli.providers.reliability import (
    NoCookies,
    ProviderCallError,
    classify_exception,
    close_on_loop_exit,
    redact,
)

__all__ = [
    "Answer",
    "OpenAIProvider",
    "parse_chat_completion",
    "to_openai_messages",
    "to_openai_tools",
]


def _malformed(label: str, what: str, raw: Any = None) -> ProviderCallError:
    sample = ""
    if raw is not None:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        sample = f"; got: {text[:200]!r}"
    return ProviderCallError(
        f"{label}: malformed response: {what}{sample}", code="malformed_response"
    )


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


class Answer(NamedTuple):
    """What one call produced, parsed."""

    text: str
    tool_calls: list[ToolCallRecord]
    input_tokens: int
    output_tokens: int
    model: str | None
    deltas: list[str] | None = None


def _int(value: Any, label: str, field: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise _malformed(label, f"usage.{field} is not an integer", value)
    return value


def _tool_call(raw: Any, label: str) -> ToolCallRecord:
    if not isinstance(raw, Mapping):
        raise _malformed(label, "a tool call is not an object", raw)
    function = raw.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise _malformed(label, "a tool call has no function name", raw)
    arguments = function.get("arguments")
    if arguments is None or arguments == "":
        parsed: Any = {}
    elif isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except json.JSONDecodeError:
            raise _malformed(
                label, f"arguments of tool call '{function['name']}' are not JSON", arguments
            ) from None
    else:
        raise _malformed(label, "tool call arguments are not a string", arguments)
    call_id = raw.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise _malformed(label, f"tool call '{function['name']}' has no id", raw)
    return ToolCallRecord(call_id, function["name"], parsed)


def parse_chat_completion(data: Any, label: str, raw: bytes | None = None) -> Answer:
    """The answer in a chat-completion body; anything off is ``malformed_response``."""
    if not isinstance(data, Mapping):
        raise _malformed(label, "the body is not a JSON object", raw if raw is not None else data)
    if "error" in data and data.get("error"):
        error = data["error"]
        message = error.get("message") if isinstance(error, Mapping) else error
        raise ProviderCallError(f"{label}: the API returned an error: {message}", code="api_error")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise _malformed(label, "no choices", raw if raw is not None else data)
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        raise _malformed(label, "the first choice has no message", raw if raw is not None else data)
    content = message.get("content")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise _malformed(label, "tool_calls is not a list", raw_calls)
    calls = [_tool_call(c, label) for c in raw_calls]
    if content is None:
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            content = refusal
        elif not calls:
            raise _malformed(
                label,
                "the message has neither content nor tool calls",
                raw if raw is not None else data,
            )
        else:
            content = ""
    if not isinstance(content, str):
        raise _malformed(label, "message content is not a string", content)
    usage = data.get("usage") or {}
    if not isinstance(usage, Mapping):
        raise _malformed(label, "usage is not an object", usage)
    model = data.get("model")
    return Answer(
        content,
        calls,
        _int(usage.get("prompt_tokens"), label, "prompt_tokens"),
        _int(usage.get("completion_tokens"), label, "completion_tokens"),
        model if isinstance(model, str) else None,
    )


class OpenAIProvider:
    """One chat-completions call per :meth:`complete` (no retries: see the module doc)."""

    name = "openai"

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
            import openai
        except ImportError:
            raise InputError(
                "the openai provider needs the OpenAI SDK: pip install 'signal-eval[openai]'"
            ) from None
        self._sdk: Any = openai
        self.model = model or None
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if not self.api_key:
            raise InputError(
                "the openai provider needs an API key: set OPENAI_API_KEY (any non-empty value "
                "for a local endpoint that ignores it)"
            )
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.timeout = timeout
        self.stream = stream
        self.max_connections = max_connections
        self.max_tokens = max_tokens
        self.prices = prices or default_prices()
        self.transport = transport or ("aiohttp" if _has_aiohttp(openai) else "httpx")
        self.extra_body = dict(extra_body or {})
        self.label = f"openai:{self.model or '?'}"
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
            client = self._sdk.AsyncOpenAI(
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
        loop = asyncio.get_running_loop()
        client = self._clients.pop(loop, None)
        if client is not None:
            await client.close()

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

    async def complete(
        self, request: ProviderRequest, on_delta: Callable[[str], None] | None = None
    ) -> ProviderResponse:
        body = self.body(request)
        label = f"openai:{body['model']}"
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

        response = await self.client().post("/chat/completions", body=body, cast_to=httpx.Response)
        raw = response.content
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise _malformed(label, "the body is not JSON", raw) from None
        return parse_chat_completion(data, label, raw)

    async def _stream(
        self, body: dict[str, Any], label: str, on_delta: Callable[[str], None] | None
    ) -> Answer:
        stream_class: Any = self._sdk.AsyncStream[object]  # chunks as parsed JSON, unchanged
        stream = await self.client().post(
            "/chat/completions", body=body, cast_to=object, stream=True, stream_cls=stream_class
        )
        parts: list[str] = []
        tools: dict[int, dict[str, Any]] = {}
        tokens_in = tokens_out = 0
        finished = False
        model: str | None = None
        try:
            async for chunk in stream:
                if not isinstance(chunk, Mapping):
                    raise _malformed(label, "a stream chunk is not an object", chunk)
                if isinstance(chunk.get("model"), str):
                    model = chunk["model"]
                usage = chunk.get("usage")
                if isinstance(usage, Mapping):
                    tokens_in = _int(usage.get("prompt_tokens"), label, "prompt_tokens")
                    tokens_out = _int(usage.get("completion_tokens"), label, "completion_tokens")
                choices = chunk.get("choices")
                if not isinstance(choices, list):
                    raise _malformed(label, "a stream chunk has no choices", chunk)
                for choice in choices:
                    if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                        continue
                    delta = choice.get("delta") or {}
                    if not isinstance(delta, Mapping):
                        raise _malformed(label, "a stream delta is not an object", delta)
                    content = delta.get("content")
                    if isinstance(content, str) and content:
                        parts.append(content)
                        if on_delta is not None:
                            on_delta(content)
                    for fragment in delta.get("tool_calls") or []:
                        _merge_tool_fragment(tools, fragment, label)
                    if choice.get("finish_reason"):
                        finished = True
        except json.JSONDecodeError as exc:
            raise _malformed(label, f"a stream event is not JSON ({exc.msg})") from None
        finally:
            await stream.close()
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
        raise _malformed(label, "a streamed tool call is not an object", fragment)
    index = fragment.get("index", 0)
    slot = tools.setdefault(index if isinstance(index, int) else 0, {"arguments": ""})
    if isinstance(fragment.get("id"), str):
        slot["id"] = fragment["id"]
    function = fragment.get("function") or {}
    if isinstance(function.get("name"), str) and function["name"]:
        slot.setdefault("name", function["name"])
    if isinstance(function.get("arguments"), str):
        slot["arguments"] += function["arguments"]


def _has_aiohttp(sdk: Any) -> bool:
    try:
        import httpx_aiohttp  # noqa: F401
    except ImportError:
        return False
    return hasattr(sdk, "DefaultAioHttpClient")
