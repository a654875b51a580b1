"""The run's model proxy: real openai/anthropic SDKs recorded against a loopback mock,
then replayed offline with the mock stopped, identically."""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import hashlib
import json
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import agent_script as script
import pytest
from mock_servers import Fault, MockLLMServer, Reply, ToolUse

from signal_eval_cli.dataset import EvalDataset
from signal_eval_cli.errors import InputError
from signal_eval_cli.providers.pricing import Price, PriceTable
from signal_eval_cli.providers.reliability import RetryPolicy
from signal_eval_cli.proxy.cassette import ProxyCassette
from signal_eval_cli.proxy.matching import changes, key_name, normalise, request_key
from signal_eval_cli.proxy.route import CaseRoute
from signal_eval_cli.proxy.server import ModelProxy, Upstream
from signal_eval_cli.runner import RunOptions, run_dataset
from signal_eval_cli.validate import validate_path

FAST = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.05)
WEATHER_TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object"}},
}


def responder(call: Any) -> Reply | str:
    text = call.last_user_text
    if "weather" in text:
        return Reply("", tool_calls=[ToolUse("get_weather", {"city": "Paris"})])
    return Reply(f"answer to {text} from {call.api}")


def upstream(mock: MockLLMServer | None) -> Upstream:
    """The mock's address, or (mock stopped) a dead port: replay must not need it."""
    url = mock.url if mock is not None else "http://127.0.0.1:9"
    return Upstream(f"{url}/v1", url, "sk-secret-openai", "sk-secret-anthropic")


def sdk_calls(ctx: Any, text: str) -> list[str]:
    """Sync, streaming and tool calls with both SDKs; returns what the harness saw."""
    oa, an = ctx.openai(), ctx.anthropic()
    messages = [{"role": "user", "content": text}]
    out = [
        oa.chat.completions.create(model="gpt-4o-mini", messages=messages)
        .choices[0]
        .message.content
    ]
    stream = oa.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)
    out.append("".join(c.choices[0].delta.content or "" for c in stream if c.choices))
    tool = oa.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": f"weather for {text}"}],
        tools=[WEATHER_TOOL],
    )
    out.append(tool.choices[0].message.tool_calls[0].function.name)
    msg = an.messages.create(model="claude-3-5-haiku", max_tokens=64, messages=messages)
    out.append(msg.content[0].text)
    with an.messages.stream(model="claude-3-5-haiku", max_tokens=64, messages=messages) as s:
        out.append("".join(s.text_stream))
    tool_use = an.messages.create(
        model="claude-3-5-haiku",
        max_tokens=64,
        messages=[{"role": "user", "content": f"weather for {text}"}],
        tools=[{"name": "get_weather", "input_schema": {"type": "object"}}],
    )
    out.append(tool_use.content[0].name)
    return out


async def async_calls(ctx: Any, text: str) -> list[str]:
    oa, an = ctx.openai(async_=True), ctx.anthropic(async_=True)
    messages = [{"role": "user", "content": f"async {text}"}]
    out = [
        (await oa.chat.completions.create(model="gpt-4o", messages=messages))
        .choices[0]
        .message.content
    ]
    stream = await oa.chat.completions.create(model="gpt-4o", messages=messages, stream=True)
    out.append("".join([c.choices[0].delta.content or "" async for c in stream if c.choices]))
    async with an.messages.stream(model="claude-3-5-haiku", max_tokens=64, messages=messages) as s:
        out.append("".join([t async for t in s.text_stream]))
    return out


class SyncHarness:
    def run(self, input: Any, ctx: Any) -> list[dict[str, Any]]:
        return [{"name": "text:complete", "payload": {"content": "|".join(sdk_calls(ctx, input))}}]


class AsyncHarness:
    async def run(self, input: Any, ctx: Any) -> list[dict[str, Any]]:
        out = await async_calls(ctx, input)
        return [{"name": "text:complete", "payload": {"content": "|".join(out)}}]


def dataset(tmp_path: Path, n: int, **proxy: Any) -> EvalDataset:
    data = {
        "name": "proxied",
        "proxy": proxy,
        "cases": [{"id": f"case-{i}", "input": f"question {i}"} for i in range(n)],
    }
    return EvalDataset.from_data(data, tmp_path / "proxied.yaml")


def comparable(result: Any) -> list[Any]:
    """Each case's signals without ids and timestamps (parents as positions)."""
    out = []
    for case in result.cases:
        signals = [s for s in case.signals if not s.name.startswith("harness:")]
        index = {s.id: i for i, s in enumerate(signals)}
        out.append(
            (
                case.case_id,
                case.passed,
                case.error,
                [(s.name, s.payload, index.get(s.parent)) for s in signals],
            )
        )
    return out


