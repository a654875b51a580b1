"""Raw loopback servers for the HTTP client's tests: answers no real server gives, TLS
and HTTP proxies. Each serves on 127.0.0.1 from daemon threads until :meth:`close`.

- :class:`RawServer` answers each request with bytes the test writes (or a generator of
  pieces, sent as they come: it may wait between them).
- :class:`Relay` pipes each connection on: as a TLS front, or as an HTTP proxy
  (``CONNECT`` tunnels; absolute-form requests forwarded in origin form).
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

__all__ = ["RawServer", "Relay", "chunk", "read_head"]


def read_head(conn: socket.socket, buffer: bytes = b"") -> tuple[bytes, bytes]:
    """A message head (its blank line dropped) and what came after it."""
    while b"\r\n\r\n" not in buffer:
        data = conn.recv(65536)
        if not data:
            raise OSError("closed before the head ended")
        buffer += data
    head, _, rest = buffer.partition(b"\r\n\r\n")
    return head, rest


def chunk(data: bytes) -> bytes:
    """``data`` as one chunk of a ``chunked`` body."""
    return b"%x\r\n%b\r\n" % (len(data), data)


class _Server:
    """Accepts on 127.0.0.1 (TLS with ``tls``), each connection in a thread of its own;
    counts them, and how many were open at once."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.tls = tls
        self.connections = self.open = self.peak_open = 0
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def _connection(self, conn: socket.socket) -> None:
        with self._lock:
            self.connections += 1
            self.open += 1
            self.peak_open = max(self.peak_open, self.open)
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            self.handle(conn)
        except OSError:  # ssl.SSLError too: a client that did not trust it
            pass
        finally:
            conn.close()
            with self._lock:
                self.open -= 1

    def handle(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._sock.close()


class RawServer(_Server):
    """Answers request n (counting over all connections) with ``answer(n)``: bytes, or
    an iterable of pieces sent one by one. ``close_after``: then it closes the connection
    (unsaid) and sets :attr:`closed`."""

    def __init__(
        self,
        answer: Callable[[int], bytes | Iterable[bytes]],
        *,
        close_after: bool = False,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.answer, self.close_after = answer, close_after
        self.requests = 0
        self.heads: list[bytes] = []
        self.bodies: list[bytes] = []
        self.closed = threading.Event()
        super().__init__(tls)
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}/v1"

    def handle(self, conn: socket.socket) -> None:
        rest = b""
        while True:
            head, rest = read_head(conn, rest)
            length = int(
                (head.lower().split(b"content-length:")[1:] or [b"0"])[0].split(b"\r\n")[0]
            )
            while len(rest) < length:
                rest += conn.recv(65536)
            self.bodies.append(rest[:length])
            rest = rest[length:]
            self.heads.append(head)
            number, self.requests = self.requests, self.requests + 1
            answer = self.answer(number)
            for piece in [answer] if isinstance(answer, bytes) else answer:
                conn.sendall(piece)
            if self.close_after:
                conn.close()
                self.closed.set()
                return


class Relay(_Server):
    """Pipes each connection to ``target``, or as an HTTP proxy (``proxy``) to where its
    first request says. Keeps the heads sent to it as a proxy, and every byte it relayed
    from clients."""

    def __init__(
        self,
        target: tuple[str, int] | None = None,
        *,
        tls: ssl.SSLContext | None = None,
        proxy: bool = False,
    ) -> None:
        self.target, self.proxy = target, proxy
        self.heads: list[bytes] = []
        self.relayed = bytearray()
        super().__init__(tls)

    def handle(self, conn: socket.socket) -> None:
        rest, target = b"", self.target
        if self.proxy:
            head, rest = read_head(conn)
            self.heads.append(head)
            method, where = head.split(b" ")[:2]
            if method == b"CONNECT":
                host, _, port = where.decode().rpartition(":")
                target = (host, int(port))
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                url = urlsplit(where.decode())
                target = (url.hostname or "", url.port or 80)
                lines = head.split(b"\r\n")
                lines[0] = lines[0].replace(where, url.path.encode())
                kept = [x for x in lines if not x.lower().startswith(b"proxy-authorization")]
                rest = b"\r\n".join(kept) + b"\r\n\r\n" + rest
        assert target is not None
        with socket.create_connection(target) as upstream:
            upstream.sendall(rest)
            self.relayed += rest
            back = threading.Thread(target=_copy, args=(upstream, conn), daemon=True)
            back.start()
            _copy(conn, upstream, self.relayed)
            back.join(10)


def _copy(source: socket.socket, sink: socket.socket, seen: bytearray | None = None) -> None:
    try:
        while data := source.recv(65536):
            if seen is not None:
                seen += data
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass
