"""The proxy with the OpenAI Responses and Embeddings APIs: the real ``openai`` SDK
recorded against the loopback mock (mock_responses.py), replayed offline identically,
and each call traced (text deltas, tool calls, usage)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mock_servers import MockLLMServer, Reply, ToolUse
from test_proxy import comparable, dataset, run

from signal_eval_cli.proxy.cassette import ProxyCassette

WEATHER = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}


def responder(call: Any) -> Reply:
    text = call.last_user_text
    if "weather" in text:
        return Reply("", tool_calls=[ToolUse("get_weather", {"city": "Oslo"})])
    return Reply(f"reply to {text}")


class Responses:
    """Responses (whole, streamed, with a tool) and embeddings (base64 and floats)."""

    def run(self, input: Any, ctx: Any) -> list[dict[str, Any]]:
        client = ctx.openai()
        whole = client.responses.create(model="gpt-4o-mini", input=input)
        stream = client.responses.create(model="gpt-4o-mini", input=f"stream {input}", stream=True)
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        tool = client.responses.create(
            model="gpt-4o-mini", input=f"weather {input}", tools=[WEATHER]
        )
        packed = client.embeddings.create(model="text-embedding-3-small", input=[input, "x"])
        floats = client.embeddings.create(
            model="text-embedding-3-small", input=input, encoding_format="float"
        )
        out = {
            "text": whole.output_text,
            "deltas": deltas,
            "tool": [item.name for item in tool.output if item.type == "function_call"],
            "vectors": [[round(v, 3) for v in e.embedding] for e in packed.data],
            "same": [round(v, 3) for v in floats.data[0].embedding]
            == [round(v, 3) for v in packed.data[0].embedding],
        }
        return [{"name": "text:complete", "payload": {"content": out}}]


class AsyncResponses:
    async def run(self, input: Any, ctx: Any) -> list[dict[str, Any]]:
        client = ctx.openai(async_=True)
        stream = await client.responses.create(model="gpt-4o", input=input, stream=True)
        deltas = [e.delta async for e in stream if e.type == "response.output_text.delta"]
        vectors = await client.embeddings.create(model="text-embedding-3-small", input=input)
        await client.close()
        content = {"deltas": deltas, "dims": len(vectors.data[0].embedding)}
        return [{"name": "text:complete", "payload": {"content": content}}]


def test_responses_and_embeddings_record_then_replay_offline(tmp_path: Path) -> None:
    ds = dataset(tmp_path, 2)
    with MockLLMServer(responder) as mock:
        recorded, proxy = run(Responses(), ds, "record", mock)
        assert sorted({c.path for c in mock.calls}) == ["/v1/embeddings", "/v1/responses"]
        assert len(mock.calls) == 2 * 5
    assert proxy.failures == [] and [c.error for c in recorded.cases] == [None, None]
    first = recorded.cases[0]
    out = next(s for s in first.signals if s.name == "text:complete").payload["content"]
    assert out["text"] == "reply to question 0"
    assert out["deltas"] == ["reply ", "to ", "stream ", "question ", "0"]
    assert out["tool"] == ["get_weather"] and out["same"] is True
    assert len(out["vectors"]) == 2 and len(out["vectors"][0]) == 8
    ends = [s.payload for s in first.signals if s.name == "provider:end"]
    assert [e["output"] for e in ends[:2]] == ["reply to question 0", "reply to stream question 0"]
    assert all(e["usage"]["inputTokens"] > 0 for e in ends)  # embeddings count input tokens
    assert ends[0]["usage"]["outputTokens"] > 0 and ends[1]["usage"]["outputTokens"] > 0
    deltas = [s.payload["content"] for s in first.signals if s.name == "text:delta"]
    assert deltas[1:] == out["deltas"]  # the whole answer is one delta, then the stream's
    tools = [s.payload for s in first.signals if s.name == "tool:call"]
    assert [(t["name"], t["input"]) for t in tools] == [("get_weather", {"city": "Oslo"})]
    assert tools[0]["id"].startswith("call_")  # the call_id the model's answer gives
    stream = ProxyCassette(tmp_path / "cassettes" / "proxied.proxy.yaml").load()[1]
    assert stream.events is not None and stream.events[-1].event == "response.completed"
    replayed, proxy = run(Responses(), ds, "replay", None)
    assert proxy.misses == [] and comparable(replayed) == comparable(recorded)


def test_async_responses_stream_and_embeddings_replay(tmp_path: Path) -> None:
    ds = dataset(tmp_path, 3)
    with MockLLMServer(responder) as mock:
        recorded, _ = run(AsyncResponses(), ds, "record", mock)
    content = recorded.cases[2].signals[-2].payload["content"]
    assert content == {"deltas": ["reply ", "to ", "question ", "2"], "dims": 8}
    replayed, proxy = run(AsyncResponses(), ds, "replay", None)
    assert proxy.misses == [] and comparable(replayed) == comparable(recorded)
