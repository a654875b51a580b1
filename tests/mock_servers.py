"""A mock LLM server on 127.0.0.1 that speaks both OpenAI and Anthropic.

- ``POST /v1/chat/completions``: OpenAI chat completions, JSON or SSE
  (``stream: true``, with ``stream_options.include_usage``), text and tool calls.
- ``POST /v1/messages``: Anthropic messages, JSON or SSE, text and ``tool_use``.
- ``POST /v1/responses`` and ``POST /v1/embeddings``: OpenAI responses (JSON or SSE)
  and embeddings (mock_responses.py).

Answers come from ``responder(call) -> Reply | str`` (default: ``"ANSWER: "`` and
the first five words of the last user message). Faults are queued with
:meth:`MockLLMServer.fail_next` and used by the next matching requests:

- :meth:`Fault.status` (e.g. 429 with ``Retry-After``, 500, 401 echoing the key),
- :meth:`Fault.drop` (the connection closes without an answer),
- :meth:`Fault.slow` (the answer comes after ``seconds``),
- :meth:`Fault.truncated` (``Content-Length`` promises more than is sent),
- :meth:`Fault.malformed` (a 200 whose body is not a valid answer),
- :meth:`Fault.stream_cut` (a stream that stops half way).

``capacity`` makes the server answer 429 (``Retry-After``) to requests beyond that
many in flight, like a rate-limited API. The server runs in a daemon thread with
its own event loop; it only ever binds 127.0.0.1 and serves until :meth:`stop`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mock_responses

__all__ = ["Call", "Fault", "MockLLMServer", "Reply", "ToolUse"]

ROUTES = ("/v1/chat/completions", "/v1/messages", "/v1/responses", "/v1/embeddings")

REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}


@dataclass
class ToolUse:
    name: str
    input: dict[str, Any]
    id: str | None = None


@dataclass
class Reply:
    """One scripted answer. Tokens default to word counts; ``chunks`` to words."""

    text: str = ""
    tool_calls: list[ToolUse] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    chunks: list[str] | None = None


@dataclass
class Fault:
    kind: str
    status: int = 500
    message: str = "injected fault"
    retry_after: str | None = None
    seconds: float = 0.0
    body: bytes | None = None

    @classmethod
    def status_code(
        cls, status: int, message: str = "injected fault", *, retry_after: str | None = None
    ) -> Fault:
        """An HTTP error; ``{key}`` in ``message`` is replaced by the caller's API key."""
        return cls("status", status=status, message=message, retry_after=retry_after)

    @classmethod
    def rate_limited(cls, retry_after: str | None = "0.05") -> Fault:
        return cls("status", status=429, message="rate limit exceeded", retry_after=retry_after)

    @classmethod
    def server_error(cls, status: int = 500) -> Fault:
        return cls("status", status=status, message="internal error")

    @classmethod
    def drop(cls) -> Fault:
        return cls("drop")

    @classmethod
    def slow(cls, seconds: float) -> Fault:
        return cls("slow", seconds=seconds)

    @classmethod
    def truncated(cls) -> Fault:
        return cls("truncated")

    @classmethod
    def malformed(cls, body: bytes | None = None) -> Fault:
        return cls("malformed", body=body)

    @classmethod
    def stream_cut(cls) -> Fault:
        return cls("stream_cut")


@dataclass
class Call:
    """One request the server received."""

    api: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def key(self) -> str:
        auth = self.headers.get("authorization", "")
        return auth.removeprefix("Bearer ") if auth else self.headers.get("x-api-key", "")

    @property
    def system(self) -> str:
        if self.api == "anthropic":
            return _text(self.body.get("system"))
        return "\n".join(
            _text(m.get("content"))
            for m in self.body.get("messages", [])
            if m.get("role") == "system"
        )

    @property
    def last_user_text(self) -> str:
        last = ""
        given = self.body.get("input")  # the responses and embeddings APIs
        if isinstance(given, str):
            return given
        for message in self.body.get("messages", given if isinstance(given, list) else []):
            if message.get("role") == "user":
                last = _text(message.get("content"))
        return last

    @property
    def prompt(self) -> str:
        """Every message's text, the system prompt first."""
        texts = [self.system] + [_text(m.get("content")) for m in self.body.get("messages", [])]
        return "\n".join(t for t in texts if t)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(p.get("text") or p.get("content") or "") if isinstance(p, dict) else str(p)
            for p in content
        )
    return str(content)


def echo(call: Call) -> Reply:
    return Reply("ANSWER: " + " ".join(call.last_user_text.split()[:5]))


