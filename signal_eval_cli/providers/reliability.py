"""One retry policy, an adaptive concurrency limit and a timeout around any provider.

- :class:`RetryPolicy` (from :mod:`signal_eval_cli.retrying`, which the model proxy
  shares): exponential backoff with jitter on 429, 5xx, connection errors and
  timeouts; a ``Retry-After`` the server sends is honoured (and one longer than
  ``max_retry_after`` ends the call at once with a clear error).
- :class:`AdaptiveLimiter`: at most ``max_connections`` calls in flight per
  provider. A rate-limited answer halves the limit (once per congestion event)
  and pauses new calls for ``Retry-After``; each success raises it again (+1 per
  success up to half the old limit, then about +1 per round of calls).
- :class:`ReliableProvider`: wraps a provider that makes *one* attempt per
  ``complete`` and applies the three. Deltas streamed by a failed attempt are
  dropped, so a retried stream never duplicates text in the trace.

Providers raise :class:`ProviderCallError` (a :class:`ProviderError`) with a
``code``; :func:`redact` keeps API keys out of every message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

from signal_eval_cli.providers.base import (
    Provider,
    ProviderError,
    ProviderRequest,
    ProviderResponse,
)
from signal_eval_cli.retrying import RetryPolicy, parse_retry_after

__all__ = [
    "RETRYABLE_CODES",
    "AdaptiveLimiter",
    "ProviderCallError",
    "ReliableProvider",
    "RetryPolicy",
    "classify_exception",
    "close_on_loop_exit",
    "http_status_error",
    "parse_retry_after",
    "redact",
    "server_message",
    "status_code_error",
]

RETRYABLE_CODES = frozenset(
    {"rate_limited", "overloaded", "server_error", "connection_error", "timeout"}
)
"""Codes worth another attempt. ``malformed_response``, ``auth_error``, ``bad_request`` are not."""

_RATE_CODES = frozenset({"rate_limited", "overloaded"})

_T = TypeVar("_T")


class ProviderCallError(ProviderError):
    """One failed attempt, classified: ``status`` (HTTP, if any) and ``retry_after`` (s)."""

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, code=code)
        self.status = status
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.code in RETRYABLE_CODES


# -- secrets ---------------------------------------------------------------------------

_KEY_PATTERN = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_\-*]{6,}")
REDACTED = "[redacted]"


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every secret (and anything shaped like ``sk-…``) replaced."""
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, REDACTED)
    return _KEY_PATTERN.sub(REDACTED, text)


# -- classification helpers ----------------------------------------------------------------


def status_code_error(
    status: int, detail: str, *, retry_after: float | None = None, label: str = ""
) -> ProviderCallError:
    """The error for an HTTP status: its code says whether a retry may help."""
    if status == 429:
        code = "rate_limited"
    elif status == 529:
        code = "overloaded"
    elif status == 408:
        code = "timeout"
    elif status >= 500:
        code = "server_error"
    elif status in (401, 403):
        code = "auth_error"
    elif status == 404:
        code = "not_found"
    elif 400 <= status < 500:
        code = "bad_request"
    else:
        code = f"http_{status}"
    prefix = f"{label}: " if label else ""
    return ProviderCallError(
        f"{prefix}HTTP {status}: {detail}", code=code, status=status, retry_after=retry_after
    )


def server_message(body: Any) -> str | None:
    """The server's own message in an error body (``{error: {message, type}}``), if any."""
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            kind = error.get("type")
            return f"{error['message']}" + (f" ({kind})" if isinstance(kind, str) else "")
    return None


def _error_detail(exc: Any) -> str:
    """The server's own message from an SDK status error, else the exception text."""
    server = server_message(getattr(exc, "body", None))
    if server is not None:
        return server
    message = getattr(exc, "message", None)
    return str(message if isinstance(message, str) else exc)


def http_status_error(
    status: int, headers: Mapping[str, str] | Any, raw: bytes, *, label: str
) -> ProviderCallError:
    """The error for an HTTP answer of ``status`` >= 400 with body ``raw``: the server's
    message when the body carries one (else the body), and its ``Retry-After``."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        body: Any = json.loads(text)
    except ValueError:
        body = None
    detail = server_message(body)
    if detail is None:
        detail = f"Error code: {status}" + (f" - {text}" if text else "")
    return status_code_error(
        status, detail[:500], retry_after=parse_retry_after(headers), label=label
    )


_DISCONNECTS = frozenset(
    {"ServerDisconnectedError", "RemoteProtocolError", "ClientPayloadError", "ReadError"}
)


def _disconnected(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if type(current).__name__ in _DISCONNECTS or "disconnect" in str(current).lower():
            return True
        current = current.__cause__ or current.__context__
    return False


_CONNECT_FAILURES = frozenset({"ClientConnectorError", "ConnectError", "ConnectionRefusedError"})
"""Classes (by name, anywhere in the MRO) of a failure to open the connection at all."""


_TIMEOUTS = (TimeoutError, asyncio.TimeoutError)


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and its ``__cause__`` / ``__context__`` chain, outermost first."""
    links: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        links.append(current)
        current = current.__cause__ or current.__context__
    return links