def run(harness: Any, ds: EvalDataset, mode: str, mock: MockLLMServer | None, **kw: Any) -> Any:
    from signal_eval_cli.proxy.config import proxy_cassette

    concurrency = kw.pop("concurrency", 4)
    proxy = ModelProxy(
        proxy_cassette(ds),
        mode,  # type: ignore[arg-type]
        upstream=upstream(mock),
        retry=FAST,
        match=ds.proxy.get("match"),
        case_order=[c.id for c in ds.cases],
        **kw,
    )
    options = RunOptions(concurrency=concurrency, proxy=proxy.start())
    try:
        result = asyncio.run(run_dataset(harness, ds, options))
    finally:
        proxy.stop()
    proxy.save()
    return result, proxy


@pytest.mark.parametrize("harness", [SyncHarness(), AsyncHarness()], ids=["sync", "async"])
def test_sdks_record_then_replay_offline_identically(tmp_path: Path, harness: Any) -> None:
    ds = dataset(tmp_path, 3)
    with MockLLMServer(responder) as mock:
        recorded, proxy = run(harness, ds, "record", mock)
        calls = len(mock.calls)
    assert all(c.passed for c in recorded.cases), [c.error for c in recorded.cases]
    assert calls == len(recorded.cases) * (6 if isinstance(harness, SyncHarness) else 3)
    cassette = tmp_path / "cassettes" / "proxied.proxy.yaml"
    text = cassette.read_text()
    assert "sk-secret" not in text and "signal-eval-proxy" not in text  # keys never written
    replayed, proxy = run(harness, ds, "replay", None)
    assert proxy.misses == []
    assert comparable(replayed) == comparable(recorded)
    assert proxy.cpu_seconds > 0  # what serving cost, known once stopped (bench/proxy.py)
    first = recorded.cases[0]
    output = next(s for s in first.signals if s.name == "text:complete").payload["content"]
    assert "question 0 from openai" in output and "question 0 from anthropic" in output
    names = [s.name for s in first.signals]
    assert names.count("provider:start") == names.count("provider:end") == calls // 3
    assert "text:delta" in names
    if isinstance(harness, SyncHarness):
        tools = [s.payload for s in first.signals if s.name == "tool:call"]
        assert [t["name"] for t in tools] == ["get_weather", "get_weather"]
        assert tools[0]["input"] == {"city": "Paris"}
    end = next(s for s in first.signals if s.name == "provider:end").payload
    assert end["usage"]["inputTokens"] > 0 and end["cost"] > 0 and end["durationMs"] >= 0


def test_an_sdk_client_is_made_with_httpx_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """openai 3 reads the legacy httpx from sys.modules on every client and response: a
    sync harness whose case made an openai client while the case beside it imported httpx
    (its first ctx.anthropic(), anthropic < 1) failed with "partially initialized module
    'httpx' has no attribute 'Timeout'". ctx.openai() imports httpx first (an import of a
    module another thread is importing waits for it), so no client sees it half made."""
    monkeypatch.delitem(sys.modules, "httpx", raising=False)  # as in a harness that has none
    CaseRoute("http://127.0.0.1:9", "c").openai()
    assert sys.modules["httpx"].Timeout  # imported whole before the client was made


def test_streams_are_replayed_event_by_event(tmp_path: Path) -> None:
    ds = dataset(tmp_path, 1)
    with MockLLMServer(responder) as mock:
        run(SyncHarness(), ds, "record", mock)
    data = json.loads(
        json.dumps(ProxyCassette(tmp_path / "cassettes/proxied.proxy.yaml").load()[1].to_dict())
    )
    stream = data["response"]["stream"]
    assert stream[-1]["data"] == "[DONE]" and len(stream) >= 4
    assert stream[1]["data"]["choices"][0]["delta"]["content"] == "answer "
    _, proxy = run(SyncHarness(), ds, "replay", None)
    assert proxy.misses == []


