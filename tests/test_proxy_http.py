"""The proxy's own HTTP/1.1 (server and upstream client), over real loopback sockets:
what real clients send besides one neat request per connection, and what a malformed
request gets (a 400 and a closed connection, never a hang)."""

from __future__ import annotations

import asyncio
import gc
import gzip
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loopback_servers import RawServer
from mock_servers import MockLLMServer, Reply

from signal_eval_cli.providers.reliability import RetryPolicy
from signal_eval_cli.proxy.cassette import ProxyCassette
from signal_eval_cli.proxy.route import CaseRoute
from signal_eval_cli.proxy.server import ModelProxy, Upstream
from signal_eval_cli.transport.wire import BadMessage, Chunked

FAST = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.05)
WAIT = 60.0
"""A generous bound on any one answer: the tests wait for events, never for time."""


def body(text: str, **extra: Any) -> bytes:
    return json.dumps(
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": text}], **extra}
    ).encode()


def request(text: str, *, case: str = "c", head: str = "", framing: str | None = None) -> bytes:
    data = body(text)
    framing = f"Content-Length: {len(data)}\r\n" if framing is None else framing
    return (
        f"POST /c/{case}/0/v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        f"Content-Type: application/json\r\n{head}{framing}\r\n"
    ).encode() + data


class Answers:
    """HTTP/1.1 answers read off a raw socket, one at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.buffer = sock, b""

    def _more(self) -> bool:
        data = self.sock.recv(65536)
        self.buffer += data
        return bool(data)

    def head(self) -> tuple[int, dict[str, str]]:
        while b"\r\n\r\n" not in self.buffer:
            assert self._more(), f"connection closed mid-answer: {self.buffer!r}"
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.lower()] = value.strip()
        return int(lines[0].split(" ")[1]), headers

    def next(self) -> tuple[int, dict[str, str], bytes]:
        status, headers = self.head()
        if headers.get("transfer-encoding") == "chunked":
            decoder = Chunked(1 << 30)
            out, done = decoder.feed(self.buffer)
            while not done:
                more = self.sock.recv(65536)
                assert more, "connection closed mid-answer"
                data, done = decoder.feed(more)
                out += data
            self.buffer = decoder.rest
            return status, headers, out
        length = int(headers.get("content-length", "0"))
        while len(self.buffer) < length:
            assert self._more()
        data, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, headers, data

    def closed(self) -> bool:
        """The server closed the connection (and sent nothing more)."""
        try:
            return not self.buffer and not self._more()
        except ConnectionResetError:  # closed with bytes unread: reset, not ended
            return not self.buffer


@pytest.fixture()
def recording(tmp_path: Path) -> Iterator[tuple[ModelProxy, list[tuple[Any, ...]]]]:
    """A recording proxy with case ``c`` open, in front of the mock."""
    with MockLLMServer(lambda call: Reply(f"answer to {call.last_user_text}")) as mock:
        proxy = ModelProxy(
            ProxyCassette(tmp_path / "http.proxy.yaml"),
            "record",
            upstream=Upstream(f"{mock.url}/v1", mock.url, "sk-test", "sk-test"),
            retry=FAST,
        )
        signals: list[tuple[Any, ...]] = []
        with proxy:
            proxy.open("c", 0, lambda name, payload, **_: signals.append((name, payload)))
            yield proxy, signals


def connect(proxy: ModelProxy) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=WAIT)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def recorded(proxy: ModelProxy) -> list[str]:
    session = proxy.sessions[("c", 0)]
    return [i.body["messages"][0]["content"] for i in session.recording()]


def content(data: bytes) -> str:
    text: str = json.loads(data)["choices"][0]["message"]["content"]
    return text


def test_pipelined_requests_on_one_connection_are_answered_in_order(recording: Any) -> None:
    proxy, signals = recording
    with connect(proxy) as sock:
        sock.sendall(request("one") + request("two") + request("three"))
        answers = Answers(sock)
        got = [answers.next() for _ in range(3)]
        assert [status for status, _, _ in got] == [200, 200, 200]
        assert [content(data) for _, _, data in got] == [
            "answer to one",
            "answer to two",
            "answer to three",
        ]
        sock.sendall(request("four"))  # and the connection is kept open after them
        assert content(answers.next()[2]) == "answer to four"
    assert recorded(proxy) == ["one", "two", "three", "four"]
    assert [n for n, _ in signals].count("provider:end") == 4


def test_a_request_split_across_packets_is_read_whole(recording: Any) -> None:
    proxy, _ = recording
    data = request("split in pieces")
    with connect(proxy) as sock:
        for cut in (10, len(data) - len(body("split in pieces")) + 5, len(data) - 1):
            sock.sendall(data[:cut])
            data = data[cut:]
        sock.sendall(data)
        status, _, answer = Answers(sock).next()
    assert status == 200 and content(answer) == "answer to split in pieces"
    assert recorded(proxy) == ["split in pieces"]


def test_a_case_id_any_url_would_break_is_its_own_route(recording: Any) -> None:
    """A case id with a slash, a space, a percent sign and non-ASCII is quoted into one
    path segment of its route, and its calls are its own (not case 'c''s)."""
    proxy, _ = recording
    odd = "q/a 100%é"
    route = proxy.open(odd, 2)
    assert route.openai_base_url == f"{proxy.url}/c/q%2Fa%20100%25%C3%A9/2/v1"
    assert route.anthropic_base_url == route.prefix == f"{proxy.url}/c/q%2Fa%20100%25%C3%A9/2"
    path = route.openai_base_url.removeprefix(proxy.url) + "/chat/completions"
    data = body("odd one")
    with connect(proxy) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        status, _, answer = Answers(sock).next()
    assert status == 200 and content(answer) == "answer to odd one"
    assert [i.case for i in proxy.sessions[(odd, 2)].recording()] == [odd]
    assert recorded(proxy) == []


def test_a_large_body_is_read_whole(recording: Any) -> None:
    """A request with a document inline (3 MB: many packets, above aiohttp's 1 MiB)."""
    proxy, _ = recording
    text = "x" * 3_000_000
    with connect(proxy) as sock:
        sock.sendall(request(text))
        status, _, answer = Answers(sock).next()
    assert status == 200 and content(answer) == f"answer to {text}"
    assert recorded(proxy) == [text]


def test_a_chunked_request_body_in_pieces(recording: Any) -> None:
    proxy, _ = recording
    data = body("sent chunked")
    chunks = b"".join(b"%x;ext=1\r\n%b\r\n" % (len(p), p) for p in (data[:7], data[7:]))
    message = (
        request("", framing="Transfer-Encoding: chunked\r\n").split(b"\r\n\r\n")[0]
        + b"\r\n\r\n"
        + chunks
        + b"0\r\nX-Trailer: 1\r\n\r\n"
    )
    with connect(proxy) as sock:
        for start in range(0, len(message), 9):
            sock.sendall(message[start : start + 9])
        answers = Answers(sock)
        assert content(answers.next()[2]) == "answer to sent chunked"
        sock.sendall(request("after it"))  # what follows the chunked body is the next request
        assert content(answers.next()[2]) == "answer to after it"
    assert recorded(proxy) == ["sent chunked", "after it"]


def test_expect_100_continue_is_told_to_go_on(recording: Any) -> None:
    """curl sends ``Expect: 100-continue`` for larger bodies and waits for the go-ahead."""
    proxy, _ = recording
    data = request("expecting", head="Expect: 100-continue\r\n")
    head, rest = data.split(b"\r\n\r\n", 1)
    with connect(proxy) as sock:
        sock.sendall(head + b"\r\n\r\n")
        answers = Answers(sock)
        assert answers.head()[0] == 100
        sock.sendall(rest)
        status, _, answer = answers.next()
    assert status == 200 and content(answer) == "answer to expecting"


def test_connection_close_and_http_1_0_end_the_connection_after_the_answer(
    recording: Any,
) -> None:
    proxy, _ = recording
    for message in (
        request("closing", head="Connection: close\r\n"),
        request("old").replace(b"HTTP/1.1", b"HTTP/1.0", 1),
    ):
        with connect(proxy) as sock:
            sock.sendall(message)
            answers = Answers(sock)
            status, headers, _ = answers.next()
            assert status == 200 and headers.get("connection") == "close"
            assert answers.closed()
    assert recorded(proxy) == ["closing", "old"]


MALFORMED = {
    "request line": b"HELLO\r\n\r\n",
    "version": b"POST /c/c/0/v1/chat/completions HTTP/2.0\r\nHost: x\r\n\r\n",
    "header without a colon": b"POST /c/c/0/v1/x HTTP/1.1\r\nHost x\r\n\r\n",
    "space before the colon": b"POST /c/c/0/v1/x HTTP/1.1\r\nHost : x\r\n\r\n",
    "length not a number": b"POST /c/c/0/v1/x HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n",
    "two lengths": b"POST /c/c/0/v1/x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    "length and chunked": (
        b"POST /c/c/0/v1/x HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
    ),
    "unknown coding": b"POST /c/c/0/v1/x HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
    "chunk size": b"POST /c/c/0/v1/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    "chunk end": b"POST /c/c/0/v1/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX",
    "head too large": b"GET /x HTTP/1.1\r\nA: " + b"a" * 70_000,
    "body too large": b"POST /c/c/0/v1/x HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n",
}


