"""The proxy's HTTP/1.1 server: an :class:`asyncio.Protocol` per connection, no framework.

Every model call of a run passes through it, on the thread that also records and
traces, so it does only what the proxy needs: keep-alive and pipelined requests (answered
in order), bodies by ``Content-Length`` or ``chunked`` in any number of packets,
``Expect: 100-continue``, whole answers and streamed (``chunked``) ones. A malformed
request is answered 400 (413, 431, 501 as fits) and its connection closed, never left
hanging. The handler is ``async handler(request, reply)``; a whole answer is sent, and a
streamed one ended, once it returns: what it does after answering is done before the
client can have read the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from signal_eval_cli.transport.wire import (
    MAX_HEAD,
    BadMessage,
    Chunked,
    Headers,
    body_length,
    parse_head,
    reason,
)

__all__ = ["MAX_BODY", "Handler", "Reply", "Request", "Server"]

MAX_BODY = 64 * 1024 * 1024
"""Largest request body taken (images and documents inline make model requests large)."""
_LINGER_S = 5.0
"""How long a connection refused for a bad request is read (and ignored) before closing."""


@dataclass(slots=True)
class Request:
    method: str
    target: str
    """As sent (percent-encoded): ``path?query``."""
    version: str
    headers: Headers
    body: bytes

    @property
    def path(self) -> str:
        return self.target.partition("?")[0]

    @property
    def query(self) -> str:
        return self.target.partition("?")[2]


class Reply:
    """The answer to one request: :meth:`send` a whole one, or :meth:`start` a stream and
    :meth:`write` to it. Writing to a client that left raises :class:`ConnectionError`."""

    __slots__ = ("_chunked", "_connection", "_whole", "keep_alive", "sent", "streaming")

    def __init__(self, connection: _Connection, keep_alive: bool, chunked: bool = True) -> None:
        self._connection = connection
        self.keep_alive = keep_alive
        self._chunked = chunked
        """HTTP/1.1: a stream is sent ``chunked``; HTTP/1.0: as it comes, then closed."""
        self.sent = False
        self.streaming = False
        self._whole = b""

    def _head(self, status: int, headers: Mapping[str, str], framing: str) -> bytes:
        lines = [f"HTTP/1.1 {status} {reason(status)}\r\n"]
        lines += [f"{name}: {value}\r\n" for name, value in headers.items()]
        lines.append(framing)
        if not self.keep_alive:
            lines.append("Connection: close\r\n")
        lines.append("\r\n")
        return "".join(lines).encode("latin-1")

    def send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        """The whole answer: sent once the handler has returned (so what the handler does
        after this, it has done before the client hears of it)."""
        if self.sent:
            return
        self.sent = True
        head = self._head(
            status, {"Content-Type": content_type}, f"Content-Length: {len(body)}\r\n"
        )
        self._whole = head + body

    def error(self, status: int, message: str, code: str = "proxy_error") -> None:
        """An error answer in the providers' JSON shape."""
        body = {"error": {"message": message, "type": code, "code": code}}
        self.send(status, json.dumps(body).encode())

    async def start(self, status: int, headers: Mapping[str, str]) -> None:
        """Begin a streamed answer (``chunked``)."""
        if self._connection.closed:
            raise ConnectionError("the client has gone")
        self.sent = self.streaming = True
        if not self._chunked:
            self.keep_alive = False
        framing = "Transfer-Encoding: chunked\r\n" if self._chunked else ""
        self._connection.write(self._head(status, headers, framing))

    async def write(self, data: bytes) -> None:
        if not data:
            return
        if self._connection.closed:
            raise ConnectionError("the client has gone")
        self._connection.write(b"%x\r\n%b\r\n" % (len(data), data) if self._chunked else data)
        await self._connection.drained()

    def finish(self) -> None:
        """Send the whole answer, or end the streamed one (after the handler has returned)."""
        if self._whole:
            self._connection.write(self._whole)
            self._whole = b""
        if self.streaming:
            self.streaming = False
            if self._chunked:
                self._connection.write(b"0\r\n\r\n")


Handler = Callable[[Request, Reply], Awaitable[None]]


