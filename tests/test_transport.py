"""The HTTP client the providers and the model proxy share, over real loopback sockets.

What the providers' users rely on, each against a server made for it: HTTPS verified
against the trusted certificates (a CA made here, trusted through ``SSL_CERT_FILE``) with
the host name sent and checked; ``HTTPS_PROXY`` through a ``CONNECT`` tunnel and
``HTTP_PROXY`` in absolute form (a small proxy here); keep-alive; ``max_connections``;
a server that closes kept connections; streams read as they arrive; gzip; redirects; answers
framed wrong (a clear error at once, never a wait for the timeout) or loosely (bare LF heads).
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import logging
import os
import resource
import shutil
import ssl
import subprocess
import threading
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from loopback_servers import RawServer, Relay, chunk
from mock_servers import MockLLMServer

from signal_eval_cli.errors import InputError
from signal_eval_cli.providers import ProviderError, ProviderRequest
from signal_eval_cli.providers.registry import make_provider
from signal_eval_cli.transport.client import MAX_ANSWER, Client
from signal_eval_cli.transport.proxies import proxy_for

KEY = "sk-test-transport-5a4b3c2d1e"
WAIT = 10.0
"""Generous bound on any wait for the other side (the suite runs with both cores busy)."""
NO_RETRY = {"timeout": 30.0, "max_retries": 0}


@pytest.fixture(scope="module")
def mock() -> Iterator[MockLLMServer]:
    with MockLLMServer() as server:
        yield server


@pytest.fixture(autouse=True)
def no_proxy_from_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def request(text: str = "hello over the wire") -> ProviderRequest:
    return ProviderRequest("c1", "a", [{"role": "user", "content": text}])


def openai(base_url: str, **options: Any) -> Any:
    return make_provider("openai:m", api_key=KEY, base_url=base_url, **{**NO_RETRY, **options})


def completion(text: str) -> bytes:
    return json.dumps(
        {
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        }
    ).encode()


def whole(body: bytes, *extra: str) -> bytes:
    head = "".join(f"{line}\r\n" for line in extra)
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%bContent-Length: %d\r\n\r\n%b"
        % (
            head.encode(),
            len(body),
            body,
        )
    )


# -- TLS: a CA made here, a certificate for localhost -------------------------------------------


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``ca`` (to trust) and ``cert``/``key`` it signed for ``localhost`` only."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make certificates")
    where = tmp_path_factory.mktemp("tls")
    paths = {name: where / f"{name}.pem" for name in ("ca", "ca_key", "cert", "key", "csr")}
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    extensions = where / "leaf.ext"
    extensions.write_text(
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n"
        "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
        "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n"
    )
    for command in (
        [
            *("openssl", "req", "-x509", *ec, "-days", "2", "-subj", "/CN=signal-eval test CA"),
            *("-addext", "basicConstraints=critical,CA:TRUE"),
            *("-addext", "keyUsage=critical,keyCertSign,cRLSign"),
            *("-keyout", str(paths["ca_key"]), "-out", str(paths["ca"])),
        ],
        [
            *("openssl", "req", *ec, "-subj", "/CN=localhost"),
            *("-keyout", str(paths["key"]), "-out", str(paths["csr"])),
        ],
        [
            *("openssl", "x509", "-req", "-in", str(paths["csr"]), "-days", "2"),
            *("-CA", str(paths["ca"]), "-CAkey", str(paths["ca_key"]), "-CAcreateserial"),
            *("-extfile", str(extensions), "-out", str(paths["cert"])),
        ],
    ):
        subprocess.run(command, check=True, capture_output=True)
    return paths


@pytest.fixture
def https(certs: dict[str, Path], mock: MockLLMServer) -> Iterator[tuple[Relay, list[str | None]]]:
    """A TLS front to the mock on 127.0.0.1, and the server names (SNI) clients sent it."""
    names: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certs["cert"], certs["key"])
    context.sni_callback = lambda sock, name, ctx: names.append(name)  # type: ignore[assignment,misc]
    front = Relay(("127.0.0.1", mock.port), tls=context)
    yield front, names
    front.close()


def test_https_is_verified_against_the_trusted_certificates_and_the_host_name(
    https: tuple[Relay, list[str | None]],
    certs: dict[str, Path],
    mock: MockLLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    front, names = https
    url = f"https://localhost:{front.port}/v1"
    with pytest.raises(ProviderError) as untrusted:  # the test CA is not trusted yet
        asyncio.run(openai(url).complete(request()))
    assert untrusted.value.code == "connection_error"
    assert "CERTIFICATE_VERIFY_FAILED" in str(untrusted.value)
    monkeypatch.setenv("SSL_CERT_FILE", str(certs["ca"]))
    with pytest.raises(ProviderError) as wrong_host:  # trusted, but not made for 127.0.0.1
        asyncio.run(openai(f"https://127.0.0.1:{front.port}/v1").complete(request()))
    assert "CERTIFICATE_VERIFY_FAILED" in str(wrong_host.value)
    assert "mismatch" in str(wrong_host.value)
    mock.calls.clear()
    front.connections, names[:] = 0, []
    provider = openai(url)

    async def three_calls() -> list[str]:
        return [(await provider.complete(request(f"secure {i}"))).text for i in range(3)]

    assert asyncio.run(three_calls()) == [f"ANSWER: secure {i}" for i in range(3)]
    assert [call.key for call in mock.calls] == [KEY] * 3
    assert (front.connections, names) == (1, ["localhost"])  # one handshake, kept alive


def test_https_goes_through_the_environments_proxy_in_a_connect_tunnel(
    https: tuple[Relay, list[str | None]],
    certs: dict[str, Path],
    mock: MockLLMServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The proxy is asked for a tunnel with its own credentials and sees only TLS: never
    the request, never the API key. Both calls share the tunnel."""
    front, names = https
    proxy = Relay(proxy=True)
    try:
        monkeypatch.setenv("SSL_CERT_FILE", str(certs["ca"]))
        monkeypatch.setenv("HTTPS_PROXY", f"http://user:p%40ss@127.0.0.1:{proxy.port}")
        monkeypatch.setenv("NO_PROXY", "example.org")
        mock.calls.clear()
        provider = openai(f"https://localhost:{front.port}/v1", stream=True)

        async def two_calls() -> list[str]:
            return [(await provider.complete(request(f"tunnel {i}"))).text for i in range(2)]

        assert asyncio.run(two_calls()) == ["ANSWER: tunnel 0", "ANSWER: tunnel 1"]
        [head] = proxy.heads
        auth = base64.b64encode(b"user:p@ss").decode()
        assert head.split(b"\r\n")[0] == f"CONNECT localhost:{front.port} HTTP/1.1".encode()
        assert f"Proxy-Authorization: Basic {auth}".encode() in head
        assert proxy.relayed and KEY.encode() not in proxy.relayed
        assert b"chat/completions" not in proxy.relayed
        assert names == ["localhost"] and [c.key for c in mock.calls] == [KEY, KEY]
        monkeypatch.setenv("NO_PROXY", "localhost")  # no tunnel for a host NO_PROXY names
        proxy.heads.clear()
        assert asyncio.run(two_calls())[0] == "ANSWER: tunnel 0"
        assert proxy.heads == []
    finally:
        proxy.close()


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (
            b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n",
            "407 Proxy Authentication Required",
        ),
        (
            b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 100_000,
            "the proxy's answer to CONNECT is too large",
        ),
    ],
)
def test_a_proxy_that_refuses_the_tunnel_is_a_connection_error(
    monkeypatch: pytest.MonkeyPatch, answer: bytes, error: str
) -> None:
    proxy = RawServer(lambda n: answer)
    try:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url.removesuffix("/v1"))
        with pytest.raises(ProviderError) as refused:
            asyncio.run(openai("https://api.example.invalid/v1").complete(request()))
        assert refused.value.code == "connection_error"
        assert error in str(refused.value)
        assert proxy.heads[0].startswith(b"CONNECT api.example.invalid:443 HTTP/1.1")
    finally:
        proxy.close()