@pytest.mark.parametrize("message", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_request_gets_an_error_and_a_closed_connection(
    recording: Any, message: bytes
) -> None:
    proxy, signals = recording
    with connect(proxy) as sock:
        sock.sendall(message)
        answers = Answers(sock)
        status, _, data = answers.next()
        assert status in (400, 413, 431, 501, 505)
        assert "signal-eval proxy: bad request" in json.loads(data)["error"]["message"]
        assert answers.closed()
    assert recorded(proxy) == [] and signals == []
    with connect(proxy) as sock:  # and the proxy serves on
        sock.sendall(request("still there"))
        assert content(Answers(sock).next()[2]) == "answer to still there"


@pytest.mark.parametrize(
    "data", [b'{"a": ' * 100_000 + b"1" + b"}" * 100_000, b'{"n": 1' + b"0" * 5000 + b"}"]
)
def test_a_body_no_json_parser_reads_is_a_body_like_any_other(tmp_path: Path, data: bytes) -> None:
    """JSON nested 100,000 deep, or a 5,000-digit number, got a 500 (RecursionError,
    ValueError: the proxy's bug path) where any body that is not JSON is taken as text:
    replayed, it is a cassette miss naming the request."""
    proxy = ModelProxy(ProxyCassette(tmp_path / "none.proxy.yaml"), "replay")
    signals: list[tuple[Any, ...]] = []
    with proxy:
        proxy.open("c", 0, lambda name, payload, **_: signals.append((name, payload)))
        with connect(proxy) as sock:
            head = (
                f"POST /c/c/0/v1/chat/completions HTTP/1.1\r\nContent-Length: {len(data)}\r\n\r\n"
            )
            sock.sendall(head.encode() + data)
            status, _, answer = Answers(sock).next()
    assert status == 400, answer[:200]
    assert json.loads(answer)["error"]["code"] == "cassette_miss"
    assert [name for name, _ in signals] == ["provider:start", "provider:error"]


def test_framing_rules() -> None:
    from signal_eval_cli.transport.wire import body_length, parse_head

    assert body_length(parse_head(b"POST / HTTP/1.1\r\nContent-Length: 12")[1]) == 12
    assert body_length(parse_head(b"POST / HTTP/1.1\r\nTransfer-Encoding: Chunked")[1]) is None
    assert body_length(parse_head(b"GET / HTTP/1.1\r\nHost: x")[1]) == 0
    with pytest.raises(BadMessage):
        body_length(parse_head(b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked")[1])
    message = b"4\r\nWiki\r\n5;x=1\r\npedia\r\n0\r\nT: 1\r\n\r\nNEXT"
    for cut in range(len(message) + 1):  # any split of a chunked body decodes the same
        decoder = Chunked(100)
        first, done = decoder.feed(message[:cut])
        rest = decoder.rest + message[cut:]
        if not done:
            second, done = decoder.feed(message[cut:])
            first, rest = first + second, decoder.rest
        assert (first, done, rest) == (b"Wikipedia", True, b"NEXT")
    with pytest.raises(BadMessage) as error:
        Chunked(5).feed(b"6\r\n")
    assert error.value.status == 413


# -- upstream: answers the mock never gives ---------------------------------------------------


def proxy_to(raw: RawServer, tmp_path: Path, mode: str = "record") -> ModelProxy:
    url = f"{'https' if raw.tls else 'http'}://127.0.0.1:{raw.port}"
    return ModelProxy(
        ProxyCassette(tmp_path / "raw.proxy.yaml"),
        mode,  # type: ignore[arg-type]
        upstream=Upstream(f"{url}/v1", url, "sk-test", "sk-test"),
        retry=FAST,
    )


def completion(text: str) -> dict[str, Any]:
    return {
        "id": "x",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
    }


def call(proxy: ModelProxy, texts: list[str]) -> list[tuple[int, bytes]]:
    """POST each text on one kept-alive connection."""
    out = []
    with connect(proxy) as sock:
        answers = Answers(sock)
        for text in texts:
            sock.sendall(request(text))
            status, _, data = answers.next()
            out.append((status, data))
    return out


def test_chunked_and_gzipped_upstream_answers_are_decoded_and_recorded(tmp_path: Path) -> None:
    def answer(n: int) -> bytes:
        data = gzip.compress(json.dumps(completion(f"zipped {n}")).encode())
        chunks = b"".join(b"%x\r\n%b\r\n" % (len(p), p) for p in (data[:10], data[10:]))
        return (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"
        )

    raw = RawServer(answer)
    try:
        with proxy_to(raw, tmp_path) as proxy:
            proxy.open("c", 0)
            got = call(proxy, ["a", "b"])
            assert [(s, content(d)) for s, d in got] == [(200, "zipped 0"), (200, "zipped 1")]
            assert [
                i.response["choices"][0]["message"]["content"]
                for i in (proxy.sessions[("c", 0)].recording())
            ] == ["zipped 0", "zipped 1"]
        assert raw.connections == 1  # the upstream connection was kept for the second call
    finally:
        raw.close()


def test_a_kept_connection_the_server_closed_is_replaced(tmp_path: Path) -> None:
    """Upstream closes its connection after each answer without saying so (as a server
    whose keep-alive ran out does): every call still gets its answer, none fails."""

    def answer(n: int) -> bytes:
        data = json.dumps(completion(f"n{n}")).encode()
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}"
        return head.encode() + b"\r\n\r\n" + data

    closing = RawServer(answer, close_after=True)
    try:
        with proxy_to(closing, tmp_path) as proxy:
            proxy.open("c", 0)
            got = call(proxy, ["a", "b", "c"])
            assert all(status == 200 for status, _ in got), got
            proxy.close(CaseRoute(proxy.url, "c", 0))
        assert proxy.failures == []
    finally:
        closing.close()


def test_upstream_that_answers_garbage_or_stops_mid_answer_is_a_502(tmp_path: Path) -> None:
    """Each attempt fails another way (not HTTP, cut short, gzip that is not): all are
    retried, then the client gets a 502 saying so."""
    answers = [
        b"NOT HTTP\r\n\r\n",
        b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"cut',
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 9\r\n\r\nnot gzip!",
    ]
    garbage = RawServer(lambda n: answers[n], close_after=True)
    try:
        with proxy_to(garbage, tmp_path) as proxy:
            proxy.open("c", 0)
            [(status, data)] = call(proxy, ["a"])
            assert status == 502
            message = json.loads(data)["error"]["message"]
            assert "upstream failed after 3 attempt(s)" in message
            assert "compressed answer is corrupt" in message
        assert garbage.requests == 3
    finally:
        garbage.close()


def test_a_client_that_leaves_mid_stream_does_not_stop_the_recording(tmp_path: Path) -> None:
    events = [
        b'data: {"choices":[{"delta":{"content":"part %d "}}]}\n\n' % i for i in range(50)
    ] + [b"data: [DONE]\n\n"]
    stream = b"".join(events)

    def answer(n: int) -> bytes:
        return (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Content-Length: %d\r\n\r\n%b" % (len(stream), stream)
        )

    raw = RawServer(answer)
    try:
        with proxy_to(raw, tmp_path) as proxy:
            proxy.open("c", 0)
            with connect(proxy) as sock:
                sock.sendall(request("stream please"))
                status, _ = Answers(sock).head()
                assert status == 200
            route = CaseRoute(proxy.url, "c", 0)
            assert asyncio.run(proxy.settled(route))
            [item] = proxy.sessions[("c", 0)].recording()
            assert item.events is not None and len(item.events) == 51
    finally:
        raw.close()


def test_an_https_upstream_is_verified_and_kept_alive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The providers' endpoints are HTTPS: the certificate is checked against the trusted
    ones (here a loopback one made for the test, trusted through ``SSL_CERT_FILE``)."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)

    def answer(n: int) -> bytes:
        data = json.dumps(completion(f"secure {n}")).encode()
        return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%b" % (len(data), data)

    raw = RawServer(answer, tls=tls)
    try:
        with proxy_to(raw, tmp_path) as proxy:  # not trusted yet: a 502 naming the cause
            proxy.open("c", 0)
            [(status, data)] = call(proxy, ["a"])
            assert status == 502 and "CERTIFICATE_VERIFY_FAILED" in data.decode()
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        assert raw.requests == 0
        raw.connections = 0
        with proxy_to(raw, tmp_path) as proxy:
            proxy.open("c", 0)
            got = call(proxy, ["a", "b"])
            assert [content(d) for _, d in got] == ["secure 0", "secure 1"]
        assert raw.connections == 1
    finally:
        raw.close()


def test_stopping_mid_call_cancels_it_and_closes_its_connection(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The run is over while a call still waits for upstream: the proxy stops at once,
    the client's connection is closed, and the call is ended (not left in flight)."""
    release = threading.Event()

    def answer(n: int) -> bytes:
        release.wait(WAIT)
        return b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"

    raw = RawServer(answer)
    try:
        proxy = proxy_to(raw, tmp_path).start()
        proxy.open("c", 0)
        with connect(proxy) as sock:
            sock.sendall(request("never answered"))
            deadline = time.monotonic() + WAIT
            while raw.requests == 0 and time.monotonic() < deadline:  # upstream has it
                time.sleep(0.01)
            assert raw.requests == 1
            began = time.monotonic()
            proxy.stop()
            assert time.monotonic() - began < WAIT / 2
            assert Answers(sock).closed()
        session = proxy.sessions[("c", 0)]
        assert asyncio.run(session.settled(0.5)), "the call was left in flight"
        gc.collect()
        assert "Task was destroyed" not in caplog.text
    finally:
        release.set()
        raw.close()


def test_replay_with_timing_takes_as_long_as_the_recorded_call(tmp_path: Path) -> None:
    """``timing: true``: each replayed call answers when the recorded one did (measured
    from the same moment), and its ``provider:end`` says the recorded duration."""
    cassette = ProxyCassette(tmp_path / "timed.proxy.yaml")
    with MockLLMServer(lambda call: Reply("slow answer"), latency=0.3) as mock:
        url = mock.url
        with ModelProxy(
            cassette, "record", upstream=Upstream(f"{url}/v1", url, "k", "k"), retry=FAST
        ) as proxy:
            proxy.open("c", 0)
            [(status, _)] = call(proxy, ["timed"])
            assert status == 200
            proxy.close(CaseRoute(proxy.url, "c", 0))
            proxy.save()
    [item] = cassette.load()
    assert item.duration_ms >= 300
    ends: list[Any] = []
    with ModelProxy(cassette, "replay", timing=True) as proxy:
        proxy.open("c", 0, lambda name, payload, **_: ends.append(payload))
        began = time.perf_counter()
        [(status, data)] = call(proxy, ["timed"])
        took_ms = (time.perf_counter() - began) * 1000
    assert status == 200 and content(data) == "slow answer"
    assert took_ms >= item.duration_ms - 1  # never sooner than recorded (later on a busy box)
    assert ends[-1]["durationMs"] == round(item.duration_ms, 3)