@pytest.mark.parametrize("harness", [SyncHarness(), AsyncHarness()], ids=["sync", "async"])
def test_a_call_ends_before_the_next_starts_when_the_server_is_slow_to_close(
    tmp_path: Path, harness: Any
) -> None:
    """The OpenAI SDK stops reading a stream at ``[DONE]`` and makes its next call while
    the server has yet to close: that call's ``provider:start`` still comes after the
    previous ``provider:end``, so recording and replay give one order."""
    ds = dataset(tmp_path, 2)
    with MockLLMServer(responder, stream_tail=0.3) as mock:
        recorded, _ = run(harness, ds, "record", mock)
    replayed, proxy = run(harness, ds, "replay", None)
    assert proxy.misses == []
    for case in recorded.cases:
        calls = [s.name for s in case.signals if s.name in ("provider:start", "provider:end")]
        assert calls  # a case that made no call would prove nothing
        assert calls == ["provider:start", "provider:end"] * (len(calls) // 2)
    assert comparable(replayed) == comparable(recorded)


def test_a_changed_request_is_a_miss_that_says_what_changed(tmp_path: Path) -> None:
    ds = dataset(tmp_path, 2)
    with MockLLMServer(responder) as mock:
        run(AsyncHarness(), ds, "record", mock)
    changed = dataset(tmp_path, 2)
    changed.cases[1].input = "question changed"
    result, proxy = run(AsyncHarness(), changed, "replay", None)
    assert result.cases[0].passed
    assert not result.cases[1].passed
    message = proxy.misses[0]
    assert "case 'case-1'" in message and "POST /v1/chat/completions" in message
    assert '"async question 1" → "async question changed"' in message
    assert "cassette_miss" in result.cases[1].error or "no recorded answer" in result.cases[1].error
    errors = [s for s in result.cases[1].signals if s.name == "provider:error"]
    assert errors and errors[0].payload["code"] == "cassette_miss"


def test_record_missing_records_only_what_is_missing(tmp_path: Path) -> None:
    ds = dataset(tmp_path, 2)
    with MockLLMServer(responder) as mock:
        run(AsyncHarness(), ds, "record", mock)
        mock.reset()
        grown = dataset(tmp_path, 3)
        result, _ = run(AsyncHarness(), grown, "record-missing", mock)
        assert all(c.passed for c in result.cases)
        assert len(mock.calls) == 3  # only case-2's calls went upstream
    replayed, proxy = run(AsyncHarness(), grown, "replay", None)
    assert proxy.misses == [] and all(c.passed for c in replayed.cases)


class Repeating:
    """Asks the same thing three times: each gets the next recorded answer."""

    def run(self, input: Any, ctx: Any) -> list[dict[str, Any]]:
        client = ctx.openai()
        texts = [
            client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": input}],
                temperature=0.5,
                user=f"noise-{n}",  # noise: not matched
            )
            .choices[0]
            .message.content
            for n in range(3)
        ]
        return [{"name": "text:complete", "payload": {"content": texts}}]


def test_identical_requests_replay_in_order_and_noise_is_ignored(tmp_path: Path) -> None:
    counter = iter(range(100))
    ds = dataset(tmp_path, 1, match=["model", "messages"])
    with MockLLMServer(lambda call: f"answer #{next(counter)}") as mock:
        recorded, _ = run(Repeating(), ds, "record", mock)
    texts = recorded.cases[0].signals[-2].payload["content"]
    assert texts == ["answer #0", "answer #1", "answer #2"]
    replayed, proxy = run(Repeating(), ds, "replay", None)
    assert replayed.cases[0].signals[-2].payload["content"] == texts
    assert proxy.misses == []


def test_matching_normalises_tool_call_ids_key_order_and_noise() -> None:
    def body(call_id: str, order: int) -> dict[str, Any]:
        messages = [
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "f", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": "42"},
        ]
        fields = {"model": "m", "messages": messages, "metadata": {"at": order}, "user": str(order)}
        return dict(reversed(fields.items())) if order else fields

    a, b = normalise(body("call_abc", 0)), normalise(body("call_xyz", 1))
    assert request_key("POST", "/v1/chat/completions", a) == request_key(
        "POST", "/v1/chat/completions", b
    )
    assert a["messages"][1]["tool_call_id"] == "call_1"
    c = normalise({**body("call_abc", 0), "temperature": 1})
    assert request_key("POST", "/v1/chat/completions", c) != request_key(
        "POST", "/v1/chat/completions", a
    )
    assert request_key("POST", "/v1/chat/completions", c, ["model", "messages"]) == request_key(
        "POST", "/v1/chat/completions", a, ["model", "messages"]
    )
    assert changes(a, c) == ["temperature added (1)"]


def test_a_request_key_is_its_canonical_text_and_named_by_its_hash() -> None:
    """Keys are looked up as text; a miss message names one by the first 16 hex digits
    of the SHA-256 of that text, the name cassette misses have always given."""
    body = {"model": "m", "messages": [{"role": "user", "content": "é"}], "stream": True}
    key = request_key("post", "/v1/chat/completions", body)
    text = json.dumps(
        ["POST", "/v1/chat/completions", True, body],
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    assert key == text
    assert key_name(key) == hashlib.sha256(text.encode()).hexdigest()[:16]
    assert len(key_name(request_key("POST", "/v1/x", {"c": "\ud800"}))) == 16


def test_normalising_with_the_raw_text_is_normalising_without_it() -> None:
    """The raw text only lets a body without ids skip the search for them."""
    bodies = [
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], "user": "u"},
        {"model": "m", "messages": [{"role": "tool", "tool_call_id": "abc", "content": "x"}]},
        {"model": "m", "input": [{"type": "function_call", "id": "fc_1", "call_id": "c9"}]},
    ]
    for body in bodies:
        for raw in (
            json.dumps(body).encode(),
            json.dumps(body, ensure_ascii=True).replace("id", "i\\u0064").encode(),
            json.dumps(body).encode("utf-16"),
        ):
            assert json.loads(raw) == body
            assert normalise(body, raw) == normalise(body), raw
    assert normalise(bodies[1], json.dumps(bodies[1]).encode())["messages"][0] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "x",
    }