def test_plain_http_goes_through_the_proxy_in_absolute_form(
    mock: MockLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = Relay(proxy=True)
    try:
        monkeypatch.setenv("http_proxy", f"127.0.0.1:{proxy.port}")  # no scheme: http
        mock.calls.clear()
        answer = asyncio.run(openai(mock.openai_base_url).complete(request("via proxy")))
        assert answer.text == "ANSWER: via proxy"
        [head] = proxy.heads
        target = f"POST http://127.0.0.1:{mock.port}/v1/chat/completions HTTP/1.1"
        assert head.split(b"\r\n")[0] == target.encode()
        assert [c.key for c in mock.calls] == [KEY]
    finally:
        proxy.close()


def test_an_https_proxy_url_is_skipped_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "https://proxy.example:3128")
    with caplog.at_level(logging.WARNING):
        assert proxy_for("https", "api.openai.com") is None
    assert "HTTPS proxies are not supported" in caplog.text
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    found = proxy_for("https", "api.openai.com")
    assert found is not None and (found.host, found.port) == ("proxy.example", 3128)
    assert proxy_for("http", "api.openai.com") is None  # HTTP_PROXY is not set


# -- connections: the pool, its limit, servers that close ---------------------------------------


def test_max_connections_bounds_the_connections_in_use_and_reuses_them(
    mock: MockLLMServer,
) -> None:
    """Six requests at once through a client of two connections: two are opened, no
    more are ever in use, every request is answered; a request given up while it waits
    for a connection does not keep one."""
    front = Relay(("127.0.0.1", mock.port))
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    url = f"http://127.0.0.1:{front.port}/v1/chat/completions"
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}

    async def post(client: Client) -> int:
        response = await client.request("POST", url, headers, body)
        try:
            await response.read()
            return response.status
        finally:
            response.release()

    async def main() -> None:
        client = Client(WAIT, max_connections=2)
        mock.latency = 0.05
        try:
            assert await asyncio.gather(*(post(client) for _ in range(6))) == [200] * 6
            busy = [asyncio.ensure_future(post(client)) for _ in range(2)]
            await asyncio.sleep(0)  # they hold both connections
            waiting = asyncio.gather(*(post(client) for _ in range(3)))
            await asyncio.sleep(0)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            assert await asyncio.gather(*busy) == [200, 200]
            assert await asyncio.wait_for(post(client), WAIT) == 200  # no slot was lost
        finally:
            mock.latency = 0.0
            await client.close()

    try:
        asyncio.run(main())
        assert front.connections == 2 and front.peak_open == 2
    finally:
        front.close()


