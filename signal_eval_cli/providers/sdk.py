"""What the SDK-backed providers share (OpenAI-compatible chat completions, Anthropic messages).

:class:`SDKProvider` owns the official SDK's client (one per event loop, SDK retries
off, aiohttp transport when installed), the low-level ``client.post`` of the body we
build, strict JSON parsing of the reply, error classification and secret redaction,
and the :class:`~signal_eval_cli.providers.base.ProviderResponse` with its cost and
latency. A subclass names its API (``name``, SDK module and client class, key and
base-URL variables, ``path``) and supplies what differs: :meth:`SDKProvider.body`,
:meth:`SDKProvider.parse` and :meth:`SDKProvider._stream`, which reads its events
inside :meth:`SDKProvider._events`.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, ClassVar, NamedTuple

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

__all__ = ["Answer", "SDKProvider", "body_answer", "has_aiohttp", "malformed", "usage_int"]


class Answer(NamedTuple):
    """What one call produced, parsed."""

    text: str
    tool_calls: list[ToolCallRecord]
    input_tokens: int
    output_tokens: int
    model: str | None
    deltas: list[str] | None = None


def malformed(label: str, what: str, raw: Any = None) -> ProviderCallError:
    """A ``malformed_response`` error, with the start of what came (``raw``) when given."""
    sample = ""
    if raw is not None:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        sample = f"; got: {text[:200]!r}"
    return ProviderCallError(
        f"{label}: malformed response: {what}{sample}", code="malformed_response"
    )


def usage_int(value: Any, label: str, field: str) -> int:
    """A token count from ``usage``: absent is 0, anything but an integer is malformed."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise malformed(label, f"usage.{field} is not an integer", value)
    return value


def body_answer(
    data: Mapping[str, Any],
    label: str,
    text: str,
    calls: list[ToolCallRecord],
    input_field: str,
    output_field: str,
) -> Answer:
    """The answer of a parsed body: ``text`` and ``calls`` with its usage and model.

    ``input_field`` and ``output_field`` name the API's token counts in ``usage``.
    """
    usage = data.get("usage") or {}
    if not isinstance(usage, Mapping):
        raise malformed(label, "usage is not an object", usage)
    model = data.get("model")
    return Answer(
        text,
        calls,
        usage_int(usage.get(input_field), label, input_field),
        usage_int(usage.get(output_field), label, output_field),
        model if isinstance(model, str) else None,
    )


def has_aiohttp(sdk: Any) -> bool:
    """Whether ``sdk`` can use the aiohttp transport (``httpx_aiohttp`` installed)."""
    try:
        import httpx_aiohttp  # noqa: F401
    except ImportError:
        return False
    return hasattr(sdk, "DefaultAioHttpClient")


class SDKProvider:
    """One call per :meth:`complete` through an official SDK (no retries: the wrapper retries)."""

    name: ClassVar[str]
    """The provider kind, also the pip extra (``signal-eval[<name>]``)."""
    sdk_module: ClassVar[str]
    sdk_title: ClassVar[str]
    client_class: ClassVar[str]
    key_env: ClassVar[str]
    key_note: ClassVar[str] = ""
    base_url_env: ClassVar[str]
    path: ClassVar[str]
    default_max_tokens: ClassVar[int | None] = None
    """Used when ``max_tokens`` is not set (or 0); ``None``: leave it to the API."""

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
            sdk = importlib.import_module(self.sdk_module)
        except ImportError:
            raise InputError(
                f"the {self.name} provider needs the {self.sdk_title} SDK: "
                f"pip install 'signal-eval[{self.name}]'"
            ) from None
        self._sdk: Any = sdk
        self.model = model or None
        self.api_key = api_key or os.environ.get(self.key_env)
        if not self.api_key:
            raise InputError(
                f"the {self.name} provider needs an API key: set {self.key_env}{self.key_note}"
            )
        self.base_url = base_url or os.environ.get(self.base_url_env) or None
        self.timeout = timeout
        self.stream = stream
        self.max_connections = max_connections
        self.max_tokens = max_tokens
        if self.default_max_tokens is not None:
            self.max_tokens = max_tokens or self.default_max_tokens
        self.prices = prices or default_prices()
        self.transport = transport or ("aiohttp" if has_aiohttp(sdk) else "httpx")
        self.extra_body = dict(extra_body or {})
        self.label = f"{self.name}:{self.model or '?'}"
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
            client = getattr(self._sdk, self.client_class)(
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
        """The API's request body (with ``model``) for ``request``."""
        raise NotImplementedError

    def parse(self, data: Any, label: str, raw: bytes | None = None) -> Answer:
        """The answer in a (non-streamed) response body, strictly."""
        raise NotImplementedError

    async def _stream(
        self, body: dict[str, Any], label: str, on_delta: Callable[[str], None] | None
    ) -> Answer:
        """The answer of a streamed call: read the events of :meth:`_events`."""
        raise NotImplementedError

    async def complete(
        self, request: ProviderRequest, on_delta: Callable[[str], None] | None = None
    ) -> ProviderResponse:
        body = self.body(request)
        label = f"{self.name}:{body['model']}"
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

        response = await self.client().post(self.path, body=body, cast_to=httpx.Response)
        raw = response.content
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise malformed(label, "the body is not JSON", raw) from None
        return self.parse(data, label, raw)

    @asynccontextmanager
    async def _events(self, body: dict[str, Any], label: str) -> AsyncIterator[Any]:
        """The streamed events, each as parsed JSON, unchanged; closed on the way out.

        An event that is not JSON is ``malformed_response``.
        """
        stream_class: Any = self._sdk.AsyncStream[object]
        stream = await self.client().post(
            self.path, body=body, cast_to=object, stream=True, stream_cls=stream_class
        )
        try:
            yield stream
        except json.JSONDecodeError as exc:
            raise malformed(label, f"a stream event is not JSON ({exc.msg})") from None
        finally:
            await stream.close()