Responder = Callable[[Call], "Reply | str"]


class MockLLMServer:
    """Start with ``with MockLLMServer() as server:`` or :meth:`start` / :meth:`stop`."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency: float = 0.0,
        capacity: int | None = None,
        stream_tail: float = 0.0,
    ) -> None:
        self.responder: Responder = responder or echo
        self.latency = latency
        self.stream_tail = stream_tail
        """Seconds between a stream's last event and its end: a server slow to close."""
        self.capacity = capacity
        self.capacity_retry_after = "0.05"
        self.calls: list[Call] = []
        self.inflight = 0
        self.peak_inflight = 0
        self.rejected = 0
        self._faults: list[tuple[Fault, Callable[[Call], bool] | None]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> MockLLMServer:
        ready = threading.Event()
        failure: list[BaseException] = []

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                self._server = loop.run_until_complete(
                    asyncio.start_server(self._handle, "127.0.0.1", 0)
                )
                self.port = self._server.sockets[0].getsockname()[1]
            except BaseException as exc:  # pragma: no cover - reported to start()
                failure.append(exc)
                ready.set()
                return
            ready.set()
            try:
                loop.run_forever()
            finally:
                self._server.close()
                tasks = asyncio.all_tasks(loop)
                for task in tasks:
                    task.cancel()
                loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
                loop.run_until_complete(self._server.wait_closed())
                loop.close()

        self._thread = threading.Thread(target=serve, name="mock-llm", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._thread = None

    def __enter__(self) -> MockLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    # -- scripting ------------------------------------------------------------------------

    def fail_next(self, *faults: Fault, match: Callable[[Call], bool] | None = None) -> None:
        """Queue faults: each is used once, by the next request ``match`` accepts."""
        with self._lock:
            self._faults.extend((f, match) for f in faults)

    def reset(self) -> None:
        with self._lock:
            self._faults.clear()
            self.calls.clear()
            self.peak_inflight = self.inflight
            self.rejected = 0

    @property
    def pending_faults(self) -> int:
        return len(self._faults)

    def _take_fault(self, call: Call) -> Fault | None:
        with self._lock:
            for index, (fault, match) in enumerate(self._faults):
                if match is None or match(call):
                    del self._faults[index]
                    return fault
        return None

    # -- HTTP -----------------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0") or 0)
                raw = await reader.readexactly(length) if length else b""
                keep = await self._respond(method, path.split("?", 1)[0], headers, raw, writer)
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except asyncio.CancelledError:  # the server is stopping
            return
        finally:
            writer.close()

    async def _respond(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        raw: bytes,
        writer: asyncio.StreamWriter,
    ) -> bool:
        if method != "POST" or path not in ROUTES:
            await self._send(
                writer, 404, _json({"error": {"message": f"no route {method} {path}"}})
            )
            return True
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            await self._send(writer, 400, _json({"error": {"message": "body is not JSON"}}))
            return True
        api = "anthropic" if path == "/v1/messages" else "openai"
        call = Call(api, path, headers, body)
        self.calls.append(call)
        self.inflight += 1
        self.peak_inflight = max(self.peak_inflight, self.inflight)
        try:
            return await self._answer(call, writer)
        finally:
            self.inflight -= 1

    async def _answer(self, call: Call, writer: asyncio.StreamWriter) -> bool:
        if self.capacity is not None and self.inflight > self.capacity:
            self.rejected += 1
            fault: Fault | None = Fault.rate_limited(self.capacity_retry_after)
        else:
            fault = self._take_fault(call)
        if fault is not None and fault.kind == "slow":
            await asyncio.sleep(fault.seconds)
            fault = None
        elif self.latency:
            await asyncio.sleep(self.latency)
        if fault is not None and fault.kind == "drop":
            return False
        if fault is not None and fault.kind == "status":
            message = fault.message.replace("{key}", call.key)
            extra = {"Retry-After": fault.retry_after} if fault.retry_after is not None else {}
            await self._send(
                writer, fault.status, _error_body(call.api, fault.status, message), extra
            )
            return True
        if call.path == "/v1/embeddings":
            await self._send(writer, 200, _json(mock_responses.embeddings(call.body)))
            return True
        answer = self.responder(call)
        reply = Reply(answer) if isinstance(answer, str) else answer
        if call.stream:
            events = _sse_events(call, reply, next(self._ids))
            if fault is not None and fault.kind == "malformed":
                broken = b'data: {"choices": [{"delta": {"content": "x"\n\n'
                if call.api == "anthropic":
                    broken = b"event: content_block_delta\n" + broken
                events = [events[0], fault.body or broken]
            cut = fault is not None and fault.kind == "stream_cut"
            await self._send_stream(
                writer, events[: max(1, len(events) // 2)] if cut else events, cut=cut
            )
            return not cut
        payload = _json(_completion(call, reply, next(self._ids)))
        if fault is not None and fault.kind == "malformed":
            await self._send(writer, 200, fault.body or b'{"id": "chatcmpl-1", "choices": [{"mess')
            return True
        if fault is not None and fault.kind == "truncated":
            head = _head(200, len(payload), {"Content-Type": "application/json"})
            writer.write(head + payload[: len(payload) // 2])
            await writer.drain()
            return False
        await self._send(writer, 200, payload)
        return True

    async def _send(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        body: bytes,
        extra: dict[str, str] | None = None,
    ) -> None:
        writer.write(
            _head(status, len(body), {"Content-Type": "application/json", **(extra or {})}) + body
        )
        await writer.drain()

    async def _send_stream(
        self, writer: asyncio.StreamWriter, events: list[bytes], *, cut: bool
    ) -> None:
        head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
        )
        writer.write(head)
        for event in events:
            writer.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            await writer.drain()
        if self.stream_tail:
            await asyncio.sleep(self.stream_tail)
        if not cut:
            writer.write(b"0\r\n\r\n")
            await writer.drain()


def _json(data: Any) -> bytes:
    return json.dumps(data).encode()


def _head(status: int, length: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}", f"Content-Length: {length}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    lines.append("Connection: keep-alive")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _error_body(api: str, status: int, message: str) -> bytes:
    if api == "anthropic":
        kind = {429: "rate_limit_error", 529: "overloaded_error", 401: "authentication_error"}.get(
            status, "api_error"
        )
        return _json({"type": "error", "error": {"type": kind, "message": message}})
    return _json({"error": {"message": message, "type": "mock_error", "code": status}})


def _tokens(call: Call, reply: Reply) -> tuple[int, int]:
    tokens_in = (
        reply.input_tokens if reply.input_tokens is not None else max(1, len(call.prompt.split()))
    )
    tokens_out = (
        reply.output_tokens if reply.output_tokens is not None else max(1, len(reply.text.split()))
    )
    return tokens_in, tokens_out


def _tool_id(call: Call, tool: ToolUse, index: int, number: int) -> str:
    prefix = "toolu" if call.api == "anthropic" else "call"
    return tool.id or f"{prefix}_{number}_{index}"


def _completion(call: Call, reply: Reply, number: int) -> dict[str, Any]:
    tokens_in, tokens_out = _tokens(call, reply)
    model = call.body.get("model", "mock")
    if call.path == "/v1/responses":
        tools = [(t.name, t.input) for t in reply.tool_calls]
        return mock_responses.response(model, number, reply.text, tools, (tokens_in, tokens_out))
    if call.api == "anthropic":
        content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
        content += [
            {
                "type": "tool_use",
                "id": _tool_id(call, t, i, number),
                "name": t.name,
                "input": t.input,
            }
            for i, t in enumerate(reply.tool_calls)
        ]
        return {
            "id": f"msg_{number}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out},
        }
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text if reply.text or not reply.tool_calls else None,
    }
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": _tool_id(call, t, i, number),
                "type": "function",
                "function": {"name": t.name, "arguments": json.dumps(t.input)},
            }
            for i, t in enumerate(reply.tool_calls)
        ]
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": tokens_in,
            "completion_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
        },
    }


