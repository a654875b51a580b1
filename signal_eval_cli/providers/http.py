"""What the built-in providers share: the model API spoken over HTTP, by our own client.

The providers build the request body themselves and parse the answer strictly, so
an official SDK would only carry the HTTP: importing ``openai`` costs about 1.5 s of
CPU, paid by every process that calls a model (a run, each judged run, each test
subprocess). :class:`HTTPProvider` does that part itself, as the SDKs do it: the
base URL, key, organisation and project from the same environment variables with the
same defaults, extra headers from ``OPENAI_CUSTOM_HEADERS``/``ANTHROPIC_CUSTOM_HEADERS``,
an HTTP proxy from the environment, an HTTP status of 400 or more as an error with the
server's message and ``Retry-After``, and server-sent events for streams. The
transport is :class:`signal_eval_cli.transport.client.Client`, the model proxy's too:
one per event loop (its connections belong to the loop), ``max_connections`` of them at
once, no cookies (a jar shared by every case would carry state from one case to the
next). It costs a third of aiohttp's CPU per call.

A subclass names its API (``name``, key and base-URL variables, default base URL,
``path``, :meth:`HTTPProvider.headers`) and supplies what differs:
:meth:`HTTPProvider.body`, :meth:`HTTPProvider.parse`, :meth:`HTTPProvider.event_data`
and :meth:`HTTPProvider._stream`, which reads the events of :meth:`HTTPProvider._events`.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple
from urllib.parse import urljoin

from signal_eval_cli.errors import InputError
from signal_eval_cli.providers.base import ProviderRequest, ProviderResponse, ToolCallRecord
from signal_eval_cli.providers.pricing import PriceTable, default_prices
from signal_eval_cli.providers.reliability import (
    ProviderCallError,
    classify_exception,
    close_on_loop_exit,
    http_status_error,
    redact,
)
from signal_eval_cli.transport.client import Client, Response, checked_base_url, origin_of

if TYPE_CHECKING:  # the proxy's event parser is imported by a streamed call, when it is made
    from signal_eval_cli.proxy.apis import SSEEvent

__all__ = ["Answer", "HTTPProvider", "body_answer", "malformed", "usage_int"]

TRANSPORTS = ("http", "aiohttp")
"""``transport`` choices: our own HTTP client (``aiohttp``: its former name, still taken)."""

_ACCEPT = {"Accept": "application/json", "Accept-Encoding": "gzip, deflate"}

MAX_REDIRECTS = 5
"""307/308 answers followed for one call (to the same server) before it is an error."""

SKIP = object()
"""What :meth:`HTTPProvider.event_data` returns for an event that carries no data."""

DONE = object()
"""What :meth:`HTTPProvider.event_data` returns for the event that ends a stream."""


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


def custom_headers(variable: str) -> dict[str, str]:
    """Headers from ``variable``: one ``Name: value`` a line, as the SDKs read it."""
    headers = {}
    for line in os.environ.get(variable, "").split("\n"):
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip()] = value.strip()
    return headers


class HTTPProvider:
    """One call per :meth:`complete` (no retries: the wrapper retries)."""

    name: ClassVar[str]
    """The provider kind (``openai``, ``anthropic``)."""
    key_env: ClassVar[str]
    key_note: ClassVar[str] = ""
    base_url_env: ClassVar[str]
    default_base_url: ClassVar[str]
    headers_env: ClassVar[str]
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
        self.model = model or None
        self.api_key = api_key or os.environ.get(self.key_env)
        if not self.api_key:
            raise InputError(
                f"the {self.name} provider needs an API key: set {self.key_env}{self.key_note}"
            )
        if transport not in (None, *TRANSPORTS):
            raise InputError(f"the {self.name} provider: transport must be http, got {transport!r}")
        self.transport = "http"
        base = base_url or os.environ.get(self.base_url_env) or self.default_base_url
        where = "base_url" if base_url else self.base_url_env
        self.base_url = checked_base_url(base, f"the {self.name} provider: base URL ({where})")
        self.timeout = timeout
        self.stream = stream
        self.max_connections = max_connections
        self.max_tokens = max_tokens
        if self.default_max_tokens is not None:
            self.max_tokens = max_tokens or self.default_max_tokens
        self.prices = prices or default_prices()
        self.extra_body = dict(extra_body or {})
        self.label = f"{self.name}:{self.model or '?'}"
        self._headers = {
            "Content-Type": "application/json",
            **_ACCEPT,
            **self.headers(self.api_key),
            **custom_headers(self.headers_env),  # last, as the SDKs merge them
        }
        self._clients: dict[asyncio.AbstractEventLoop, Client] = {}

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.api_key,) if self.api_key else ()

    def headers(self, api_key: str) -> dict[str, str]:
        """The API's auth and version headers."""
        raise NotImplementedError

    def client(self) -> Client:
        """The HTTP client of the running event loop (connections belong to one loop)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = Client(
                self.timeout,
                min(self.timeout, 10.0),
                max_connections=self.max_connections,
                trust_env=True,
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

    def event_data(self, event: SSEEvent, label: str) -> Any:
        """The parsed JSON of one stream event, :data:`SKIP` or :data:`DONE`; raises on
        an error event (a ``json.JSONDecodeError`` is reported as malformed)."""
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

    async def _answered(self, body: dict[str, Any], label: str) -> Response:
        """The response to ``body`` posted to the API, for the caller to release; a status
        of 300 or more raises (the connection released).

        A 307/308 to the same server (or to its ``https``) is followed with the same POST,
        up to :data:`MAX_REDIRECTS` times, as the SDKs follow it (a gateway moving ``http``
        to ``https``, a path with a slash added). Any other redirect raises naming where it
        points: a 301/302/303 would turn the POST into a GET, and another host would be
        sent the key (an API's URL that moved is for the user to change)."""
        url = self.base_url + self.path
        data = json.dumps(body).encode()
        for hop in range(MAX_REDIRECTS + 1):
            response = await self.client().request("POST", url, self._headers, data)
            if response.status < 300:  # the usual answer: nothing more to look at
                return response
            try:
                where = response.headers.get("location")
                moved = urljoin(url, where) if where and response.status in (307, 308) else None
                if moved is None or not _same_server(url, moved) or hop == MAX_REDIRECTS:
                    break
                await response.read()
            except BaseException:  # the connection (and its slot) would be lost
                response.release()
                raise
            response.release()
            url = moved
        try:
            raw = await response.read()
            if response.status < 400:
                moved_to = f"redirects to {where}" if where else "with no Location to follow"
                raise ProviderCallError(
                    f"{label}: HTTP {response.status}: {url} {moved_to}: "
                    f"set the base URL to where the API is",
                    code="bad_request",
                    status=response.status,
                )
            raise http_status_error(response.status, response.headers.by_name, raw, label=label)
        finally:
            response.release()

    async def _post(self, body: dict[str, Any], label: str) -> Answer:
        response = await self._answered(body, label)
        try:
            raw = await response.read()
        finally:
            response.release()
        if not raw.strip():  # a 204, or a 200 with nothing in it: say so, not "not JSON"
            raise malformed(label, f"the body is empty (HTTP {response.status})")
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise malformed(label, "the body is not JSON", raw) from None
        return self.parse(data, label, raw)

    @asynccontextmanager
    async def _events(self, body: dict[str, Any], label: str) -> AsyncIterator[AsyncIterator[Any]]:
        """The streamed events, each as :meth:`event_data` parsed it; closed on the way out.

        An event that is not JSON is ``malformed_response``; an event cut off before its
        blank line is dropped, as the SDKs drop it.
        """
        response = await self._answered(body, label)
        try:
            yield self._decoded(response, label)
        finally:
            response.release()

    async def _decoded(self, response: Response, label: str) -> AsyncIterator[Any]:
        from signal_eval_cli.proxy.apis import SSEEvent, split_events

        buffer = b""
        done = False
        async for chunk in response.chunks():
            if done:  # read to the end, so that the connection can serve another call
                continue
            blocks, buffer = split_events(buffer + chunk)
            for block in blocks:
                event = SSEEvent.parse(block)
                if event is None:
                    continue
                try:
                    data = self.event_data(event, label)
                except json.JSONDecodeError as exc:
                    raise malformed(label, f"a stream event is not JSON ({exc.msg})") from None
                if data is DONE:
                    done = True
                    break
                if data is not SKIP:
                    yield data


def _same_server(url: str, moved: str) -> bool:
    """Whether a redirect stays on the server the key was meant for: the same scheme,
    host and port, or the same host moved from ``http`` to ``https``."""
    old, new = origin_of(url), origin_of(moved)
    return new == old or (old == ("http", old[1], 80) and new == ("https", old[1], 443))
