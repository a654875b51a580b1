"""The proxy's upstream HTTP/1.1 client: keep-alive connections to the providers.

Every recorded or live call goes upstream through it, on the proxy's thread, so it is
lean: a pool of open connections per origin (no cookies, no redirects, no proxies from
the environment: the proxy is the client's only hop), the request written in one piece,
the answer read whole or piece by piece as it streams. A connection the server closed
while it sat in the pool is replaced, and the request sent again, before anything was
read of its answer. ``gzip``/``deflate`` answers are decoded (none is asked for).
Failures are :class:`ClientError` (or :class:`OSError`, :class:`asyncio.TimeoutError`):
the proxy decides what to retry.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from signal_eval_cli.errors import EvalError
from signal_eval_cli.proxy.wire import MAX_HEAD, BadMessage, Chunked, Headers, parse_head

__all__ = ["Client", "ClientError", "Response"]

_READ = 64 * 1024
_NO_BODY = frozenset({204, 304})
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
"""Sent again at once when a kept connection turns out closed (RFC 9112 9.3.1); others
fail, for the proxy's retries to decide."""
_Origin = tuple[str, str, int]


class ClientError(EvalError):
    """Upstream broke the exchange: closed the connection early, or answered other than
    HTTP/1.1. ``answered``: some of an answer had come (the request reached it)."""

    def __init__(self, message: str, *, answered: bool = False) -> None:
        super().__init__(message)
        self.answered = answered