class ThreeCalls:
    """Three calls whose answers name the case: cross-talk would show. Plain HTTP on one
    aiohttp session per case: the SDKs are tested above; here it is the proxy's
    attribution under concurrency (2,200 SDK clients would cost most of a minute of CPU)."""

    async def run(self, input: Any, ctx: Any) -> list[dict[str, Any]]:
        import aiohttp

        url = f"{ctx.proxy.openai_base_url}/chat/completions"
        out = []
        async with aiohttp.ClientSession() as session:
            for n in range(3):
                body = {
                    "model": "gpt-4o-mini",
                    "messages": [{"role": "user", "content": f"{input} step {n}"}],
                }
                async with session.post(url, json=body, headers={"authorization": "Bearer k"}) as r:
                    out.append((await r.json())["choices"][0]["message"]["content"])
        return [{"name": "text:complete", "payload": {"content": out}}]


def test_200_concurrent_cases_no_cross_talk_identical_over_10_replays(tmp_path: Path) -> None:
    ds = dataset(tmp_path, 200)
    with MockLLMServer(responder, latency=0.01) as mock:
        recorded, _ = run(ThreeCalls(), ds, "record", mock, concurrency=200)
        assert [c.error for c in recorded.cases if c.error] == []
        assert len(mock.calls) == 600
    for case in recorded.cases:
        number = case.case_id.split("-")[1]
        outputs = case.signals[-2].payload["content"]
        assert outputs == [f"answer to question {number} step {n} from openai" for n in range(3)]
    expected = comparable(recorded)
    for _ in range(10):
        replayed, proxy = run(ThreeCalls(), ds, "replay", None, concurrency=200)
        assert proxy.misses == []
        assert comparable(replayed) == expected


def test_a_pickled_proxy_replays_without_the_file_and_hands_its_recordings_back(
    tmp_path: Path,
) -> None:
    """What a Ray actor gets: a copy with the recordings (the node may not have the file)
    that never writes; the run's proxy keeps what it hands back, per case, and saves once."""
    import pickle

    from signal_eval_cli.proxy.config import proxy_cassette

    ds = dataset(tmp_path, 4)
    with MockLLMServer(responder) as mock:
        recorded, _ = run(ThreeCalls(), ds, "record", mock)
        recorder = ModelProxy(proxy_cassette(ds), "record", upstream=upstream(mock), retry=FAST)
        copy = pickle.loads(pickle.dumps(recorder))
        rerun = dataclasses.replace(ds, cases=ds.cases[:2])
        copied, _ = asyncio.run(run_copy(copy, rerun))
    assert [c.error for c in copied.cases] == [None, None]
    cassette = proxy_cassette(ds).path
    saved = cassette.read_text()
    assert copy.save() == [] and cassette.read_text() == saved  # a copy never writes
    handed = copy.take(["case-0", "case-1"])
    assert copy.take(["case-0"])["case-0"].recorded == {}  # handed over once
    shipped = pickle.dumps(ModelProxy(proxy_cassette(ds), "replay"))  # with the recordings
    cassette.unlink()  # an actor's node: no file; the copy replays what it was sent
    replayed, _ = asyncio.run(run_copy(pickle.loads(shipped), ds))
    assert comparable(replayed) == comparable(recorded)
    cassette.write_text(saved)
    for case in ("case-0", "case-1", "case-0"):  # the same case twice: kept once
        recorder.absorb(handed[case])
    assert recorder.save() == [cassette]
    sessions = collections.Counter((i.case, i.run) for i in ProxyCassette(cassette).load())
    assert sessions == {(f"case-{i}", 0): 3 for i in range(4)}


async def run_copy(proxy: ModelProxy, ds: EvalDataset) -> Any:
    """``ds`` through a copy of a proxy, as an actor runs it."""
    proxy.start()
    try:
        return await run_dataset(ThreeCalls(), ds, RunOptions(concurrency=4, proxy=proxy)), proxy
    finally:
        proxy.stop()


class Streams:
    """A streamed call to each API with its SDK, then one read only up to its last event
    (as a client that stops at ``message_stop`` does): the harness returns before the
    proxy has necessarily recorded and traced that one."""

    def run(self, input: Any, ctx: Any) -> list[dict[str, Any]]:
        import httpx

        messages = [{"role": "user", "content": input}]
        stream = ctx.openai().chat.completions.create(
            model="gpt-4o-mini", messages=messages, stream=True
        )
        out = ["".join(c.choices[0].delta.content or "" for c in stream if c.choices)]
        with ctx.anthropic().messages.stream(
            model="claude-3-5-haiku", max_tokens=64, messages=messages
        ) as s:
            out.append("".join(s.text_stream))
        body = {"model": "claude-3-5-haiku", "max_tokens": 64, "messages": messages, "stream": True}
        url = f"{ctx.proxy.anthropic_base_url}/v1/messages"
        lines = []
        client = httpx.Client(verify=False, timeout=120)
        with client, client.stream("POST", url, json=body, headers={"x-api-key": "k"}) as r:
            for line in r.iter_lines():
                lines.append(line)
                if line == "event: message_stop":
                    break  # leaves without reading the end of the stream
        out.append(str(len(lines)))
        return [{"name": "text:complete", "payload": {"content": out}}]


