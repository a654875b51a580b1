"""Keep-alive HTTP/1.1 to the model APIs: the one client the providers and the proxy use.

Every model call of a run goes through it (a provider's, the judge's, the proxy's
upstream call), so it is lean: a pool of open connections per origin, the request
written in one piece, the answer read whole or piece by piece as it streams, no
cookies, no redirects. ``https`` is TLS with the system's trusted certificates (and
``SSL_CERT_FILE``), the host name sent (SNI) and checked. ``max_connections`` bounds
the connections in use at once (a request waits for one); ``trust_env`` sends requests
through the proxy ``HTTP(S)_PROXY`` names (:mod:`.proxies`): ``http`` requests in
absolute form, ``https`` through a ``CONNECT`` tunnel. A connection the server closed
while it sat in the pool is replaced before anything is sent on it (and an idempotent
request sent again if that shows only later). ``gzip``/``deflate`` answers are decoded.
Failures are :class:`ClientError` (:class:`ConnectError` when no connection could be
opened) or :class:`asyncio.TimeoutError`: the caller decides what to retry.
"""

from __future__ import annotations

import asyncio
import functools
import os
import select
import socket
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from typing import Any
from urllib.parse import SplitResult, urlsplit

from signal_eval_cli.errors import EvalError, InputError
from signal_eval_cli.transport.proxies import Proxy, proxy_for
from signal_eval_cli.transport.wire import (
    MAX_HEAD,
    BadMessage,
    Chunked,
    Headers,
    content_length,
    parse_head,
)

__all__ = ["MAX_ANSWER", "Client", "ClientError", "ConnectError", "Response", "origin_of"]

_READ = 64 * 1024
MAX_ANSWER = 256 * 2**20
"""Longest body :meth:`Response.read` and :meth:`Response.chunks` take (decoded): a model API's answer is far
shorter (a large embeddings batch, tens of MiB), and a server sending one without end
(or a compression bomb) would fill the memory of the run before its timeout."""
_NO_BODY = frozenset({204, 304})
_IDENTITY = frozenset({"", "identity"})
"""Transfer codings that change nothing (``identity``: from RFC 2616, still sent)."""
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
"""Sent again at once when a kept connection turns out closed (RFC 9112 9.3.1); others
fail, for the caller's retries to decide."""
_Origin = tuple[str, str, int]


