"""The OpenAI and Anthropic providers against the loopback mock: signals, tools, faults.

Nothing is mocked: every call goes over real HTTP (our own client) to
:class:`mock_servers.MockLLMServer` on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from mock_servers import Fault, MockLLMServer, Reply, ToolUse

from signal_eval_cli.errors import InputError
from signal_eval_cli.providers import ProviderError, ProviderRequest, call_provider
from signal_eval_cli.providers.anthropic_provider import to_anthropic_request
from signal_eval_cli.providers.pricing import Price, PriceTable, default_prices, parse_price
from signal_eval_cli.providers.recording import RecordingProvider
from signal_eval_cli.providers.registry import make_provider
from signal_eval_cli.providers.reliability import (
    AdaptiveLimiter,
    ProviderCallError,
    ReliableProvider,
    RetryPolicy,
    classify_exception,
    parse_retry_after,
    redact,
)
from signal_eval_cli.signals import Signal

KEY = "sk-test-9f8e7d6c5b4a39281706"
APIS = ["openai", "anthropic"]
FAST = {"timeout": 2.0, "max_retries": 3, "retry_base_delay": 0.01, "retry_max_delay": 0.05}


@pytest.fixture(scope="module")
def mock() -> Iterator[MockLLMServer]:
    with MockLLMServer() as server:
        yield server


@pytest.fixture
def server(mock: MockLLMServer) -> Iterator[MockLLMServer]:
    mock.reset()
    mock.responder = lambda call: Reply("ANSWER: " + " ".join(call.last_user_text.split()[:5]))
    mock.capacity = None
    yield mock
    mock.reset()


def provider(server: MockLLMServer, api: str, model: str = "test-model", **options: Any) -> Any:
    url = server.openai_base_url if api == "openai" else server.anthropic_base_url
    return make_provider(f"{api}:{model}", api_key=KEY, base_url=url, **{**FAST, **options})


def request(text: str = "hello there general kenobi", **kw: Any) -> ProviderRequest:
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": text}]
    return ProviderRequest(case_id="c1", agent="a", messages=messages, **kw)


class Recorder:
    def __init__(self) -> None:
        self.signals: list[Signal] = []

    def __call__(
        self, name: str, payload: Any = None, *, agent: str | None = None, parent: Any = None
    ) -> Signal:
        signal = Signal(
            name, payload, f"s{len(self.signals)}", "t", agent, getattr(parent, "id", None)
        )
        self.signals.append(signal)
        return signal

    def named(self, name: str) -> list[Signal]:
        return [s for s in self.signals if s.name == name]


def call(p: Any, req: ProviderRequest) -> Recorder:
    emit = Recorder()
    asyncio.run(call_provider(p, req, emit))
    return emit


# -- answers, streaming, usage, cost ---------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_text_answer_emits_the_signals(server: MockLLMServer, api: str, stream: bool) -> None:
    p = provider(server, api, "gpt-4o-mini", stream=stream)
    emit = call(p, request(temperature=0.2))
    names = [s.name for s in emit.signals]
    assert names[0] == "provider:start" and names[-1] == "provider:end"
    deltas = [s.payload["content"] for s in emit.named("text:delta")]
    (complete,) = emit.named("text:complete")
    assert complete.payload["content"] == "ANSWER: hello there general kenobi"
    if stream:
        assert len(deltas) > 1 and "".join(deltas) == complete.payload["content"]
    else:
        assert deltas == []
    (end,) = emit.named("provider:end")
    usage = end.payload["usage"]
    assert usage["inputTokens"] > 0 and usage["outputTokens"] == 5
    assert end.payload["durationMs"] > 0
    assert end.payload["model"] == "gpt-4o-mini"
    price = default_prices().lookup("gpt-4o-mini")
    assert price is not None
    assert end.payload["cost"] == pytest.approx(
        price.cost(usage["inputTokens"], usage["outputTokens"])
    )
    (sent,) = server.calls
    assert sent.body["model"] == "gpt-4o-mini" and sent.body["temperature"] == 0.2
    assert sent.stream is stream
    if api == "anthropic":
        assert sent.body["system"] == "be brief" and sent.body["max_tokens"] > 0
        assert [m["role"] for m in sent.body["messages"]] == ["user"]
    else:
        assert sent.body["messages"][0] == {"role": "system", "content": "be brief"}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api", APIS)
def test_tool_use_emits_tool_call_and_result(server: MockLLMServer, api: str, stream: bool) -> None:
    server.responder = lambda c: Reply(
        "Let me look.",
        [ToolUse("read_file", {"path": "app.py", "lines": [1, 2]}), ToolUse("run", {"cmd": "ls"})],
    )
    tools = [
        {"name": "read_file", "description": "Read a file", "input_schema": {"type": "object"}},
        "run",
    ]
    emit = call(provider(server, api, stream=stream), request(tools=tools))
    calls = emit.named("tool:call")
    assert [c.payload["name"] for c in calls] == ["read_file", "run"]
    assert calls[0].payload["input"] == {"path": "app.py", "lines": [1, 2]}
    results = emit.named("tool:result")
    assert [r.payload["id"] for r in results] == [c.payload["id"] for c in calls]
    assert emit.named("text:complete")[0].payload["content"] == "Let me look."
    sent = server.calls[0].body["tools"]
    if api == "openai":
        assert sent[0]["type"] == "function" and sent[0]["function"]["name"] == "read_file"
        assert sent[1]["function"]["parameters"] == {"type": "object", "properties": {}}
    else:
        assert sent[0] == {
            "name": "read_file",
            "description": "Read a file",
            "input_schema": {"type": "object"},
        }


def test_tool_conversation_is_converted_for_anthropic() -> None:
    system, messages = to_anthropic_request(
        [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "t1", "name": "f", "input": {}}],
            },
            {"role": "tool", "tool_call_id": "t1", "content": {"ok": True}},
        ]
    )
    assert system == "s"
    assert messages[1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
    }
    assert messages[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": '{"ok": true}',
    }


def test_provider_model_wins_and_request_model_is_the_fallback(server: MockLLMServer) -> None:
    asyncio.run(provider(server, "openai", "spec-model").complete(request(model="agent-model")))
    assert server.calls[-1].body["model"] == "spec-model"


def test_environment_gives_base_url_and_key(
    server: MockLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY + "-a")
    for api in APIS:
        asyncio.run(make_provider(f"{api}:m", **FAST).complete(request()))
    assert [c.key for c in server.calls] == [KEY, KEY + "-a"]
    assert [c.api for c in server.calls] == APIS


SDK_HEADERS = (
    "authorization", "x-api-key", "anthropic-version", "openai-organization", "openai-project",
    "content-type", "x-team",
)  # fmt: skip


def test_the_environment_gives_the_headers_the_official_sdks_send(
    server: MockLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Key, organisation, project, version and custom headers: the same as the SDKs' own
    clients send, from the same variables (each SDK is asked directly, then the provider)."""
    openai = pytest.importorskip("openai")
    anthropic = pytest.importorskip("anthropic")
    env = {
        "OPENAI_BASE_URL": server.openai_base_url,
        "OPENAI_API_KEY": KEY,
        "OPENAI_ORG_ID": "org-42",
        "OPENAI_PROJECT_ID": "proj-7",
        "OPENAI_CUSTOM_HEADERS": "X-Team: evals\nbroken line",
        "ANTHROPIC_BASE_URL": server.anthropic_base_url,
        "ANTHROPIC_API_KEY": KEY + "-a",
        "ANTHROPIC_CUSTOM_HEADERS": "X-Team: claude",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    messages: Any = [{"role": "user", "content": "hi"}]

    async def by_the_sdks() -> None:
        async with openai.AsyncOpenAI(max_retries=0) as client:
            await client.chat.completions.create(model="m", messages=messages)
        async with anthropic.AsyncAnthropic(max_retries=0) as client:
            await client.messages.create(model="m", max_tokens=5, messages=messages)

    asyncio.run(by_the_sdks())
    for api in APIS:
        asyncio.run(make_provider(f"{api}:m", **FAST).complete(request()))
    sdk, ours = server.calls[:2], server.calls[2:]
    assert [c.path for c in ours] == [c.path for c in sdk]
    for theirs, mine in zip(sdk, ours, strict=True):
        expected = sent_headers(theirs.headers)
        assert sent_headers(mine.headers) == expected
    assert ours[0].headers["openai-organization"] == "org-42"
    # The API's documented version and key header (anthropic 0.x sends them too; 2.x sends
    # its own later version, and the key as a bearer token, which the API takes alike).
    assert ours[1].headers["anthropic-version"] == "2023-06-01"
    assert ours[1].headers["x-api-key"] == KEY + "-a"


def sent_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """What a client sends of :data:`SDK_HEADERS`, its key under one name (``x-api-key``
    or ``authorization: Bearer``), Anthropic's version header left out."""
    sent = {h: headers[h] for h in SDK_HEADERS if h in headers and h != "anthropic-version"}
    if "x-api-key" in sent:
        sent["authorization"] = "Bearer " + sent.pop("x-api-key")
    return sent


@pytest.mark.parametrize(
    ("api", "event", "code", "text"),
    [
        (
            "openai",
            b'data: {"error": {"message": "upstream broke", "type": "server_error"}}\n\n',
            "api_error",
            "openai:test-model: upstream broke (server_error)",
        ),
        (
            "anthropic",
            b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", '
            b'"message": "Overloaded"}}\n\n',
            "overloaded",
            "anthropic:test-model: the API returned an error: Overloaded (overloaded_error)",
        ),
    ],
)
def test_an_error_event_inside_a_stream_is_a_coded_error(
    server: MockLLMServer, api: str, event: bytes, code: str, text: str
) -> None:
    server.fail_next(Fault.malformed(event))
    with pytest.raises(ProviderError) as raised:
        asyncio.run(provider(server, api, stream=True, max_retries=0).complete(request()))
    assert raised.value.code == code
    assert str(raised.value).startswith(text)


def test_a_proxy_from_the_environment_is_used_and_netrc_never_replaces_the_key(
    server: MockLLMServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """HTTP_PROXY and NO_PROXY as the SDKs honour them; ~/.netrc (which aiohttp's trust_env
    would send as Basic auth) is not the API key's business."""
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login someone password hunter2\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    monkeypatch.setenv("HTTP_PROXY", refused_url())
    for name in ("NO_PROXY", "no_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ProviderError) as raised:  # through the (refused) proxy
        asyncio.run(provider(server, "openai", max_retries=0).complete(request()))
    assert raised.value.code == "connection_error"
    assert server.calls == []
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    for api in APIS:
        assert asyncio.run(provider(server, api).complete(request())).text.startswith("ANSWER:")
    assert [c.key for c in server.calls] == [KEY, KEY]


def test_missing_key_is_an_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(InputError, match="OPENAI_API_KEY"):
        make_provider("openai:m")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt-4o", "expected openai:<model>"),
        ("bedrock:x", "expected openai:<model>"),
        ("openai:", "name the model"),
    ],
)
def test_bad_specs_are_input_errors(spec: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        make_provider(spec)


def test_unknown_option_is_named() -> None:
    with pytest.raises(InputError, match=r"unknown option.*max_conections"):
        make_provider("openai:m", api_key=KEY, max_conections=3)


def test_the_transport_is_our_own_and_no_sdk_is_imported(tmp_path: Any) -> None:
    """A provider built and called in a fresh process imports neither SDK (nor httpx,
    nor aiohttp: ``transport: aiohttp``, its former name, still loads)."""
    probe = (
        "import asyncio, sys\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from mock_servers import MockLLMServer\n"
        "from signal_eval_cli.providers import ProviderRequest\n"
        "from signal_eval_cli.providers.registry import make_provider\n"
        "with MockLLMServer() as server:\n"
        "    for api, url in (('openai', server.openai_base_url),\n"
        "                     ('anthropic', server.anthropic_base_url)):\n"
        "        p = make_provider(f'{api}:m', api_key='k', base_url=url, transport='aiohttp')\n"
        "        assert p.inner.transport == 'http'\n"
        "        request = ProviderRequest('c', 'a', [{'role': 'user', 'content': 'hi'}])\n"
        "        assert asyncio.run(p.complete(request)).text == 'ANSWER: hi'\n"
        "print(*(m for m in ('openai', 'anthropic', 'httpx', 'aiohttp') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(Path(__file__).parent)],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout.strip()) == (0, ""), done.stderr
    with pytest.raises(InputError, match="transport must be http"):
        make_provider("openai:m", api_key=KEY, transport="httpx")


# -- malformed answers are errors, never empty answers -----------------------------------------

MALFORMED_OPENAI = [
    b"<html>502 bad gateway</html>",
    b"{}",
    b'{"choices": []}',
    b'{"choices": [{"index": 0}]}',
    b'{"choices": [{"message": {"role": "assistant", "content": null}}]}',
    b'{"choices": [{"message": {"content": 42}}]}',
    b'{"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": "many"}}',
    b'{"choices": [{"message": {"content": null, "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": "{oops"}}]}}]}',
]
MALFORMED_ANTHROPIC = [
    b"not json at all",
    b"{}",
    b'{"type": "message", "content": [{"text": "no type"}]}',
    b'{"type": "message", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "x"}]}',
    b'{"type": "message", "content": [], "stop_reason": null}',
]


@pytest.mark.parametrize(
    ("api", "body"),
    [("openai", b) for b in MALFORMED_OPENAI] + [("anthropic", b) for b in MALFORMED_ANTHROPIC],
)
def test_malformed_body_is_an_error_not_an_empty_answer(
    server: MockLLMServer, api: str, body: bytes
) -> None:
    server.fail_next(Fault.malformed(body))
    emit = Recorder()
    with pytest.raises(ProviderError) as raised:
        asyncio.run(call_provider(provider(server, api), request(), emit))
    assert raised.value.code == "malformed_response"
    assert "malformed response" in str(raised.value)
    assert emit.named("text:complete") == []
    (error,) = emit.named("provider:error")
    assert error.payload["code"] == "malformed_response"
    assert len(server.calls) == 1  # a malformed body is not retried


@pytest.mark.parametrize("api", APIS)
def test_malformed_stream_event_is_an_error(server: MockLLMServer, api: str) -> None:
    server.fail_next(Fault.malformed())
    with pytest.raises(ProviderError, match="not JSON") as raised:
        asyncio.run(provider(server, api, stream=True).complete(request()))
    assert raised.value.code == "malformed_response"


# -- faults: recover within the budget, else fail clearly ------------------------------------

ATTEMPT_TIMEOUT = 1.5
"""Seconds an attempt may take when the fault is ``slow``, which is four times longer, so
it always times out."""


def attempt_timeout(fault: str) -> float:
    """The attempt timeout for ``fault``: short only where the timeout is what is tested. A
    fault that ends the attempt by itself (a status, a dropped or cut connection) gets a
    generous one: on a loaded machine the mock may be slower to answer than 1.5 s, and the
    attempt would time out instead of seeing the fault."""
    return ATTEMPT_TIMEOUT if fault == "slow" else 30.0


RECOVERABLE = {
    "429": lambda: Fault.rate_limited("0.05"),
    "500": lambda: Fault.server_error(500),
    "503": lambda: Fault.server_error(503),
    "drop": Fault.drop,
    "slow": lambda: Fault.slow(4 * ATTEMPT_TIMEOUT),
    "truncated": Fault.truncated,
    "stream_cut": Fault.stream_cut,
}


@pytest.mark.parametrize("fault", list(RECOVERABLE))
@pytest.mark.parametrize("api", APIS)
def test_fault_recovers_within_the_retry_budget(
    server: MockLLMServer, api: str, fault: str
) -> None:
    stream = fault == "stream_cut"
    p = provider(server, api, stream=stream, timeout=attempt_timeout(fault))
    server.fail_next(RECOVERABLE[fault](), RECOVERABLE[fault]())
    started = time.perf_counter()
    emit = call(p, request())
    elapsed = time.perf_counter() - started
    assert emit.named("text:complete")[0].payload["content"].startswith("ANSWER:")
    assert emit.named("provider:error") == []
    assert len(server.calls) == 3 and server.pending_faults == 0
    assert p.retries == 2
    if fault == "429":
        assert elapsed >= 0.1  # two Retry-After waits of 0.05 s
    if stream:  # the cut attempts' deltas were dropped: no duplicated text
        assert "".join(s.payload["content"] for s in emit.named("text:delta")).startswith("ANSWER:")
        assert len(emit.named("text:delta")) == 5


@pytest.mark.parametrize("fault", ["429", "500", "drop", "slow", "truncated"])
@pytest.mark.parametrize("api", APIS)
def test_fault_beyond_the_budget_fails_with_a_clear_error(
    server: MockLLMServer, api: str, fault: str
) -> None:
    p = provider(server, api, timeout=attempt_timeout(fault), max_retries=2)
    server.fail_next(*(RECOVERABLE[fault]() for _ in range(3)))
    emit = Recorder()
    started = time.perf_counter()
    with pytest.raises(ProviderError) as raised:
        asyncio.run(call_provider(p, request(), emit))
    assert time.perf_counter() - started < 60  # a bound on a hang, not on speed
    expected = {
        "429": "rate_limited",
        "500": "server_error",
        "drop": "connection_error",
        "slow": "timeout",
        "truncated": "connection_error",
    }[fault]
    assert raised.value.code == expected
    assert "gave up after 3 attempts" in str(raised.value)
    assert emit.named("provider:error")[0].payload["code"] == expected
    assert len(server.calls) == 3


def test_retry_after_longer_than_allowed_fails_at_once(server: MockLLMServer) -> None:
    server.fail_next(Fault.rate_limited("3600"))
    started = time.perf_counter()
    with pytest.raises(ProviderError, match="retry after 3600 s") as raised:
        asyncio.run(provider(server, "openai", max_retry_after=60).complete(request()))
    assert raised.value.code == "rate_limited"
    assert len(server.calls) == 1  # not retried
    assert time.perf_counter() - started < 30  # nor waited for, even the allowed 60 s


@pytest.mark.parametrize(
    ("status", "code"), [(400, "bad_request"), (401, "auth_error"), (404, "not_found")]
)
def test_client_errors_are_not_retried(server: MockLLMServer, status: int, code: str) -> None:
    server.fail_next(Fault.status_code(status, "nope"))
    with pytest.raises(ProviderError) as raised:
        asyncio.run(provider(server, "openai").complete(request()))
    assert raised.value.code == code and f"HTTP {status}" in str(raised.value)
    assert len(server.calls) == 1


@pytest.mark.parametrize("api", APIS)
def test_sdk_retries_are_off_so_ours_is_the_only_policy(server: MockLLMServer, api: str) -> None:
    server.fail_next(Fault.server_error(500))
    with pytest.raises(ProviderError):
        asyncio.run(provider(server, api, max_retries=0).complete(request()))
    assert len(server.calls) == 1


@pytest.mark.parametrize("api", APIS)
def test_api_key_never_appears_in_errors(server: MockLLMServer, api: str) -> None:
    server.fail_next(Fault.status_code(401, "Incorrect API key provided: {key}. Try again."))
    emit = Recorder()
    with pytest.raises(ProviderError) as raised:
        asyncio.run(call_provider(provider(server, api), request(), emit))
    assert server.calls[0].key == KEY  # the server did echo it
    assert KEY not in str(raised.value) and "[redacted]" in str(raised.value)
    assert KEY not in json.dumps([s.to_dict() for s in emit.signals])


def test_redact() -> None:
    assert redact("key sk-abc123456789 and secret-xyz", ["secret-xyz"]) == (
        "key [redacted] and [redacted]"
    )


def refused_url() -> str:
    """A local URL nothing listens on: connections to it are refused at once."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("api", APIS)
def test_connection_refused_is_a_connection_error_not_a_timeout(api: str) -> None:
    url = refused_url()
    p = make_provider(f"{api}:m", api_key=KEY, base_url=url, **{**FAST, "max_retries": 1})
    with pytest.raises(ProviderError) as raised:
        asyncio.run(p.complete(request()))
    message = str(raised.value)
    assert raised.value.code == "connection_error", message
    assert "connection failed: " in message and "timed out" not in message
    assert "gave up after 2 attempts" in message
    assert "Cannot connect to host 127.0.0.1:" in message
    assert KEY not in message


def test_classify_exception_walks_the_cause_chain() -> None:
    import httpx

    def chained(*links: BaseException) -> BaseException:
        for index in range(len(links) - 1):
            links[index].__cause__ = links[index + 1]
        return links[0]

    class APITimeoutError(Exception):
        pass

    class ClientConnectorError(OSError):
        pass

    refused = chained(
        APITimeoutError("Request timed out."),
        httpx.ConnectTimeout("Cannot connect to host 127.0.0.1:9 sk-abcdef123456"),
        ClientConnectorError("Cannot connect to host 127.0.0.1:9 sk-abcdef123456"),
        ConnectionRefusedError(111, "Connect call failed"),
    )
    error = classify_exception(refused, label="openai:x")
    assert error.code == "connection_error"
    assert str(error).startswith("openai:x: connection failed: Cannot connect to host 127.0.0.1:9")
    assert "sk-abcdef123456" not in str(error)
    # a connect that really timed out stays a timeout
    slow = chained(
        APITimeoutError("Request timed out."),
        httpx.ConnectTimeout("timed out"),
        asyncio.TimeoutError(),
    )
    assert classify_exception(slow, label="openai:x").code == "timeout"
    assert classify_exception(APITimeoutError("x"), label="l").code == "timeout"


def test_cancellation_propagates_and_frees_the_slot(server: MockLLMServer) -> None:
    p = provider(server, "openai")
    server.fail_next(Fault.slow(5))

    async def main() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(p.complete(request()), 0.2)
        assert p.limiter.inflight == 0

    asyncio.run(main())


# -- retry policy and the adaptive limiter -----------------------------------------------------


def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=4.0, jitter=0.5)
    assert [policy.backoff(i, rng=lambda: 0.0) for i in range(5)] == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert [policy.backoff(i, rng=lambda: 1.0) for i in range(3)] == [0.25, 0.5, 1.0]
    assert policy.delay(0, retry_after=3.0, rng=lambda: 0.0) == 3.0
    assert policy.delay(3, retry_after=0.1, rng=lambda: 0.0) == 4.0


def test_retry_after_parsing() -> None:
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "150", "retry-after": "9"}) == 0.15
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_limiter_halves_once_per_congestion_event_and_recovers() -> None:
    async def main() -> None:
        limiter = AdaptiveLimiter(16)
        starts = [await limiter.acquire() for _ in range(8)]
        for started in starts:  # eight 429s from one burst: one decrease
            limiter.release(started, outcome="rate_limited")
        assert limiter.current == 8 and limiter.decreases == 1
        started = await limiter.acquire()
        limiter.release(started, outcome="rate_limited")  # a new event: halve again
        assert limiter.current == 4 and limiter.decreases == 2
        for _ in range(4):  # below the threshold? it is the threshold: grow by ~1/limit
            limiter.release(await limiter.acquire())
        assert 4 < limiter.limit < 6
        for _ in range(200):
            limiter.release(await limiter.acquire())
        assert limiter.current == 16

    asyncio.run(main())


def test_limiter_bounds_concurrency_and_hands_slots_to_waiters() -> None:
    async def main() -> None:
        limiter = AdaptiveLimiter(3)
        running = peak = 0

        async def work() -> None:
            nonlocal running, peak
            started = await limiter.acquire()
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.01)
            running -= 1
            limiter.release(started)

        await asyncio.gather(*(work() for _ in range(20)))
        assert peak == 3 and limiter.inflight == 0

    asyncio.run(main())


def test_limiter_pauses_for_retry_after() -> None:
    async def main() -> None:
        limiter = AdaptiveLimiter(4)
        limiter.release(await limiter.acquire(), outcome="rate_limited", retry_after=0.2)
        began = time.monotonic()
        limiter.release(await limiter.acquire())
        assert time.monotonic() - began >= 0.15

    asyncio.run(main())


def test_rate_limited_server_is_backed_off_and_every_call_succeeds(server: MockLLMServer) -> None:
    server.capacity = 4
    server.capacity_retry_after = "0.02"
    server.latency = 0.02
    p = provider(server, "openai", max_connections=32, max_retries=8)

    async def main() -> list[str]:
        return [
            r.text
            for r in await asyncio.gather(*(p.complete(request(f"q {i}")) for i in range(60)))
        ]

    try:
        texts = asyncio.run(main())
    finally:
        server.latency = 0.0
    assert texts == [f"ANSWER: q {i}" for i in range(60)]
    assert server.rejected > 0 and p.limiter.decreases >= 1


def test_reliable_provider_is_generic() -> None:
    class Flaky:
        name = "flaky"

        def __init__(self) -> None:
            self.n = 0

        async def complete(self, request: ProviderRequest, on_delta: Any = None) -> Any:
            self.n += 1
            if self.n < 3:
                raise ProviderCallError("boom", code="server_error")
            from signal_eval_cli.providers import ProviderResponse

            return ProviderResponse("ok")

    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    reliable = ReliableProvider(Flaky(), policy=RetryPolicy(base_delay=1, jitter=0), sleep=sleep)
    assert asyncio.run(reliable.complete(request())).text == "ok"
    assert slept == [1.0, 2.0]


# -- prices ---------------------------------------------------------------------------------------


def test_price_lookup_exact_then_longest_prefix() -> None:
    table = default_prices()
    assert table.lookup("gpt-4o-mini-2024-07-18") == table.lookup("gpt-4o-mini")
    assert table.lookup("gpt-4o-2024-08-06") == table.lookup("gpt-4o")
    assert table.lookup("claude-sonnet-4-20250514") == table.lookup("claude-sonnet-4")
    assert table.lookup("openai/gpt-4o") == table.lookup("gpt-4o")
    assert table.lookup("test-model") is None
    assert table.cost("test-model", 1000, 1000) == 0.0
    assert table.cost("gpt-4o", 1_000_000, 1_000_000) == pytest.approx(12.5)


def test_the_shipped_prices_read_the_same_with_or_without_libyaml(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """libyaml reads the shipped table (fast) to the values the pure-Python reader gives."""
    import yaml

    if not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML without libyaml")
    default_prices.cache_clear()
    fast = default_prices()
    monkeypatch.delattr(yaml, "CSafeLoader")
    default_prices.cache_clear()
    try:
        pure = default_prices()
    finally:
        default_prices.cache_clear()
    assert fast is not pure
    assert fast._prices == pure._prices
    assert len(fast._prices) > 10


def test_price_overrides() -> None:
    table = default_prices().with_overrides(
        {"test-model": {"input": 1, "output": 2}, "gpt-4o": [0, 0], "x": "3:4"}
    )
    assert table.cost("test-model", 500_000, 250_000) == pytest.approx(1.0)
    assert table.cost("gpt-4o", 10, 10) == 0.0
    assert table.lookup("x") == Price(3, 4)
    assert parse_price("m=0.5:1.5") == ("m", Price(0.5, 1.5))
    for bad in ("m=1", "m", "=1:2", "m=a:b", "m=-1:2"):
        with pytest.raises(InputError):
            parse_price(bad)
    with pytest.raises(InputError, match="price of 'y'"):
        PriceTable({}).with_overrides({"y": {"input": 1}})


def test_price_override_reaches_provider_end(server: MockLLMServer) -> None:
    p = provider(server, "openai", prices={"test-model": {"input": 1_000_000, "output": 0}})
    emit = call(p, request())
    (end,) = emit.named("provider:end")
    assert end.payload["cost"] == pytest.approx(end.payload["usage"]["inputTokens"])


# -- registry: cassette specs and modes ----------------------------------------------------------


def test_cassette_spec_and_auto_mode_need_no_key(
    server: MockLLMServer, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cassette = tmp_path / "c.yaml"
    recorder = provider(server, "openai", cassette=str(cassette), mode="record")
    assert isinstance(recorder, RecordingProvider)
    asyncio.run(recorder.complete(request()))
    recorder.save()
    scripted = make_provider(f"cassette:{cassette}")
    assert isinstance(scripted, RecordingProvider) and scripted.mode == "replay"
    replay = make_provider("openai:test-model", cassette=str(cassette))  # auto, file exists
    assert isinstance(replay, RecordingProvider) and replay.mode == "replay"
    assert asyncio.run(replay.complete(request())).text.startswith("ANSWER:")
    with pytest.raises(InputError, match="cassette not found"):
        make_provider("openai:m", cassette=str(tmp_path / "none.yaml"), mode="replay")
    with pytest.raises(InputError, match="needs a cassette"):
        make_provider("openai:m", mode="record")


def test_calls_reach_the_server_concurrently(server: MockLLMServer) -> None:
    server.latency = 0.05
    p = provider(server, "openai", max_connections=10)
    deadline = time.monotonic() + 60  # slow answers earlier tests walked away from end
    while server.inflight and time.monotonic() < deadline:
        time.sleep(0.05)
    server.reset()
    baseline = server.inflight

    async def main() -> float:
        began = time.perf_counter()
        await asyncio.gather(*(p.complete(request(f"q {i}")) for i in range(30)))
        return time.perf_counter() - began

    try:
        elapsed = asyncio.run(main())
    finally:
        server.latency = 0.0
    assert server.peak_inflight - baseline == 10  # ten at once, never more: not one by one
    assert elapsed > 0