def test_a_server_that_closes_kept_connections_costs_no_failed_call() -> None:
    """Each answer's connection is then closed by the server, and the event loop is kept
    busy until the close has arrived (as a case's own work may keep it): the client
    sees the connection is dead before it sends on it, and opens another."""
    server = RawServer(lambda n: whole(completion(f"n{n}")), close_after=True)
    provider = openai(server.url)  # no retries: a lost request would fail the call

    async def main() -> list[str]:
        texts = []
        for _ in range(3):
            texts.append((await provider.complete(request())).text)
            assert server.closed.wait(WAIT)  # blocks the loop: it cannot see the close
            server.closed.clear()
        return texts

    try:
        assert asyncio.run(main()) == ["n0", "n1", "n2"]
        assert server.connections == 3
    finally:
        server.close()


def test_kept_connections_numbered_above_1023_are_reused(mock: MockLLMServer) -> None:
    """A run with many connections and files open: the check of a kept connection works
    for any descriptor (``select()`` refuses those above 1023)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("cannot open 1200 files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    fillers = []
    try:
        while not fillers or fillers[-1] < 1100:
            fillers.append(os.open(os.devnull, os.O_RDONLY))
        provider = openai(mock.openai_base_url)

        async def two_calls() -> list[str]:
            return [(await provider.complete(request(f"high {i}"))).text for i in range(2)]

        assert asyncio.run(two_calls()) == ["ANSWER: high 0", "ANSWER: high 1"]
    finally:
        for fd in fillers:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_stream_is_read_event_by_event_and_its_connection_kept() -> None:
    """The server holds the rest of the stream until the client has the first delta:
    a client that waited for the whole body would get it only after 10 s and fail. The
    events after ``[DONE]`` (the body's end) are read, so the next call reuses the
    connection."""
    first_seen = threading.Event()
    waited: list[bool] = []

    def event(text: str, finish: str | None = None) -> bytes:
        choice = {"delta": {"content": text}, "finish_reason": finish}
        return b"data: %b\n\n" % json.dumps({"choices": [choice]}).encode()

    def stream(n: int) -> Iterator[bytes]:
        yield (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + chunk(event(f"first{n} "))
        )
        waited.append(first_seen.wait(WAIT))
        first_seen.clear()
        yield chunk(event("second", "stop")) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"

    server = RawServer(stream)
    provider = openai(server.url, stream=True).inner  # the deltas as they come, no retry buffer

    async def main() -> list[list[str]]:
        calls = []
        for _ in range(2):
            deltas: list[str] = []

            def on_delta(text: str, deltas: list[str] = deltas) -> None:
                deltas.append(text)
                first_seen.set()

            await provider.complete(request(), on_delta)
            calls.append(deltas)
        await provider.aclose()
        return calls

    try:
        assert asyncio.run(main()) == [["first0 ", "second"], ["first1 ", "second"]]
        assert waited == [True, True]
        assert server.connections == 1
    finally:
        server.close()


def failed_call(answer: Callable[[int], bytes]) -> Any:
    """The ``ProviderError`` a call raises when the server answers with ``answer``."""
    server = RawServer(answer)
    try:
        with pytest.raises(ProviderError) as raised:
            asyncio.run(openai(server.url).complete(request()))
        return raised.value
    finally:
        server.close()


def raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


CODINGS = pytest.mark.parametrize(
    ("coding", "pack"),
    [("gzip", gzip.compress), ("deflate", zlib.compress), ("deflate", raw_deflate)],
    ids=["gzip", "deflate", "raw-deflate"],
)


@CODINGS
def test_compressed_answers_are_decoded_and_asked_for(
    coding: str, pack: Callable[[bytes], bytes]
) -> None:
    def zipped(n: int) -> bytes:
        data = pack(completion("unzipped"))
        head = f"HTTP/1.1 200 OK\r\nContent-Encoding: {coding}\r\nTransfer-Encoding: chunked"
        return head.encode() + b"\r\n\r\n" + chunk(data[:7]) + chunk(data[7:]) + b"0\r\n\r\n"

    server = RawServer(zipped)
    try:
        assert asyncio.run(openai(server.url).complete(request())).text == "unzipped"
        assert b"Accept-Encoding: gzip, deflate" in server.heads[0]
    finally:
        server.close()


@CODINGS
def test_a_compressed_answer_cut_off_is_a_connection_error_not_a_malformed_one(
    coding: str, pack: Callable[[bytes], bytes]
) -> None:
    """A body whose length was honoured but whose compressed stream never ends (a proxy
    that truncated it) read as 'malformed: not JSON'; it is the transfer that failed."""
    data = pack(completion("unzipped"))[:-6]

    def cut(n: int) -> bytes:
        head = f"HTTP/1.1 200 OK\r\nContent-Encoding: {coding}\r\nContent-Length: {len(data)}"
        return head.encode() + b"\r\n\r\n" + data

    error = failed_call(cut)
    assert "the compressed answer was cut off before its end" in str(error)
    assert error.code != "malformed_response"


@pytest.mark.parametrize(
    "head",
    ["HTTP/1.1 204 No Content", "HTTP/1.1 200 OK\r\nContent-Length: 2"],
    ids=["204", "200-blank"],
)
def test_an_empty_answer_says_it_is_empty(head: str) -> None:
    body = b"" if " 204 " in head else b"\r\n"
    error = failed_call(lambda n: head.encode() + b"\r\n\r\n" + body)
    assert error.code == "malformed_response"
    assert f"the body is empty (HTTP {head.split()[1]})" in str(error)


def test_a_redirect_is_an_error_naming_where_the_api_moved() -> None:
    moved = "https://api.example.org/v2/chat/completions"
    head = f"HTTP/1.1 301 Moved Permanently\r\nLocation: {moved}\r\nContent-Length: 0"
    error = failed_call(lambda n: head.encode() + b"\r\n\r\n")
    assert error.code == "bad_request"
    assert f"redirects to {moved}" in str(error)


def _moved(status: int, location: str) -> bytes:
    return f"HTTP/1.1 {status} Moved\r\nLocation: {location}\r\nContent-Length: 0\r\n\r\n".encode()


@pytest.mark.parametrize("status", [307, 308])
def test_a_307_or_308_to_the_same_server_is_followed_with_the_same_post(status: int) -> None:
    server = RawServer(
        lambda n: (
            _moved(status, "/v2/chat/completions") if n == 0 else whole(completion("moved on"))
        )
    )
    try:
        assert asyncio.run(openai(server.url).complete(request("the same body"))).text == "moved on"
        first, second = server.heads
        assert first.startswith(b"POST /v1/chat/completions ")
        assert second.startswith(b"POST /v2/chat/completions ")
        assert f"Bearer {KEY}".encode() in second
        assert server.bodies[0] == server.bodies[1] and b"the same body" in server.bodies[1]
    finally:
        server.close()


@pytest.mark.parametrize(
    "location", ["http://localhost:{port}/v1/chat/completions", "http://127.0.0.1:1/v1/x"]
)
def test_a_redirect_to_another_server_is_an_error_and_never_sent_the_key(location: str) -> None:
    server = RawServer(lambda n: _moved(307, location.format(port=server.port)))
    try:
        with pytest.raises(ProviderError) as raised:
            asyncio.run(openai(server.url).complete(request()))
        assert raised.value.code == "bad_request"
        assert f"redirects to {location.format(port=server.port)}" in str(raised.value)
        assert server.requests == 1
    finally:
        server.close()


def test_a_redirect_loop_ends_in_an_error() -> None:
    server = RawServer(lambda n: _moved(307, f"/v1/hop{n}"))
    try:
        with pytest.raises(ProviderError, match="redirects to /v1/hop5"):
            asyncio.run(openai(server.url).complete(request()))
        assert server.requests == 6
    finally:
        server.close()


@pytest.mark.parametrize(
    ("url", "moved", "same"),
    [
        ("http://api.example/v1", "https://api.example/v1", True),  # the upgrade to https
        ("http://api.example:80/v1", "https://api.example:443/v1", True),
        ("http://api.example:8080/v1", "https://api.example/v1", False),
        ("https://api.example/v1", "http://api.example/v1", False),  # never down to http
        ("https://api.example/v1", "https://api.example:8443/v1", False),
        ("https://api.example/v1", "https://api.example:443/v1", True),  # its default port
        ("https://api.example/v1", "https://other.example/v1", False),
    ],
)
def test_which_redirects_stay_on_the_same_server(url: str, moved: str, same: bool) -> None:
    from signal_eval_cli.providers.http import _same_server

    assert _same_server(url, moved) is same


# -- answers framed wrong: a clear error at once, never a wait for the timeout ------------------

QUICK = 5.0
"""The timeout of the calls below: what they would wait for if the framing were guessed."""


def failure_of(answer: bytes) -> ProviderError:
    """The error of a call answered with ``answer`` (the connection then kept open)."""
    server = RawServer(lambda n: answer)
    try:
        with pytest.raises(ProviderError) as raised:
            asyncio.run(openai(server.url, timeout=QUICK).complete(request()))
        return raised.value
    finally:
        server.close()


def two_texts(server: RawServer) -> list[str]:
    """The texts of two calls in turn to ``server`` by one provider (one connection pool)."""
    provider = openai(server.url, timeout=QUICK)

    async def two_calls() -> list[str]:
        return [(await provider.complete(request())).text for _ in range(2)]

    return asyncio.run(two_calls())


@pytest.mark.parametrize(
    ("head", "error"),
    [
        ("Content-Length: 146\r\nContent-Length: 5", "malformed Content-Length '146, 5'"),
        ("Content-Length: -1", "malformed Content-Length '-1'"),
        ("Content-Length: \xb2", "malformed Content-Length '\xb2'"),  # str.isdigit() says yes
        ("Transfer-Encoding: gzip, chunked", "unsupported Transfer-Encoding 'gzip, chunked'"),
    ],
)
def test_an_answer_whose_length_cannot_be_known_is_a_connection_error(
    head: str, error: str
) -> None:
    """The server keeps the connection open: a body read to its end would wait for the
    timeout, and a length guessed would read past the answer."""
    answer = f"HTTP/1.1 200 OK\r\n{head}\r\n\r\n".encode("latin-1") + completion("x")
    failure = failure_of(answer)
    assert failure.code == "connection_error"
    assert error in str(failure)


def test_a_switch_of_protocols_never_asked_for_is_a_connection_error() -> None:
    failure = failure_of(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n")
    assert failure.code == "connection_error"
    assert "switched protocols (HTTP 101)" in str(failure)


def test_content_length_sent_twice_with_one_value_is_that_length() -> None:
    body = completion("twice")
    server = RawServer(lambda n: whole(body, f"Content-Length: {len(body)}"))
    try:
        assert asyncio.run(openai(server.url, timeout=QUICK).complete(request())).text == "twice"
    finally:
        server.close()


def test_an_answer_with_both_lengths_is_read_chunked_and_its_connection_not_kept() -> None:
    """``Transfer-Encoding`` wins (RFC 9112 6.3); what follows on that connection may be
    another answer smuggled in, so it is not used again."""
    body = completion("chunked wins")
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
    server = RawServer(lambda n: answer + chunk(body) + b"0\r\n\r\n")
    try:
        assert two_texts(server) == ["chunked wins"] * 2
        assert server.connections == 2
    finally:
        server.close()


def test_a_redirect_whose_body_breaks_gives_its_connection_back() -> None:
    """With one connection allowed, a lost one would leave every later call waiting."""
    cut = b"HTTP/1.1 307 Moved\r\nLocation: /v1/x\r\nContent-Length: 100\r\n\r\nabc"
    server = RawServer(lambda n: cut if n == 0 else whole(completion("next")), close_after=True)
    provider = openai(server.url, timeout=QUICK, max_connections=1)

    async def two_calls() -> tuple[str, str]:
        with pytest.raises(ProviderError, match="closed the connection") as raised:
            await provider.complete(request())
        return raised.value.code, (await provider.complete(request())).text

    try:
        assert asyncio.run(two_calls()) == ("connection_error", "next")
    finally:
        server.close()


@pytest.mark.parametrize(
    "answer",
    [
        # lines ended by a bare LF, as some hand-written servers end them
        b"HTTP/1.1 200 OK\nContent-Type: application/json\nContent-Length: %d\n\n%s",
        # interim answers first (one with no header at all), then one with one header
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s",
        b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-A: b\n\r\n%s",  # one line ends LF only
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nContent-Length: %d\r\n\r\n%s",
    ],
    ids=["bare-lf", "interim", "mixed", "identity"],
)
def test_every_head_an_sdk_reads_is_read_and_its_connection_kept(answer: bytes) -> None:
    body = completion("read")
    server = RawServer(lambda n: answer % (len(body), body))
    try:
        assert two_texts(server) == ["read"] * 2
        assert server.connections == 1
    finally:
        server.close()


def test_a_3xx_without_a_location_says_so() -> None:
    failure = failure_of(b"HTTP/1.1 304 Not Modified\r\n\r\n")
    assert failure.code == "bad_request"
    assert "HTTP 304: " in str(failure) and "with no Location" in str(failure)
    assert "None" not in str(failure)


@pytest.mark.parametrize(
    ("base_url", "error"),
    [
        ("http://127.0.0.1:99999/v1", "Port out of range"),
        ("http://127.0.0.1:abc/v1", "Port could not be cast"),
        ("http://[::1/v1", "Invalid IPv6 URL"),
        ("ftp://127.0.0.1/v1", "not an http(s)://host URL"),
        ("http:///v1", "not an http(s)://host URL"),
    ],
)
def test_a_base_url_no_call_can_be_sent_to_is_an_input_error(base_url: str, error: str) -> None:
    """At the start (exit 2), not in every case's every attempt."""
    with pytest.raises(InputError) as raised:
        openai(base_url)
    assert str(raised.value).startswith(f"the openai provider: base URL (base_url) {base_url!r}: ")
    assert error in str(raised.value)


def test_an_answer_longer_than_any_model_api_sends_is_refused_by_its_length() -> None:
    failure = failure_of(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n{" % (MAX_ANSWER + 1))
    assert failure.code == "connection_error"
    assert "the answer's body is larger than 256 MiB" in str(failure)


@pytest.mark.parametrize("encoding", ["identity", "gzip"])
def test_an_answer_without_end_is_cut_off_before_it_fills_the_memory(
    monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    """To the end of the connection, or a compression bomb: read up to the bound only."""
    monkeypatch.setattr("signal_eval_cli.transport.client.MAX_ANSWER", 2**20)
    endless = b"x" * 4 * 2**20
    if encoding == "gzip":
        endless = gzip.compress(endless)  # 4 KiB that decode to 4 MiB
    head = f"HTTP/1.1 200 OK\r\nContent-Encoding: {encoding}\r\nConnection: close\r\n\r\n"
    failure = failure_of(head.encode() + endless)
    assert failure.code == "connection_error"
    assert "the answer's body is larger than 1 MiB" in str(failure)


def test_a_stream_without_end_is_cut_off_before_it_fills_the_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Events read as they come are bounded as a whole answer is (2 MiB of deltas here,
    against a bound of 1 MiB): a server streaming without end fails the call."""
    monkeypatch.setattr("signal_eval_cli.transport.client.MAX_ANSWER", 2**20)
    delta = b"data: %b\n\n" % json.dumps({"choices": [{"delta": {"content": "x" * 1000}}]}).encode()

    def stream(n: int) -> Iterator[bytes]:
        yield b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        for _ in range(2 * 2**20 // len(delta)):
            yield chunk(delta)
        end = {"choices": [{"delta": {}, "finish_reason": "stop"}]}
        yield chunk(b"data: %b\n\n" % json.dumps(end).encode())
        yield chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"

    server = RawServer(stream)
    try:
        with pytest.raises(ProviderError) as raised:  # without the bound: 2 MiB of text
            asyncio.run(openai(server.url, stream=True, timeout=QUICK).complete(request()))
        assert raised.value.code == "connection_error"
        assert "the answer's body is larger than 1 MiB" in str(raised.value)
    finally:
        server.close()


HEADS = [
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n",
    b"HTTP/1.1 204 No Content\r\n\r\n",
    b"HTTP/1.1 200 OK\nContent-Length: 2\nX-A: b\n\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: b\n\r\n",
]


@pytest.mark.parametrize("head", HEADS, ids=["crlf", "no-headers", "bare-lf", "mixed"])
def test_a_head_is_found_once_all_of_it_has_come_in_any_pieces(head: bytes) -> None:
    """The connection keeps what arrives and looks for the head's end in it: every
    prefix of a head is an incomplete one, and the whole one (the body after it) is
    the head as the header parser takes it, CRLF-joined."""
    from signal_eval_cli.transport.client import _head_end

    for size in range(len(head)):
        assert _head_end(bytearray(head[:size])) is None, head[:size]
    block, length = _head_end(bytearray(head + b"{}")) or (b"", 0)
    assert length == len(head)
    assert block == b"\r\n".join(head.replace(b"\r\n", b"\n").rstrip(b"\n").split(b"\n"))


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nX-A: " + b"a" * 70_000,  # never ends
        b"HTTP/1.1 200 OK\nX-A: " + b"a" * 70_000,
        b"HTTP/1.1 200 OK\r\nX-A: " + b"a" * 70_000 + b"\r\nContent-Length: 2\r\n\r\n{}",
    ],
    ids=["crlf", "bare-lf", "ended"],
)
def test_an_answer_head_larger_than_64_kib_is_a_connection_error(answer: bytes) -> None:
    """At once, not a wait for the timeout (the server keeps the connection open)."""
    failure = failure_of(answer)
    assert failure.code == "connection_error"
    assert "the answer's head is too large" in str(failure)


def test_an_answer_longer_than_the_connection_buffers_is_read_whole() -> None:
    """The connection stops reading while a few reads' worth wait unread, and reads on
    when the answer's reader wants more: 4 MiB come through whole, as one answer."""
    text = "y" * 4 * 2**20
    server = RawServer(lambda n: whole(completion(text)))
    try:
        assert two_texts(server) == [text, text]
        assert server.connections == 1
    finally:
        server.close()


def test_a_content_length_too_long_for_int_is_a_413_not_a_value_error() -> None:
    """``int`` refuses numbers past 4,300 digits: a 5,000-digit Content-Length raised a
    ValueError that no reader of a bad message expects."""
    from signal_eval_cli.transport.wire import BadMessage, content_length

    with pytest.raises(BadMessage, match="Content-Length of 5000 digits") as caught:
        content_length("9" * 5000)
    assert caught.value.status == 413
    assert content_length("0" * 30 + "5") == 5  # leading zeros are no length
    assert content_length("123456789012345678") == 123456789012345678