class BusyPrices(PriceTable):
    """Prices a call slowly: the proxy's thread is busy (as with a busy GIL) between the
    end of a stream reaching the client and the call's recording and ``provider:end``."""

    def __init__(self) -> None:
        super().__init__({"gpt-4o-mini": Price(0.15, 0.6), "claude-3-5-haiku": Price(0.8, 4.0)})

    def cost(self, model: str | None, input_tokens: float, output_tokens: float) -> float:
        time.sleep(0.002)
        return super().cost(model, input_tokens, output_tokens)


def test_200_cases_of_streamed_calls_are_all_recorded_and_traced(tmp_path: Path) -> None:
    """Each case's calls are done (recorded, ``provider:end`` emitted) before it closes."""
    ds = dataset(tmp_path, 200)
    with MockLLMServer(responder) as mock:
        recorded, proxy = run(Streams(), ds, "record", mock, concurrency=50, prices=BusyPrices())
    assert proxy.failures == [] and [c.error for c in recorded.cases if c.error] == []
    kept = ProxyCassette(tmp_path / "cassettes" / "proxied.proxy.yaml").load()
    assert len(kept) == 600 and {i.case for i in kept} == {c.id for c in ds.cases}
    replayed, proxy = run(Streams(), ds, "replay", None, concurrency=50, prices=BusyPrices())
    assert proxy.misses == []
    for case in recorded.cases:
        ends = [s.payload for s in case.signals if s.name == "provider:end"]
        assert [e["provider"] for e in ends] == ["openai", "anthropic", "anthropic"], case.case_id
    assert comparable(replayed) == comparable(recorded)


SCRIPT = textwrap.dedent(
    """
    import sys, openai
    client = openai.OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment alone
    r = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": sys.argv[1]}])
    print(r.choices[0].message.content)
    """
)