def _chunks(reply: Reply) -> list[str]:
    if reply.chunks is not None:
        return reply.chunks
    words = reply.text.split(" ")
    return (
        [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)] if reply.text else []
    )


def _sse_events(call: Call, reply: Reply, number: int) -> list[bytes]:
    tokens_in, tokens_out = _tokens(call, reply)
    model = call.body.get("model", "mock")
    if call.path == "/v1/responses":
        tools = [(t.name, t.input) for t in reply.tool_calls]
        return mock_responses.response_events(
            model, number, _chunks(reply), tools, (tokens_in, tokens_out)
        )
    if call.api == "anthropic":
        events: list[tuple[str, dict[str, Any]]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": f"msg_{number}",
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "usage": {"input_tokens": tokens_in, "output_tokens": 1},
                    },
                },
            ),
            ("ping", {"type": "ping"}),
        ]
        index = 0
        if reply.text:
            events.append(
                (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            )
            for chunk in _chunks(reply):
                events.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": 0,
                            "delta": {"type": "text_delta", "text": chunk},
                        },
                    )
                )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
            index = 1
        for i, tool in enumerate(reply.tool_calls):
            block = {
                "type": "tool_use",
                "id": _tool_id(call, tool, i, number),
                "name": tool.name,
                "input": {},
            }
            arguments = json.dumps(tool.input)
            half = len(arguments) // 2
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": block},
                )
            )
            for part in (arguments[:half], arguments[half:]):
                events.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": part},
                        },
                    )
                )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use" if reply.tool_calls else "end_turn"},
                    "usage": {"output_tokens": tokens_out},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events]
    base = {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": model,
    }
    chunks: list[dict[str, Any]] = [
        {
            **base,
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
            ],
        }
    ]
    for text in _chunks(reply):
        chunks.append(
            {**base, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
        )
    for i, tool in enumerate(reply.tool_calls):
        arguments = json.dumps(tool.input)
        half = len(arguments) // 2
        first = {
            "index": i,
            "id": _tool_id(call, tool, i, number),
            "type": "function",
            "function": {"name": tool.name, "arguments": arguments[:half]},
        }
        chunks.append(
            {
                **base,
                "choices": [{"index": 0, "delta": {"tool_calls": [first]}, "finish_reason": None}],
            }
        )
        rest = {"index": i, "function": {"arguments": arguments[half:]}}
        chunks.append(
            {
                **base,
                "choices": [{"index": 0, "delta": {"tool_calls": [rest]}, "finish_reason": None}],
            }
        )
    finish = "tool_calls" if reply.tool_calls else "stop"
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if (call.body.get("stream_options") or {}).get("include_usage"):
        usage = {
            "prompt_tokens": tokens_in,
            "completion_tokens": tokens_out,
            "total_tokens": tokens_in + tokens_out,
        }
        chunks.append({**base, "choices": [], "usage": usage})
    out = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks]
    out.append(b"data: [DONE]\n\n")
    return out