def _connect_failure(exc: BaseException) -> str | None:
    """The text of the connect failure behind ``exc`` (refused, DNS, ...), if it is one.

    The aiohttp bridge reports ``Cannot connect to host ...`` as ``httpx.ConnectTimeout``
    and the SDK turns that into ``APITimeoutError``: the cause tells what happened. A
    link that is itself a timeout (a connect that really timed out) is not a failure.
    """
    links = _chain(exc)
    for index, link in enumerate(links):
        if isinstance(link, _TIMEOUTS):
            return None
        names = {cls.__name__ for cls in type(link).__mro__}
        if names & _CONNECT_FAILURES or isinstance(link, socket.gaierror):
            if any(isinstance(deeper, _TIMEOUTS) for deeper in links[index + 1 :]):
                return None
            text = str(link) or type(link).__name__
            root = str(links[-1])
            core = re.sub(r"^\[Errno -?\d+\]\s*", "", root)
            if root and core not in text:
                text += f" ({root})"
            return text
    return None


def classify_exception(exc: BaseException, *, label: str) -> ProviderCallError:
    """Map an SDK or transport exception to a coded error (by class name: no SDK import)."""
    if isinstance(exc, ProviderCallError):
        return exc
    names = {cls.__name__ for cls in type(exc).__mro__}
    status = getattr(exc, "status_code", None)
    if "APIStatusError" in names and isinstance(status, int):
        response = getattr(exc, "response", None)
        retry_after = parse_retry_after(getattr(response, "headers", None))
        return status_code_error(
            status, _error_detail(exc)[:500], retry_after=retry_after, label=label
        )
    failure = _connect_failure(exc)
    if failure is not None:
        return ProviderCallError(
            redact(f"{label}: connection failed: {failure}"), code="connection_error"
        )
    timeouts = {"APITimeoutError", "TimeoutException", "ServerTimeoutError", "TimeoutError"}
    # the aiohttp bridge reports a dropped connection as a timeout: look at the cause
    if names & timeouts and not _disconnected(exc):
        return ProviderCallError(f"{label}: request timed out", code="timeout")
    if names & {
        "APIConnectionError",
        "HTTPError",  # httpx
        "ClientError",  # aiohttp
        "OSError",
        "EOFError",
        "IncompleteRead",
    }:
        cause = exc.__cause__ or exc.__context__
        detail = f"{type(exc).__name__}: {exc}"
        if cause is not None and str(cause) and str(cause) not in detail:
            detail += f" ({type(cause).__name__}: {cause})"
        return ProviderCallError(f"{label}: connection failed: {detail}", code="connection_error")
    if "APIError" in names:  # an error event inside a stream
        return ProviderCallError(f"{label}: {_error_detail(exc)[:500]}", code="api_error")
    return ProviderCallError(f"{label}: {type(exc).__name__}: {exc}", code="provider_error")


# -- adaptive concurrency ------------------------------------------------------------------


class AdaptiveLimiter:
    """An AIMD concurrency limit, shared by every call one provider makes.

    ``acquire`` is a plain counter check while there is room (no task, no future),
    so the limit costs nothing when nobody is rate-limited.
    """

    def __init__(self, max_connections: int, *, min_connections: int = 1) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.max_connections = max_connections
        self.min_connections = max(1, min(min_connections, max_connections))
        self.limit = float(max_connections)
        self.threshold = float(max_connections)
        self.inflight = 0
        self.peak_inflight = 0
        self.decreases = 0
        self._last_decrease = -1.0
        self._paused_until = 0.0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def current(self) -> int:
        """The number of calls allowed in flight now."""
        return max(self.min_connections, int(self.limit))

    async def acquire(self) -> float:
        """Wait for a slot (and for any ``Retry-After`` pause); return the start time."""
        if self.inflight < self.current and not self._waiters:
            self.inflight += 1
        else:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(future)
            try:
                await future
            except asyncio.CancelledError:
                if future.done() and not future.cancelled():
                    self._free()  # the slot was handed to us just as we were cancelled
                else:
                    self._discard(future)
                raise
        if self.inflight > self.peak_inflight:
            self.peak_inflight = self.inflight
        now = time.monotonic()
        if self._paused_until > now:
            try:
                await asyncio.sleep(self._paused_until - now)
            except asyncio.CancelledError:
                self._free()
                raise
            now = time.monotonic()
        return now

    def release(
        self, started: float, *, outcome: str = "ok", retry_after: float | None = None
    ) -> None:
        """Give the slot back. ``outcome``: ``ok``, ``rate_limited`` or ``error``."""
        if outcome == "ok":
            if self.limit < self.threshold:
                self.limit = min(self.threshold, self.limit + 1)
            elif self.limit < self.max_connections:
                self.limit = min(float(self.max_connections), self.limit + 1 / self.limit)
        elif outcome == "rate_limited":
            now = time.monotonic()
            if started >= self._last_decrease:  # once per congestion event
                self.threshold = max(float(self.min_connections), self.limit / 2)
                self.limit = self.threshold
                self._last_decrease = now
                self.decreases += 1
            if retry_after:
                self._paused_until = max(self._paused_until, now + retry_after)
        self._free()

    def _free(self) -> None:
        self.inflight -= 1
        while self._waiters and self.inflight < self.current:
            future = self._waiters.popleft()
            if not future.done():
                self.inflight += 1
                future.set_result(None)

    def _discard(self, future: asyncio.Future[None]) -> None:
        with contextlib.suppress(ValueError):
            self._waiters.remove(future)