class _Connection(asyncio.Protocol):
    """One client connection: parses requests as bytes come, one handler at a time."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._buffer = bytearray()  # grown in place: a large body comes in many pieces
        self._head: tuple[str, str, str, Headers, int | None, int] | None = None
        self._chunked: Chunked | None = None
        self._parts: list[bytes] = []
        self._busy = False
        self._eof = False
        self._discard = False
        self._continued = False
        self._paused: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None
        """The handler's task for the request being answered."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.connections.discard(self)
        if self._paused is not None and not self._paused.done():
            self._paused.set_exception(ConnectionError("the client has gone"))
            self._paused.exception()  # retrieved: nobody may be waiting

    def pause_writing(self) -> None:
        if self._paused is None or self._paused.done():
            self._paused = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._paused is not None and not self._paused.done():
            self._paused.set_result(None)

    async def drained(self) -> None:
        if self._paused is not None and not self._paused.done():
            await self._paused

    def write(self, data: bytes) -> None:
        if not self.closed and self.transport is not None:
            self.transport.write(data)

    def data_received(self, data: bytes) -> None:
        if self._discard:
            return
        self._buffer += data
        if not self._busy:
            self._next()

    def eof_received(self) -> bool:
        """The client sent all it will: finish the answer being made, then close."""
        self._eof = True
        return self._busy and not self._discard

    def _next(self) -> None:
        """Start the handler on the next whole request in the buffer, if there is one."""
        try:
            request = self._parse()
        except BadMessage as exc:
            reply = Reply(self, keep_alive=False)
            reply.error(exc.status, f"signal-eval proxy: bad request: {exc}", "bad_request")
            reply.finish()
            self._refuse()
            return
        if request is None:
            return
        self._busy = True
        reply = Reply(self, _keep_alive(request), chunked=request.version == "HTTP/1.1")
        task = asyncio.get_running_loop().create_task(self._run(request, reply))
        self.server.handling.add(task)
        self._task = task  # forgotten by _run as it ends: no done callback, one step less

    async def _run(self, request: Request, reply: Reply) -> None:
        try:
            await self.server.handler(request, reply)
        except Exception as exc:  # a bug: the client still gets an answer, not a hang
            if not reply.sent:
                reply.error(500, f"signal-eval proxy: {type(exc).__name__}: {exc}")
            else:
                self._close()
        finally:
            if self._task is not None:
                self.server.handling.discard(self._task)
        reply.finish()
        self._busy = False
        if not reply.keep_alive:
            self._close()
        elif not self.closed:
            if self._buffer:
                self._next()  # a request pipelined behind this one
            if self._eof and not self._busy:
                self._close()

    def _refuse(self) -> None:
        """Close after a bad request: end sending at once, but read on a while first, so
        the client gets the answer, not a reset for the bytes it was still sending."""
        self._busy = self._discard = True
        transport = self.transport
        if transport is not None and transport.can_write_eof():
            transport.write_eof()
            asyncio.get_running_loop().call_later(_LINGER_S, transport.close)
        else:
            self._close()

    def _close(self) -> None:
        self._busy = True  # nothing more is read from a connection being closed
        if self.transport is not None:
            self.transport.close()

    def _parse(self) -> Request | None:
        if self._head is None:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > MAX_HEAD:
                    raise BadMessage("request head too large", 431)
                return None
            if end > MAX_HEAD:
                raise BadMessage("request head too large", 431)
            start, headers = parse_head(bytes(self._buffer[:end]))
            method, target, version = _request_line(start)
            length = body_length(headers)
            if length is not None and length > MAX_BODY:
                raise BadMessage("request body too large", 413)
            self._head = (method, target, version, headers, length, end + 4)
            del self._buffer[: end + 4]
            self._continued = False
            if length is None:
                self._chunked = Chunked(MAX_BODY)
        method, target, version, headers, length, _ = self._head
        if length is None:
            assert self._chunked is not None
            data, done = self._chunked.feed(bytes(self._buffer))
            self._parts.append(data)
            self._buffer.clear()
            if not done:
                self._continue(headers, version)
                return None
            body, self._buffer = b"".join(self._parts), bytearray(self._chunked.rest)
            self._parts, self._chunked = [], None
        else:
            if len(self._buffer) < length:
                self._continue(headers, version)
                return None
            body = bytes(self._buffer[:length])
            del self._buffer[:length]
        self._head = None
        return Request(method, target, version, headers, body)

    def _continue(self, headers: Headers, version: str) -> None:
        """Tell a client waiting to send its body (``Expect: 100-continue``) to go on."""
        if not self._continued and version == "HTTP/1.1":
            expect = headers.get("expect")
            if expect is not None and expect.lower() == "100-continue":
                self.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self._continued = True


def _request_line(line: str) -> tuple[str, str, str]:
    parts = line.split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[0].isupper():
        raise BadMessage(f"malformed request line {line[:80]!r}")
    method, target, version = parts
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise BadMessage(f"unsupported HTTP version {version[:20]!r}", 505)
    if target.startswith(("http://", "https://")):  # absolute form: the path is what counts
        target = "/" + target.split("/", 3)[3] if target.count("/") >= 3 else "/"
    if not target.startswith("/"):
        raise BadMessage(f"malformed request target {target[:80]!r}")
    return method, target, version


def _keep_alive(request: Request) -> bool:
    connection = (request.headers.get("connection") or "").lower()
    if request.version == "HTTP/1.0":
        return "keep-alive" in connection
    return "close" not in connection


class Server:
    """Serves ``handler`` on an already listening socket until :meth:`close`."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections: set[_Connection] = set()
        self.handling: set[asyncio.Task[None]] = set()
        self._server: asyncio.AbstractServer | None = None

    async def start(self, sock: socket.socket, backlog: int) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Connection(self),
            sock=sock,
            backlog=backlog,
        )

    async def close(self) -> None:
        """Stop listening, drop every connection and cancel the calls still being
        answered (the run is over: nobody waits for them)."""
        if self._server is not None:
            self._server.close()
        for connection in list(self.connections):
            if connection.transport is not None:
                connection.transport.abort()
        for task in self.handling:
            task.cancel()
        if self.handling:
            await asyncio.wait(list(self.handling), timeout=5)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)