class Subprocesses:
    """A Python SDK script and curl, pointed at the proxy by ``ctx.proxy.env`` only."""

    def __init__(self, script: Path) -> None:
        self.script = script

    async def run(self, input: Any, ctx: Any) -> list[dict[str, Any]]:
        import os

        env = {**os.environ, **ctx.proxy.env}
        env.pop("PYTHONPATH", None)
        py = await asyncio.create_subprocess_exec(
            sys.executable, str(self.script), input, env=env, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await py.communicate()
        body = json.dumps(
            {
                "model": "claude-3-5-haiku",
                "max_tokens": 32,
                "messages": [{"role": "user", "content": f"curl {input}"}],
            }
        )
        curl = await asyncio.create_subprocess_shell(
            'curl -sS "$ANTHROPIC_BASE_URL/v1/messages" -H "x-api-key: $ANTHROPIC_API_KEY" '
            f"-H 'content-type: application/json' -d '{body}'",
            env=env,
            stdout=asyncio.subprocess.PIPE,
        )
        answer, _ = await curl.communicate()
        text = json.loads(answer)["content"][0]["text"]
        return [{"name": "text:complete", "payload": {"content": [out.decode().strip(), text]}}]


def test_subprocesses_record_and_replay_through_the_environment(tmp_path: Path) -> None:
    assert shutil.which("curl"), "no curl on PATH: `make curl` (part of `make test`) installs it"
    script = tmp_path / "agent.py"
    script.write_text(SCRIPT)
    ds = dataset(tmp_path, 2)  # each SDK subprocess costs 2 s of CPU importing openai
    with MockLLMServer(responder) as mock:
        recorded, _ = run(Subprocesses(script), ds, "record", mock)
        assert len(mock.calls) == 4
        assert {c.key for c in mock.calls} == {"sk-secret-openai", "sk-secret-anthropic"}
    assert recorded.cases[1].signals[-2].payload["content"] == [
        "answer to question 1 from openai",
        "answer to curl question 1 from anthropic",
    ]
    replayed, proxy = run(Subprocesses(script), ds, "replay", None)
    assert proxy.misses == [] and comparable(replayed) == comparable(recorded)


def test_upstream_faults_are_retried_and_recorded_once(tmp_path: Path) -> None:
    ds = dataset(tmp_path, 1)
    with MockLLMServer(responder) as mock:
        mock.fail_next(
            Fault.status_code(429, retry_after="0"), Fault.status_code(503), Fault.drop()
        )
        result, proxy = run(Repeating(), ds, "record", mock)
        assert result.cases[0].passed and proxy.failures == []
        assert mock.pending_faults == 0 and len(mock.calls) == 6


def test_a_failed_recording_never_overwrites_a_good_cassette(tmp_path: Path) -> None:
    ds = dataset(tmp_path, 2)
    cassette = tmp_path / "cassettes" / "proxied.proxy.yaml"
    with MockLLMServer(responder) as mock:
        run(AsyncHarness(), ds, "record", mock)
        good = cassette.read_bytes()
        mock.fail_next(*[Fault.status_code(500)] * 20, match=lambda c: "question 1" in c.prompt)
        result, proxy = run(AsyncHarness(), ds, "record", mock)
    assert result.cases[0].passed and not result.cases[1].passed
    assert proxy.failures and "case 'case-1'" in proxy.failures[0]
    kept = ProxyCassette(cassette).load()
    assert [i.case for i in kept].count("case-1") == 3  # the good recording of case-1 stays
    assert cassette.read_bytes().count(b"case-1") == good.count(b"case-1")
    with MockLLMServer(responder) as mock:  # a timeout is retried too, then fails cleanly
        mock.fail_next(*[Fault.slow(5)] * 30)
        quick = RetryPolicy(max_retries=1, base_delay=0.01)
        proxy = ModelProxy(
            ProxyCassette(cassette), "record", upstream=upstream(mock), retry=quick, timeout=0.3
        )
        options = RunOptions(proxy=proxy.start())
        result = asyncio.run(run_dataset(Repeating(), dataset(tmp_path, 1), options))
        proxy.stop()
        proxy.save()
    assert not result.cases[0].passed and "upstream failed after 2 attempt(s)" in proxy.failures[0]
    assert cassette.read_bytes().count(b"case-0") == good.count(b"case-0")


def test_per_case_cassettes(tmp_path: Path) -> None:
    ds = dataset(tmp_path, 2, perCase=True)
    with MockLLMServer(responder) as mock:
        run(AsyncHarness(), ds, "record", mock)
    files = sorted(p.name for p in (tmp_path / "cassettes" / "proxied.proxy").iterdir())
    assert files == ["case-0.yaml", "case-1.yaml"]
    _, proxy = run(AsyncHarness(), ds, "replay", None)
    assert proxy.misses == []


def test_validate_knows_proxy_cassettes_and_locates_problems(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("version: 1\ninteractions: []\n")
    assert validate_path(good) == ("proxy cassette", [])
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "version: 1\ninteractions:\n  - case: a\n    request: {method: POST}\n    response: {status: 200}\n"
    )
    kind, problems = validate_path(bad)
    assert kind == "invalid" and problems[0].line == 4 and "path" in problems[0].message


def port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_the_proxy_is_gone_when_stopped(tmp_path: Path) -> None:
    proxy = ModelProxy().start()
    port = proxy.port
    assert port_open(port)
    proxy.stop()
    assert not port_open(port)
    proxy.stop()  # twice is fine


def test_the_http_server_is_loaded_by_the_first_call_not_by_a_run_that_makes_none() -> None:
    """Most harnesses never call a model: the proxy listens at once and loads its server
    and upstream client when a client first connects (the client waits in the backlog
    meanwhile), and never a framework. Checked in a fresh interpreter."""
    program = """if True:
        import socket, sys, urllib.error, urllib.request
        from signal_eval_cli.proxy.server import ModelProxy

        idle = ModelProxy().start()
        idle.stop()
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", idle.port)) != 0, "still listening"
        server = "signal_eval_cli.proxy.serving"
        assert server not in sys.modules, "an idle proxy loaded its server"

        proxy = ModelProxy().start()
        try:
            urllib.request.urlopen(proxy.url + "/c/nobody/0/v1/models", timeout=60)
        except urllib.error.HTTPError as error:
            print(error.code, error.read().decode())
        finally:
            proxy.stop()
        print(server in sys.modules and "aiohttp" not in sys.modules)
    """
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    status, _, loaded = done.stdout.strip().rpartition("\n")
    assert status.startswith("404 ") and "signal-eval proxy" in status, done.stdout
    assert loaded == "True"


# -- frameworks ----------------------------------------------------------------------------


class Framework:
    """A framework's agent built against this case's proxy address, run by its harness."""

    def __init__(self, build: Any, harness: Any) -> None:
        self.build, self.harness = build, harness

    async def run(self, input: Any, ctx: Any) -> Any:
        return await self.harness(self.build(ctx.proxy.openai_base_url)).run(input, ctx)


def timeless(value: Any) -> Any:
    """``value`` without the wall-clock times and random span ids a framework's spans carry."""
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if k not in _PER_RUN_FIELDS}
    if isinstance(value, (list, tuple)):
        return [timeless(v) for v in value]
    return value


_PER_RUN_FIELDS = frozenset({"durationMs", "startedAt", "endedAt", "timestamp", "spanId"})


def framework(name: str) -> Framework:
    if name == "openai-agents":
        pytest.importorskip("agents")
        from signal_eval_cli.harness.openai_agents import AgentsHarness

        return Framework(script.agents_sdk_agents, AgentsHarness)
    pytest.importorskip("langgraph")
    from signal_eval_cli.harness.langgraph import GraphHarness

    return Framework(script.langgraph_graph, GraphHarness)