class _Connection:
    __slots__ = ("deadline", "expired", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.deadline = 0.0
        """When the read under way (if one is) has waited too long."""
        self.expired = False

    def usable(self) -> bool:
        return not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


class Response:
    """An upstream answer whose head has been read: read its body with :meth:`read` or
    :meth:`chunks`, then :meth:`release` it (in a ``finally``)."""

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
        self._length: int | None = -1  # -1: to the end of the connection; None: chunked
        self._reusable = headers.get("connection", "").lower() != "close"  # type: ignore[union-attr]
        if method == "HEAD" or status in _NO_BODY:
            self._length = 0
        else:
            coding = headers.get("transfer-encoding")
            length = headers.get("content-length")
            if coding is not None and "chunked" in coding.lower():
                self._length = None
            elif length is not None and length.strip().isdigit():
                self._length = int(length)
        if self._length == -1:
            self._reusable = False
        self._done = False
        encoding = (headers.get("content-encoding") or "").lower()
        self._decoder: Any = None
        if encoding in ("gzip", "x-gzip", "deflate"):
            self._decoder = zlib.decompressobj(47 if encoding != "deflate" else zlib.MAX_WBITS)

    async def read(self) -> bytes:
        """The whole body."""
        if self._length is not None and self._length >= 0 and self._decoder is None:
            data: bytes = await self._client.io(
                self._connection, self._connection.reader.readexactly(self._length)
            )
            self._done = True
            return data
        return b"".join([piece async for piece in self.chunks()])

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives (decoded)."""
        connection, io = self._connection, self._client.io
        reader = connection.reader
        length = self._length
        decoder = self._decoder
        if length is None:
            chunked = Chunked(1 << 62)
            while True:
                data = await io(connection, reader.read(_READ))
                if not data:
                    raise ClientError("upstream closed the connection in a chunked answer")
                try:
                    piece, done = chunked.feed(data)
                except BadMessage as exc:
                    raise ClientError(f"upstream's chunked answer is malformed: {exc}") from exc
                if piece:
                    yield self._decoded(piece)
                if done:
                    if chunked.rest:
                        self._reusable = False
                    break
        else:
            left = length
            while left:
                data = await io(connection, reader.read(_READ if left < 0 else min(left, _READ)))
                if not data:
                    if left < 0:
                        break
                    raise ClientError("upstream closed the connection before the answer ended")
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
        try:
            return bytes(decoder.flush() if flush else decoder.decompress(data))
        except zlib.error as exc:
            raise ClientError(f"upstream's compressed answer is corrupt: {exc}") from exc

    def release(self) -> None:
        """Give the connection back to the pool (a whole answer was read) or close it."""
        connection, self._connection = self._connection, None  # type: ignore[assignment]
        if connection is None:
            return
        if self._done and self._reusable and connection.usable():
            self._client.idle.setdefault(self._origin, []).append(connection)
        else:
            connection.close()


class Client:
    """Keep-alive HTTP/1.1 to any origin; ``read_timeout``: longest wait for a byte."""

    def __init__(self, read_timeout: float, connect_timeout: float = 30.0) -> None:
        self.read_timeout = read_timeout
        self.connect_timeout = connect_timeout
        self.idle: dict[_Origin, list[_Connection]] = {}
        self._ssl: Any = None
        self._reading: set[_Connection] = set()
        self._watchdog: asyncio.TimerHandle | None = None

    def _watch(self) -> None:
        """Drop each connection whose read has waited past its deadline (half an answer
        is no use). One check every so often: a timer per read would cost more."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        for connection in [c for c in self._reading if c.deadline <= now]:
            connection.expired = True
            connection.writer.transport.abort()
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
                    "upstream closed the connection before the answer ended",
                    answered=bool(exc.partial),
                ) from exc
            raise
        except asyncio.LimitOverrunError as exc:
            raise ClientError("upstream's answer head is too large", answered=True) from exc
        finally:
            self._reading.discard(connection)
        if connection.expired:
            raise self._timeout()
        return data

    def _timeout(self) -> asyncio.TimeoutError:
        return asyncio.TimeoutError(f"no answer from upstream in {self.read_timeout:g} s")

    async def request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> Response:
        """Send the request; the answer once its head is read."""
        parts = urlsplit(url)
        secure = parts.scheme == "https"
        host = parts.hostname or ""
        port = parts.port or (443 if secure else 80)
        origin = (parts.scheme, host, port)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        default = port == (443 if secure else 80)
        lines = [f"{method} {target} HTTP/1.1\r\nHost: {parts.netloc if not default else host}\r\n"]
        lines += [f"{name}: {value}\r\n" for name, value in headers.items()]
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}\r\n")
        lines.append("\r\n")
        message = "".join(lines).encode("latin-1") + (body or b"")
        while True:
            connection, reused = await self._connection(origin, secure)
            try:
                connection.writer.write(message)
                return await self._answer(origin, connection, method)
            except (ClientError, ConnectionError) as exc:
                connection.close()
                answered = isinstance(exc, ClientError) and exc.answered
                if reused and method in _IDEMPOTENT and not answered:
                    continue  # the server closed it in the pool: again, on a new one
                raise
            except BaseException:
                connection.close()
                raise

    async def _answer(self, origin: _Origin, connection: _Connection, method: str) -> Response:
        while True:
            head = await self.io(connection, connection.reader.readuntil(b"\r\n\r\n"))
            try:
                start, headers = parse_head(head[:-4])
                version, status_text = start.split(" ", 2)[:2]
                status = int(status_text)
                if not version.startswith("HTTP/1.") or not 100 <= status <= 999:
                    raise ValueError(start)
            except (BadMessage, ValueError) as exc:
                raise ClientError(
                    f"upstream answered other than HTTP/1.1: {head[:80]!r}", answered=True
                ) from exc
            if status >= 200 or status == 101:
                response = Response(self, origin, connection, status, headers, method)
                if (
                    version == "HTTP/1.0"
                    and "keep-alive" not in (headers.get("connection") or "").lower()
                ):
                    response._reusable = False
                return response
            # 1xx (103 Early Hints): the answer follows

    async def _connection(self, origin: _Origin, secure: bool) -> tuple[_Connection, bool]:
        idle = self.idle.get(origin)
        while idle:
            connection = idle.pop()
            if connection.usable():
                return connection, True
            connection.close()
        if secure and self._ssl is None:
            import ssl

            self._ssl = ssl.create_default_context()
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(
                origin[1],
                origin[2],
                ssl=self._ssl if secure else None,
                server_hostname=origin[1] if secure else None,
                limit=MAX_HEAD,
            ),
            self.connect_timeout,
        )
        return _Connection(reader, writer), False

    async def close(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
        idle, self.idle = self.idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()