_CLOSERS: set[asyncio.Task[None]] = set()


def close_on_loop_exit(client: Any) -> None:
    """Close a provider's HTTP session when its event loop shuts down (``asyncio.run``
    cancels tasks).

    A client's connections belong to one loop and warn when garbage-collected open; a
    task that waits for its cancellation closes them in time, without the
    harness or the CLI having to know which sessions exist.
    """

    async def wait_then_close() -> None:
        try:
            await asyncio.get_running_loop().create_future()
        finally:
            with contextlib.suppress(Exception):
                await client.close()

    task = asyncio.get_running_loop().create_task(wait_then_close(), name="close-http-session")
    _CLOSERS.add(task)
    task.add_done_callback(_CLOSERS.discard)


# -- the wrapper -------------------------------------------------------------------------------


if sys.version_info >= (3, 11):

    async def _with_timeout(awaitable: Awaitable[_T], seconds: float | None) -> _T:
        async with asyncio.timeout(seconds):
            return await awaitable

else:  # pragma: no cover - Python 3.10

    async def _with_timeout(awaitable: Awaitable[_T], seconds: float | None) -> _T:
        return await asyncio.wait_for(awaitable, seconds)


class ReliableProvider:
    """Retries, limits and times out a provider whose ``complete`` is one attempt."""

    def __init__(
        self,
        inner: Provider,
        *,
        policy: RetryPolicy | None = None,
        limiter: AdaptiveLimiter | None = None,
        timeout: float | None = 60.0,
        label: str | None = None,
        secrets: Iterable[str | None] = (),
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.policy = policy or RetryPolicy()
        self.limiter = limiter
        self.timeout = timeout
        self.label = label or inner.name
        self.secrets = tuple(s for s in secrets if s)
        self.attempts = 0
        self.retries = 0
        self._sleep = sleep

    async def complete(
        self, request: ProviderRequest, on_delta: Callable[[str], None] | None = None
    ) -> ProviderResponse:
        began = time.perf_counter()
        attempt = 0
        while True:
            chunks: list[str] = []
            error: ProviderCallError | None = None
            started = await self.limiter.acquire() if self.limiter is not None else 0.0
            try:
                self.attempts += 1
                response = await _with_timeout(
                    self.inner.complete(request, chunks.append if on_delta else None), self.timeout
                )
            except (TimeoutError, asyncio.TimeoutError):
                error = ProviderCallError(
                    f"{self.label}: no complete answer within the {self.timeout:g} s timeout",
                    code="timeout",
                )
            except ProviderCallError as exc:
                error = exc
            except ProviderError as exc:
                error = ProviderCallError(str(exc), code=exc.code)
            except BaseException:
                if self.limiter is not None:
                    self.limiter.release(started, outcome="error")
                raise
            if error is None:
                if self.limiter is not None:
                    self.limiter.release(started)
                if on_delta is not None:
                    for chunk in chunks:
                        on_delta(chunk)
                if response.latency_ms is None:
                    response.latency_ms = round((time.perf_counter() - began) * 1000, 3)
                return response
            if self.limiter is not None:
                outcome = "rate_limited" if error.code in _RATE_CODES else "error"
                self.limiter.release(started, outcome=outcome, retry_after=error.retry_after)
            self._give_up_unless_retryable(error, attempt)
            delay = self.policy.delay(attempt, error.retry_after)
            attempt += 1
            self.retries += 1
            await self._sleep(delay)

    def _give_up_unless_retryable(self, error: ProviderCallError, attempt: int) -> None:
        message = redact(str(error), self.secrets)
        if not error.retryable:
            raise ProviderCallError(
                message, code=error.code, status=error.status, retry_after=error.retry_after
            )
        if error.retry_after is not None and error.retry_after > self.policy.max_retry_after:
            raise ProviderCallError(
                f"{message} (the server asked to retry after {error.retry_after:g} s, more than "
                f"the {self.policy.max_retry_after:g} s this run waits)",
                code=error.code,
                status=error.status,
                retry_after=error.retry_after,
            )
        if attempt >= self.policy.max_retries:
            tries = attempt + 1
            raise ProviderCallError(
                f"{message} (gave up after {tries} attempt{'s' if tries != 1 else ''})",
                code=error.code,
                status=error.status,
                retry_after=error.retry_after,
            )