@pytest.mark.parametrize("name", ["openai-agents", "langgraph"])
def test_framework_agents_record_then_replay_offline_identically(tmp_path: Path, name: str) -> None:
    data = {
        "name": "proxied",
        "cases": [{"id": f"c{i}", "input": script.QUESTION} for i in range(2)],
    }
    ds = EvalDataset.from_data(data, tmp_path / "proxied.yaml")
    with MockLLMServer(responder=script.responder) as mock:
        recorded, _ = run(framework(name), ds, "record", mock)
        assert len(mock.calls) == 2 * 4  # triage, weather ×3, per case
    assert [c.error for c in recorded.cases] == [None, None]
    replayed, proxy = run(framework(name), ds, "replay", None)
    assert proxy.misses == []
    assert timeless(comparable(replayed)) == timeless(comparable(recorded))
    names = [s.name for s in replayed.cases[0].signals]
    assert "tool:call" in names and names.count("provider:end") >= 4
    final = [s for s in replayed.cases[0].signals if s.name == "text:complete"]
    assert script.ANSWER in json.dumps([s.payload for s in final])


# -- through the CLI ---------------------------------------------------------------------

CLI = Path(sys.executable).parent / "signal-eval"
AGENT = """\
import asyncio, os, pathlib

def create():
    async def run(input, ctx):
        pathlib.Path("port").write_text(str(ctx.proxy.url.rsplit(":", 1)[1]))
        client = ctx.openai(async_=True)
        reply = await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": input}]
        )
        if os.environ.get("AGENT_MODE") == "bad":
            if input == "crash":
                raise RuntimeError("harness bug")
            if input == "hang":
                pathlib.Path("hanging").touch()
                await asyncio.sleep(300)
        return [{"name": "text:complete", "payload": {"content": reply.choices[0].message.content}}]
    return run
"""
AGENT_DATASET = """\
name: agent
harness: agent.py:create
cases:
  - {id: ok, input: ok, assertions: [{type: signal.contains, pattern: text:complete}]}
  - {id: crash, input: crash, assertions: [{type: signal.contains, pattern: text:complete}]}
  - {id: hang, input: hang, assertions: [{type: signal.contains, pattern: text:complete}]}
"""


def agent_run(project: Path, mock: MockLLMServer | None, mode: str, *args: str) -> Any:
    import os
    import subprocess

    env = {**os.environ, "AGENT_MODE": mode, "OPENAI_API_KEY": "sk-secret-openai"}
    env["OPENAI_BASE_URL"] = mock.openai_base_url if mock is not None else "http://127.0.0.1:9/v1"
    command = [str(CLI), "run", "eval.yaml", "--concurrency", "3", *args]
    return subprocess.Popen(
        command, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_cli_records_any_harness_and_a_crash_or_ctrl_c_keeps_the_good_cassette(
    tmp_path: Path,
) -> None:
    """No --provider: the harness's own calls are recorded (from outside the repo), replayed
    with the mock stopped; a crashed case and a Ctrl-C'd case keep their old recording,
    and the proxy's port is closed when the run has ended."""
    import signal

    from processes import wait_for_line

    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "eval.yaml").write_text(AGENT_DATASET)
    cassette = tmp_path / "cassettes" / "eval.proxy.yaml"
    version = ["v1"]
    with MockLLMServer(lambda call: f"{version[0]} {call.last_user_text}") as mock:
        good = agent_run(tmp_path, mock, "good", "--record")
        out, err = good.communicate(timeout=300)
        assert good.returncode == 0, err
        assert "recorded the harness's model calls to" in err
        assert [i.case for i in ProxyCassette(cassette).load()] == ["ok", "crash", "hang"]
        version[0] = "v2"
        bad = agent_run(tmp_path, mock, "bad", "--record")
        assert bad.stderr is not None
        seen = wait_for_line(bad.stderr, lambda line: "crash" in line and ": " in line, 300)
        deadline = time.monotonic() + 300
        while not (tmp_path / "hanging").exists() and time.monotonic() < deadline:
            assert bad.poll() is None, seen
            time.sleep(0.05)
        port = int((tmp_path / "port").read_text())
        assert port_open(port), seen
        bad.send_signal(signal.SIGINT)
        assert bad.wait(timeout=120) == 130
    assert not port_open(port)
    answers = {
        i.case: i.response["choices"][0]["message"]["content"]
        for i in ProxyCassette(cassette).load()
    }
    assert answers == {"ok": "v2 ok", "crash": "v1 crash", "hang": "v1 hang"}
    assert "sk-secret" not in cassette.read_text()
    replay = agent_run(tmp_path, None, "good")  # the mock is gone: offline
    out, err = replay.communicate(timeout=300)
    assert replay.returncode == 0, out + err


BARE = """\
import openai


def create():
    def run(input, ctx):
        client = openai.OpenAI()  # no ctx: OPENAI_BASE_URL and OPENAI_API_KEY alone
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": input}]
        )
        return [{"name": "text:complete", "payload": {"content": reply.choices[0].message.content}}]
    return run
"""