# -- a scripted code reviewer for datasets/code-review.yaml ---------------------------------

_FINDINGS: list[tuple[str, str, str]] = [
    # (marker in the code, finding, fix)
    (
        "${userId}",
        "SQL injection: the query interpolates userId into the SQL text.",
        "Use a parameterized query (prepared statement): db.query('... WHERE id = $1', [userId]).",
    ),
    (
        "innerHTML",
        "XSS vulnerability: comment text is written as HTML.",
        "Assign it with textContent instead, or sanitize it first.",
    ),
    (
        "req.params.filename",
        "Path traversal: a filename like ../../etc/passwd escapes /uploads.",
        "Reject names containing '../' and check the resolved path stays inside /uploads.",
    ),
    (
        "numbers.length",
        "Division by zero: an empty array has length 0, so the average is NaN.",
        "Return 0 (or throw) when numbers.length === 0.",
    ),
    (
        "user.name",
        "Null dereference: findUser may return null or undefined.",
        "Use optional chaining: return user?.name; or guard with if (user).",
    ),
    (
        "await delay",
        "Race condition: concurrent calls read the same counter before either writes.",
        "Make the increment atomic, or guard it with a mutex/lock.",
    ),
    (
        "const unused",
        "The variable `unused` is assigned but never read.",
        "Delete the unused variable.",
    ),
    (
        "0.95",
        "Magic numbers: 100, 0.9 and 0.95 have no names.",
        "Extract them into named constants such as DISCOUNT_THRESHOLD.",
    ),
]


def code_review_responder(call: Call) -> Reply:
    """Answers the reviewer and fixer agents of datasets/agents/code-review.yaml from the code.

    The reviewer names the problem the code has (or says there is none) and ends
    with the JSON block the agents file asks for; the fixer restates it and fixes it.
    """
    prompt = call.prompt
    found = [(f, fix) for marker, f, fix in _FINDINGS if marker in prompt]
    if "code reviewer" in call.system:
        if not found:
            return Reply(
                "The code looks correct and safe; nothing to change.\n\n"
                '```json\n{"issueCount": 0, "severity": "none", "issues": []}\n```'
            )
        issues = json.dumps([f.split(":")[0] for f, _ in found])
        text = " ".join(f for f, _ in found)
        return Reply(
            f"{text}\n\n```json\n"
            f'{{"issueCount": {len(found)}, "severity": "high", "issues": {issues}}}\n```'
        )
    if not found:
        return Reply("Nothing to fix.")
    return Reply(" ".join(f"{f} {fix}" for f, fix in found))
