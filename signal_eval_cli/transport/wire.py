"""HTTP/1.1 message framing, as the proxy's server and its upstream client both read it.

Every model call of a run crosses the proxy twice (client → proxy, proxy → upstream),
so framing is done here once, lean: a head block split into its start line and
headers, how long the body is (``Content-Length``, ``chunked``, or to the end of the
connection), and an incremental ``chunked`` decoder for bodies that arrive in pieces.
Anything malformed is a :class:`BadMessage` (a 400, or an upstream failure). Pure: no I/O.
"""

from __future__ import annotations

import re

from signal_eval_cli.errors import EvalError

__all__ = [
    "MAX_HEAD",
    "BadMessage",
    "Chunked",
    "Headers",
    "body_length",
    "content_length",
    "parse_head",
    "reason",
]

MAX_HEAD = 64 * 1024
"""Longest head block (start line and headers) read."""

_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_DIGITS = re.compile(rb"[0-9]+")
_HEX = re.compile(rb"[0-9A-Fa-f]+")
_REASONS = {
    100: "Continue",
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    413: "Content Too Large",
    431: "Request Header Fields Too Large",
    499: "Client Closed Request",
    500: "Internal Server Error",
    501: "Not Implemented",
    502: "Bad Gateway",
    505: "HTTP Version Not Supported",
}


class BadMessage(EvalError):
    """A message that is not HTTP/1.1 as written: ``status`` is the answer to it."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def reason(status: int) -> str:
    return _REASONS.get(status, "Unknown")


class Headers:
    """A message's headers: as received (in order) and by lower-case name."""

    __slots__ = ("by_name", "items")

    def __init__(self, items: list[tuple[str, str]]) -> None:
        self.items = items
        self.by_name: dict[str, str] = {}
        for name, value in items:
            low = name.lower()
            seen = self.by_name.get(low)
            self.by_name[low] = value if seen is None else f"{seen}, {value}"

    def get(self, name: str, default: str | None = None) -> str | None:
        """The value (repeated headers joined by ``, ``) of lower-case ``name``."""
        return self.by_name.get(name, default)


def parse_head(block: bytes) -> tuple[str, Headers]:
    """The start line and headers of a head block (its closing blank line excluded)."""
    lines = block.split(b"\r\n")
    items: list[tuple[str, str]] = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or _TOKEN.fullmatch(name) is None:
            raise BadMessage(f"malformed header line {line[:80]!r}")
        items.append((name.decode("latin-1"), value.strip(b" \t").decode("latin-1")))
    return lines[0].decode("latin-1"), Headers(items)


def body_length(headers: Headers) -> int | None:
    """The body's length by ``Content-Length`` (0 without one), or ``None`` for
    ``chunked``. Both at once, a coding other than ``chunked``, or a length that is not
    one number are refused: a proxy that guessed could be made to split a request."""
    coding = headers.get("transfer-encoding")
    length = headers.get("content-length")
    if coding is not None:
        if length is not None:
            raise BadMessage("both Transfer-Encoding and Content-Length")
        if coding.rsplit(",", 1)[-1].strip().lower() != "chunked" or "," in coding:
            raise BadMessage(f"unsupported Transfer-Encoding {coding!r}", 501)
        return None
    return 0 if length is None else content_length(length)


def content_length(value: str) -> int:
    """The length a ``Content-Length`` value says: one number, or that number repeated
    (the header sent twice, RFC 9110 8.6); anything else is a :class:`BadMessage`."""
    if value.isdigit() and value.isascii() and len(value) <= _MAX_LENGTH_DIGITS:
        return int(value)  # the usual one number, read at once
    values = {v.strip() for v in value.split(",")}
    if len(values) != 1 or _DIGITS.fullmatch(digits := values.pop().encode()) is None:
        raise BadMessage(f"malformed Content-Length {value!r}")
    if len(digits.lstrip(b"0")) > _MAX_LENGTH_DIGITS:  # int() refuses past 4,300 digits
        raise BadMessage(f"Content-Length of {len(digits)} digits", 413)
    return int(digits)


_MAX_LENGTH_DIGITS = 18
"""Past 10^18 bytes no body fits anywhere; a longer number is refused unread (a 5,000-digit
one made ``int`` raise ValueError, which no caller of a bad message expects)."""


class Chunked:
    """Decodes a ``chunked`` body fed in pieces: :meth:`feed` returns the data decoded
    so far and whether the body ended (what came after its end is :attr:`rest`)."""

    _SIZE, _DATA, _DATA_END, _TRAILER = range(4)

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.rest = b""
        self.size = 0
        self._state = self._SIZE
        self._left = 0  # bytes of the current chunk still to come

    def feed(self, data: bytes) -> tuple[bytes, bool]:
        buffer = self.rest + data if self.rest else data
        out: list[bytes] = []
        pos, total = 0, len(buffer)
        while True:
            if self._state == self._SIZE:
                end = buffer.find(b"\r\n", pos)
                if end < 0:
                    if total - pos > 1024:
                        raise BadMessage("a chunk-size line too long")
                    break
                size_text = buffer[pos:end].split(b";", 1)[0].strip()
                if len(size_text) > 16 or _HEX.fullmatch(size_text) is None:
                    raise BadMessage(f"malformed chunk size {size_text[:20]!r}")
                pos = end + 2
                self._left = int(size_text, 16)
                self.size += self._left
                if self.size > self.limit:
                    raise BadMessage("body too large", 413)
                self._state = self._DATA if self._left else self._TRAILER
            elif self._state == self._DATA:
                take = min(total - pos, self._left)
                if take:
                    out.append(buffer[pos : pos + take])
                    pos += take
                    self._left -= take
                if self._left:
                    break
                self._state = self._DATA_END
            elif self._state == self._DATA_END:
                if buffer[pos : pos + 2] != b"\r\n"[: total - pos]:
                    raise BadMessage("a chunk not followed by CRLF")
                if total - pos < 2:
                    break
                pos += 2
                self._state = self._SIZE
            else:  # trailer lines (ignored) up to a blank one
                end = buffer.find(b"\r\n", pos)
                if end < 0:
                    if total - pos > MAX_HEAD:
                        raise BadMessage("trailers too long", 431)
                    break
                blank, pos = end == pos, end + 2
                if blank:
                    self.rest = buffer[pos:]
                    return b"".join(out), True
        self.rest = buffer[pos:]
        return b"".join(out), False