def test_a_bare_sdk_client_in_process_is_recorded_alone_and_refused_when_ambiguous(
    tmp_path: Path,
) -> None:
    """``openai.OpenAI()`` made by an in-process harness reads the run-level address the run
    exports: one case at a time, its calls are recorded and replayed offline; with
    --concurrency 2 its call names no case, so it fails saying what to do, never live."""
    import os
    import subprocess

    (tmp_path / "bare.py").write_text(BARE)
    (tmp_path / "eval.yaml").write_text(
        "name: bare\nharness: bare.py:create\ncases:\n"
        "  - {id: a, input: one, assertions: [{type: output.contains, text: one}]}\n"
        "  - {id: b, input: two, assertions: [{type: output.contains, text: two}]}\n"
    )

    def cli(mock: MockLLMServer | None, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "OPENAI_API_KEY": "sk-secret-openai"}
        env["OPENAI_BASE_URL"] = f"{mock.url if mock else 'http://127.0.0.1:9'}/v1"
        command = [str(CLI), "run", "eval.yaml", "-o", "out.json", "--signals", "all", *args]
        return subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )

    with MockLLMServer(responder) as mock:
        recorded = cli(mock, "--record", "--concurrency", "1")
        assert recorded.returncode == 0, recorded.stderr
        assert len(mock.calls) == 2 and {c.key for c in mock.calls} == {"sk-secret-openai"}
    cassette = ProxyCassette(tmp_path / "cassettes" / "eval.proxy.yaml")
    assert [i.case for i in cassette.load()] == ["a", "b"]
    first = json.loads((tmp_path / "out.json").read_text())["cases"]
    replayed = cli(None, "--concurrency", "1")  # the mock is gone: replayed, offline
    assert replayed.returncode == 0, replayed.stderr
    again = json.loads((tmp_path / "out.json").read_text())["cases"]
    ends = [
        [s["payload"]["output"] for s in c["signals"] if s["name"] == "provider:end"] for c in again
    ]
    assert ends == [["answer to one from openai"], ["answer to two from openai"]]
    assert [c["passed"] for c in again] == [c["passed"] for c in first] == [True, True]

    with MockLLMServer(responder) as mock:
        ambiguous = cli(mock, "--live", "--concurrency", "2")
        assert mock.calls == []  # nothing went out unattributed
    assert ambiguous.returncode == 1, ambiguous.stderr
    cases = json.loads((tmp_path / "out.json").read_text())["cases"]
    for case in cases:
        assert "up to 2 cases run at once" in case["error"] and "ctx.openai()" in case["error"]


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OPENAI_BASE_URL", "localhost:8080/v1"),  # no scheme
        ("ANTHROPIC_BASE_URL", "http://host:port"),  # a port that is not a number
        ("OPENAI_BASE_URL", "ftp://models.example/v1"),
    ],
)
def test_an_upstream_that_cannot_be_called_is_an_input_error_before_any_case(
    variable: str, value: str, tmp_path: Path
) -> None:
    """Recording or passing calls through goes to the environment's base URLs: a bad one
    stops the run at once naming the variable (every call would have failed the same way);
    a replay never calls upstream, so it does not care."""
    upstream = Upstream.from_env({variable: value})
    cassette = ProxyCassette(tmp_path / "cassette.yaml")
    for mode in ("record", "live"):
        proxy = ModelProxy(cassette, mode, upstream=upstream)  # type: ignore[arg-type]
        with pytest.raises(InputError, match=rf"upstream \({variable}\) '{value}'"):
            proxy.start()
        assert proxy.port == 0  # nothing was served
    ModelProxy(cassette, "replay", upstream=upstream).start().stop()
    assert not cassette.path.exists()  # nothing was written either


def test_an_answer_holding_a_lone_surrogate_is_recorded_and_replays(tmp_path: Path) -> None:
    """A model's stream cut inside an emoji's pair (JSON ``"\\ud83d"``) decodes to a lone
    surrogate, which UTF-8 and YAML cannot hold: the case's backlog line and then the
    cassette's save raised, and the recording run ended in a traceback, its cassette
    empty. The backlog keeps it escaped; the cassette has U+FFFD in its place."""
    ds = dataset(tmp_path, 2)
    with MockLLMServer(lambda call: Reply("cut \ud83d here")) as mock:
        recorded, _ = run(AsyncHarness(), ds, "record", mock)
    assert all(c.passed for c in recorded.cases), [c.error for c in recorded.cases]
    replayed, proxy = run(AsyncHarness(), ds, "replay", None)
    assert proxy.misses == [] and all(c.passed for c in replayed.cases)
    texts = [
        s.payload["content"] for c in replayed.cases for s in c.signals if s.name == "text:complete"
    ]
    assert texts and all("cut \ufffd here" in t for t in texts), texts


def test_a_hand_edited_cassette_whose_alias_names_itself_is_a_located_error(
    tmp_path: Path,
) -> None:
    """PyYAML's loader took it as written: a cyclic SSE event that ended the run in a
    RecursionError when the event was encoded for replay."""
    path = tmp_path / "c.proxy.yaml"
    path.write_text(
        "version: 1\ninteractions:\n- case: a\n  call: 0\n"
        "  request: {method: POST, path: /v1/chat/completions, body: {model: m}}\n"
        "  response:\n    status: 200\n    stream:\n    - &e {data: [*e]}\n"
    )
    with pytest.raises(InputError, match=r"c\.proxy\.yaml:9:.*alias \*e refers to itself"):
        ProxyCassette(path).load()