def checked_base_url(base: str, label: str) -> str:
    """``base`` without its trailing ``/``, once it is known to be a URL a call can be
    sent to (else each case's every attempt would fail the same way): an
    :class:`InputError` naming ``label`` (where the URL came from) otherwise."""
    try:
        parts = urlsplit(base)
        parts.port  # noqa: B018 (a port that is not a number, or too large, raises)
    except ValueError as exc:
        raise InputError(f"{label} {base!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"{label} {base!r}: not an http(s)://host URL")
    return base.rstrip("/")


def origin_of(url: str | SplitResult) -> _Origin:
    """``(scheme, host, port)`` of a URL, the port its scheme's when none is given: the
    server a connection is kept for (and a key is meant for)."""
    parts = urlsplit(url) if isinstance(url, str) else url
    return (
        parts.scheme,
        parts.hostname or "",
        parts.port or (443 if parts.scheme == "https" else 80),
    )


@functools.lru_cache(maxsize=64)
def _addressed(url: str) -> tuple[_Origin, str, str]:
    """``url``'s origin, its ``Host`` header and the request target: read once per URL (a
    run sends every call to the same one; a split URL's ``hostname`` and ``port`` parse
    the address again each time they are read, 5 us a request)."""
    parts = urlsplit(url)
    origin = scheme, host, port = origin_of(parts)
    authority = f"[{host}]" if ":" in host else host
    if port != (443 if scheme == "https" else 80):
        authority += f":{port}"
    return origin, authority, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


class ClientError(EvalError):
    """Upstream broke the exchange: closed the connection early, or answered other than
    HTTP/1.1. ``answered``: some of an answer had come (the request reached it)."""

    def __init__(self, message: str, *, answered: bool = False) -> None:
        super().__init__(message)
        self.answered = answered


class ConnectError(ClientError):
    """No connection could be opened (refused, no such host, TLS refused, the proxy
    refused the tunnel): the request was never sent."""


_HIGH_WATER = 2 * _READ
"""Bytes kept unread before the connection stops reading (until a read wants more)."""


def _head_end(buffer: bytearray) -> tuple[bytes, int] | None:
    """The head block at the start of ``buffer`` (its blank line dropped) and its length
    with that line; None while it has not all come. Lines end with CRLF; a server that
    ends them with a bare LF is read too (RFC 9112 2.2), as aiohttp and the SDKs' httpx
    read it: its head would otherwise never end. A start line ended by CRLF makes it a
    CRLF head (the blank line right after it, or after the last header's CRLF)."""
    end = buffer.find(b"\n")
    if end < 0:
        return None
    if end and buffer[end - 1] == 13:  # "\r"
        if len(buffer) < end + 3:
            return None
        if buffer[end + 1 : end + 3] == b"\r\n":
            return bytes(buffer[: end - 1]), end + 3
        last = buffer.find(b"\n\r\n", end + 1)
        if last < 0:
            return None
        return bytes(buffer[: last - 1 if buffer[last - 1] == 13 else last]), last + 3
    lines: list[bytes] = []
    start = 0
    while True:
        end = buffer.find(b"\n", start)
        if end < 0:
            return None
        line = bytes(buffer[start:end]).rstrip(b"\r\n")
        start = end + 1
        if not line:
            return b"\r\n".join(lines), start
        lines.append(line)


class _Connection(asyncio.Protocol):
    """One connection as a protocol: what arrives is kept in :attr:`buffer` and wakes the
    read waiting for it, and an answer is read in two steps (its head, then its body),
    each taken whole from the buffer when it has come. asyncio's streams did it in three
    layers (a protocol feeding a ``StreamReader``, written through a ``StreamWriter``)
    and five reads an answer, each with its own wait."""

    __slots__ = ("buffer", "deadline", "eof", "error", "expired", "paused", "transport", "waiter")

    def __init__(self) -> None:
        self.transport: asyncio.Transport = None  # type: ignore[assignment]  # connection_made
        self.buffer = bytearray()
        self.eof = False
        """Nothing more will come (the server closed, or the connection broke: :attr:`error`)."""
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.paused = False
        self.deadline = 0.0
        """When the read under way (if one is) has waited too long."""
        self.expired = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > _HIGH_WATER and not self.paused:  # a body read slower than sent
            self.paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # close: a server that stopped sending ends the exchange

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self._wake()

    def _wake(self) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _more(self) -> bool:
        """Wait for more bytes: False when none will come (a broken connection raises)."""
        if self.error is not None:
            raise self.error
        if self.eof:
            return False
        if self.paused:
            self.paused = False
            self.transport.resume_reading()
        self.waiter = waiter = asyncio.get_running_loop().create_future()
        await waiter
        return True

    def _take(self, size: int) -> bytes:
        buffer = self.buffer
        data = bytes(buffer[:size])
        del buffer[:size]
        return data

    async def head(self) -> bytes:
        """An answer's head block, its blank line dropped: see :func:`_head_end`."""
        while True:
            found = _head_end(self.buffer)
            if found is not None and found[1] <= MAX_HEAD:
                del self.buffer[: found[1]]
                return found[0]
            if found is not None or len(self.buffer) > MAX_HEAD:
                raise asyncio.LimitOverrunError("the head is too long", len(self.buffer))
            if not await self._more():
                raise asyncio.IncompleteReadError(self._take(len(self.buffer)), None)

    async def exactly(self, size: int) -> bytes:
        """The next ``size`` bytes."""
        while len(self.buffer) < size:
            if not await self._more():
                raise asyncio.IncompleteReadError(self._take(len(self.buffer)), size)
        return self._take(size)

    async def some(self, most: int) -> bytes:
        """What has come (at most ``most`` bytes; waits for some); ``b""`` at the end."""
        while not self.buffer:
            if not await self._more():
                return b""
        return self._take(most)

    def usable(self) -> bool:
        return not self.eof and not self.transport.is_closing()

    def idle(self) -> bool:
        """Open and with nothing to read, as a kept connection is: one the server closed
        (or wrote to unasked) is readable before the event loop has seen it (say, while
        a case's CPU work holds the loop), and a request sent on it would be lost."""
        if self.buffer or not self.usable():  # bytes no request asked for
            return False
        sock = self.transport.get_extra_info("socket")
        if sock is None or not hasattr(select, "poll"):
            return True
        poll = select.poll()  # not select.select: it fails on descriptors above 1023
        poll.register(sock.fileno(), select.POLLIN)
        return not poll.poll(0)

    def close(self) -> None:
        self.transport.close()


class Response:
    """An answer whose head has been read: read its body with :meth:`read` or
    :meth:`chunks`, then :meth:`release` it (in a ``finally``: it holds a connection)."""

    def __init__(
        self,
        client: Client,
        origin: _Origin,
        connection: _Connection,
        status: int,
        headers: Headers,
        method: str,
    ) -> None:
        self.status = status
        self.headers = headers
        self._client, self._origin, self._connection = client, origin, connection
        self._length = 0 if method == "HEAD" or status in _NO_BODY else _body_length(headers)
        self._reusable = (
            self._length != -1
            and headers.get("connection", "").lower() != "close"  # type: ignore[union-attr]
            # both lengths: the answer may be smuggling another (RFC 9112 6.3)
            and not (self._length is None and "content-length" in headers.by_name)
        )
        self._done = False
        encoding = (headers.get("content-encoding") or "").lower()
        self._decoder: Any = None
        if encoding in ("gzip", "x-gzip", "deflate"):
            self._decoder = zlib.decompressobj(47 if encoding != "deflate" else zlib.MAX_WBITS)
        self._raw_deflate = encoding == "deflate"
        """Not known yet whether ``deflate`` comes with its zlib header (RFC 9110) or, as
        some servers send it, without."""

    async def read(self) -> bytes:
        """The whole body, at most :data:`MAX_ANSWER` bytes (decoded)."""
        length = self._length
        if length is not None and length > MAX_ANSWER:
            raise self._too_large()
        if length is not None and length >= 0 and self._decoder is None:
            data: bytes = await self._client.io(self._connection, self._connection.exactly(length))
            self._done = True
            return data
        return b"".join([piece async for piece in self.chunks()])

    def _too_large(self) -> ClientError:
        return ClientError(
            f"the answer's body is larger than {MAX_ANSWER // 2**20} MiB", answered=True
        )

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives (decoded), up to :data:`MAX_ANSWER` bytes: a stream of
        events without end is cut off as a whole answer is."""
        size = 0
        async with aclosing(self._pieces()) as pieces:
            async for piece in pieces:
                size += len(piece)
                if size > MAX_ANSWER:
                    raise self._too_large()
                yield piece

    async def _pieces(self) -> AsyncGenerator[bytes, None]:
        connection, io = self._connection, self._client.io
        length = self._length
        decoder = self._decoder
        if length is None:
            chunked = Chunked(1 << 62)
            while True:
                data = await io(connection, connection.some(_READ))
                if not data:
                    raise ClientError("the server closed the connection in a chunked answer")
                try:
                    piece, done = chunked.feed(data)
                except BadMessage as exc:
                    raise ClientError(f"the chunked answer is malformed: {exc}") from exc
                if piece:
                    yield self._decoded(piece)
                if done:
                    if chunked.rest:
                        self._reusable = False
                    break
        else:
            left = length
            while left:
                data = await io(
                    connection, connection.some(_READ if left < 0 else min(left, _READ))
                )
                if not data:
                    if left < 0:
                        break
                    raise ClientError("the server closed the connection before the answer ended")
                if left > 0:
                    left -= len(data)
                yield self._decoded(data)
        if decoder is not None:
            tail = self._decoded(b"", flush=True)
            if tail:
                yield tail
        self._done = True

    def _decoded(self, data: bytes, *, flush: bool = False) -> bytes:
        decoder = self._decoder
        if decoder is None:
            return data
        if self._raw_deflate and data:
            self._raw_deflate = False
            if data[0] & 0x0F != 8:  # not a zlib header's compression method
                self._decoder = decoder = zlib.decompressobj(-zlib.MAX_WBITS)
        try:
            decoded = bytes(decoder.flush() if flush else decoder.decompress(data))
        except zlib.error as exc:
            raise ClientError(f"the compressed answer is corrupt: {exc}") from exc
        if flush and not decoder.eof:  # the body ended inside the compressed stream
            raise ClientError("the compressed answer was cut off before its end")
        return decoded

    def release(self) -> None:
        """Give the connection back to the pool (a whole answer was read) or close it."""
        connection, self._connection = self._connection, None  # type: ignore[assignment]
        if connection is None:
            return
        if self._done and self._reusable and connection.usable():
            self._client.idle.setdefault(self._origin, []).append(connection)
        else:
            connection.close()
        self._client.free()


def _body_length(headers: Headers) -> int | None:
    """How an answer's body ends: after ``Content-Length`` bytes, with the last chunk
    (``None``), or with the connection (-1). A length that is not one number or a
    transfer coding other than ``chunked`` is a :class:`ClientError`: guessed, the body
    would be read past its end (or as junk) until the timeout."""
    coding = headers.get("transfer-encoding")
    if coding is not None:
        codings = [c for c in "".join(coding.lower().split()).split(",") if c not in _IDENTITY]
        if codings == ["chunked"]:
            return None  # it overrides Content-Length (RFC 9112 6.3)
        if codings:
            raise ClientError(f"unsupported Transfer-Encoding {coding!r}", answered=True)
    length = headers.get("content-length")
    if length is None:
        return -1
    try:
        return content_length(length)
    except BadMessage as exc:
        raise ClientError(f"the answer's {exc}", answered=True) from None


_tls: dict[tuple[str | None, str | None], Any] = {}


def _tls_context() -> Any:
    """The system's trusted certificates (or ``SSL_CERT_FILE``/``SSL_CERT_DIR``'s),
    verified; loaded once for each setting of those (about 20 ms of CPU)."""
    trust = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    context = _tls.get(trust)
    if context is None:
        import ssl

        context = _tls[trust] = ssl.create_default_context()
    return context


class Client:
    """Keep-alive HTTP/1.1 to any origin; ``read_timeout``: longest wait for a byte.

    A client belongs to the event loop it is first used on (its connections do)."""

    def __init__(
        self,
        read_timeout: float,
        connect_timeout: float = 30.0,
        *,
        max_connections: int | None = None,
        trust_env: bool = False,
    ) -> None:
        self.read_timeout = read_timeout
        self.connect_timeout = connect_timeout
        self.trust_env = trust_env
        self.idle: dict[_Origin, list[_Connection]] = {}
        self._slots = asyncio.Semaphore(max_connections) if max_connections else None
        self._proxies: dict[_Origin, Proxy | None] = {}
        self._reading: set[_Connection] = set()
        self._watchdog: asyncio.TimerHandle | None = None

    def _watch(self) -> None:
        """Drop each connection whose read has waited past its deadline (half an answer
        is no use). One check every so often: a timer per read would cost more."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        for connection in [c for c in self._reading if c.deadline <= now]:
            connection.expired = True
            connection.transport.abort()
        self._watchdog = loop.call_later(min(1.0, self.read_timeout / 4), self._watch)

    async def io(self, connection: _Connection, read: Any) -> Any:
        """Await one read of an answer on ``connection``, at most about
        :attr:`read_timeout` seconds."""
        loop = asyncio.get_running_loop()
        if self._watchdog is None:
            self._watch()
        connection.deadline = loop.time() + self.read_timeout
        self._reading.add(connection)
        try:
            data = await read
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            if connection.expired:
                raise self._timeout() from exc
            if isinstance(exc, asyncio.IncompleteReadError):
                raise ClientError(
                    "the server closed the connection before the answer ended",
                    answered=bool(exc.partial),
                ) from exc
            raise ClientError(f"the connection broke: {exc}") from exc
        except asyncio.LimitOverrunError as exc:
            raise ClientError("the answer's head is too large", answered=True) from exc
        finally:
            self._reading.discard(connection)
        if connection.expired:
            raise self._timeout()
        return data

    def _timeout(self) -> asyncio.TimeoutError:
        return asyncio.TimeoutError(f"no answer in {self.read_timeout:g} s")

    def free(self) -> None:
        """A connection in use is back in the pool or closed: another request may go."""
        if self._slots is not None:
            self._slots.release()

    def proxy(self, origin: _Origin) -> Proxy | None:
        """The proxy requests to ``origin`` go through (looked up once per origin)."""
        if not self.trust_env:
            return None
        if origin not in self._proxies:
            self._proxies[origin] = proxy_for(origin[0], origin[1])
        return self._proxies[origin]

    async def request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> Response:
        """Send the request; the answer once its head is read."""
        origin, authority, target = _addressed(url)
        secure = origin[0] == "https"
        if not secure and origin[0] != "http":
            raise ConnectError(f"cannot send a request to {url!r}: not an http(s) URL")
        proxy = self.proxy(origin)
        if proxy is not None and not secure:  # a plain-HTTP proxy takes the absolute URL
            target = f"http://{authority}{target}"
            headers = {**headers, **proxy.headers}
        lines = [f"{method} {target} HTTP/1.1\r\nHost: {authority}\r\n"]
        lines += [f"{name}: {value}\r\n" for name, value in headers.items()]
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}\r\n")
        lines.append("\r\n")
        message = "".join(lines).encode("latin-1") + (body or b"")
        if self._slots is not None:
            await self._slots.acquire()
        try:
            while True:
                connection, reused = await self._connection(origin, proxy)
                try:
                    connection.transport.write(message)
                    return await self._answer(origin, connection, method)
                except ClientError as exc:
                    connection.close()
                    if reused and method in _IDEMPOTENT and not exc.answered:
                        continue  # the server closed it in the pool: again, on a new one
                    raise
                except BaseException:
                    connection.close()
                    raise
        except BaseException:
            self.free()
            raise

    async def _answer(self, origin: _Origin, connection: _Connection, method: str) -> Response:
        while True:
            head: bytes = await self.io(connection, connection.head())
            try:
                start, headers = parse_head(head)
                version, status_text = start.split(" ", 2)[:2]
                status = int(status_text)
                if not version.startswith("HTTP/1.") or not 100 <= status <= 999:
                    raise ValueError(start)
            except (BadMessage, ValueError) as exc:
                raise ClientError(
                    f"the server answered other than HTTP/1.1: {head[:80]!r}", answered=True
                ) from exc
            if status == 101:  # never asked for: the body would be another protocol
                raise ClientError("the server switched protocols (HTTP 101) unasked", answered=True)
            if status >= 200:
                response = Response(self, origin, connection, status, headers, method)
                if (
                    version == "HTTP/1.0"
                    and "keep-alive" not in (headers.get("connection") or "").lower()
                ):
                    response._reusable = False
                return response
            # 1xx (103 Early Hints): the answer follows

    async def _connection(self, origin: _Origin, proxy: Proxy | None) -> tuple[_Connection, bool]:
        idle = self.idle.get(origin)
        while idle:
            connection = idle.pop()
            if connection.idle():
                return connection, True
            connection.close()
        scheme, host, port = origin
        tls = _tls_context() if scheme == "https" else None
        where = f"{host}:{port}" + (
            f" through the proxy {proxy.host}:{proxy.port}" if proxy else ""
        )
        loop = asyncio.get_running_loop()
        try:
            if proxy is None or tls is None:
                _, connection = await asyncio.wait_for(
                    loop.create_connection(
                        _Connection,
                        *((host, port) if proxy is None else (proxy.host, proxy.port)),
                        ssl=tls,
                        server_hostname=host if tls is not None else None,
                    ),
                    self.connect_timeout,
                )
            else:
                connection = await asyncio.wait_for(
                    self._tunnel(proxy, host, port, tls), self.connect_timeout
                )
        except (asyncio.TimeoutError, TimeoutError):
            raise asyncio.TimeoutError(
                f"no connection to {where} in {self.connect_timeout:g} s"
            ) from None
        except OSError as exc:
            why = exc.strerror or str(exc) or type(exc).__name__
            raise ConnectError(f"Cannot connect to host {where} [{why}]") from exc
        return connection, False

    async def _tunnel(self, proxy: Proxy, host: str, port: int, tls: Any) -> _Connection:
        """A TLS connection to ``host`` through ``proxy``'s ``CONNECT`` tunnel (the proxy
        sees only where to, never the request). On a socket of its own, so that TLS can
        start on it after the proxy's answer on any Python version."""
        loop = asyncio.get_running_loop()
        sock = await _connected_socket(proxy.host, proxy.port)
        try:
            authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            lines = [f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"]
            lines += [f"{name}: {value}\r\n" for name, value in proxy.headers.items()]
            await loop.sock_sendall(sock, "".join([*lines, "\r\n"]).encode("latin-1"))
            head = b""
            while b"\r\n\r\n" not in head:  # the proxy says nothing more until TLS starts
                data = await loop.sock_recv(sock, 4096)
                if not data:
                    raise ConnectionError("the proxy closed the connection, no tunnel made")
                if len(head) > MAX_HEAD:
                    raise ConnectionError("the proxy's answer to CONNECT is too large")
                head += data
            start = head.split(b"\r\n", 1)[0].decode("latin-1")
            status = start.split(" ", 2)[1:2]
            if not status or not status[0].startswith("2"):
                raise ConnectionError(f"the proxy refused the tunnel: {start[:120]}")
            _, connection = await loop.create_connection(
                _Connection, sock=sock, ssl=tls, server_hostname=host
            )
            return connection
        except BaseException:
            sock.close()
            raise

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        idle, self.idle = self.idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()


async def _connected_socket(host: str, port: int) -> socket.socket:
    """A non-blocking socket connected to ``host:port`` (each address in turn)."""
    loop = asyncio.get_running_loop()
    error: OSError = OSError(f"no address for {host}")
    for family, kind, proto, _, address in await loop.getaddrinfo(
        host, port, type=socket.SOCK_STREAM
    ):
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, address)
        except OSError as exc:
            sock.close()
            error = exc
            continue
        return sock
    raise error
