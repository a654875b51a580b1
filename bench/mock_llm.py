#!/usr/bin/env python3
# Copied verbatim from shared/peer-bench/mock_llm.py (the peers were measured against it),
# so it is neither linted nor reformatted here.
# ruff: noqa
# fmt: off
"""Minimal OpenAI-compatible mock LLM server (stdlib only, asyncio).

Endpoints
  POST /v1/chat/completions   non-streaming chat completion (SSE if "stream": true)
  POST /v1/responses          minimal Responses-API object (for clients that use it)
  GET  /v1/models             model list
  GET  /__stats               JSON counters (requests, peak concurrency, ...)
  POST /__reset               reset counters (between benchmark runs)

Every completion is answered after a fixed latency (--latency-ms, default 100).
The answer is deterministic: "ANSWER: <first 5 words of the last user message>".

Binds 127.0.0.1 only.  HTTP/1.1 with keep-alive (and pipelining, processed in
order).  Stops by itself after --max-seconds (default 600), and on SIGTERM/SIGINT;
on exit it prints the counters (one human line and one JSON line) to stdout.

Implemented on asyncio.Protocol with loop.call_later for the latency, so an
in-flight request costs a timer handle, not a task: ~500+ concurrent keep-alive
connections are cheap on one core.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import resource
import signal
import sys
import time

MAX_HEADER = 64 * 1024
MAX_BODY = 16 * 1024 * 1024

REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           413: "Payload Too Large", 431: "Request Header Fields Too Large"}


class Stats:
    def __init__(self) -> None:
        self.reset()
        self.started = time.time()
        self.total_requests_ever = 0

    def reset(self) -> None:
        self.requests = 0          # all HTTP requests
        self.completions = 0       # chat + responses requests
        self.inflight = 0          # completions currently waiting on latency
        self.peak_concurrency = 0  # max simultaneous in-flight completions
        self.connections = getattr(self, "connections", 0)  # open now (not reset)
        self.peak_connections = self.connections
        self.total_connections = 0
        self.errors = 0
        self.first_ts = None
        self.last_ts = None
        self.prompt_tokens = 0
        self.completion_tokens = 0
        ru = resource.getrusage(resource.RUSAGE_SELF)
        self.cpu0 = (ru.ru_utime, ru.ru_stime)

    def as_dict(self) -> dict:
        span = (self.last_ts - self.first_ts) if self.first_ts and self.last_ts else 0.0
        ru = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "requests": self.requests,
            "completions": self.completions,
            "inflight": self.inflight,
            "peak_concurrency": self.peak_concurrency,
            "open_connections": self.connections,
            "peak_connections": self.peak_connections,
            "total_connections": self.total_connections,
            "errors": self.errors,
            "first_to_last_completion_s": round(span, 4),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "uptime_s": round(time.time() - self.started, 3),
            # mock's own CPU since start/last reset (it shares the 2 cores with the tool)
            "cpu_user_s": round(ru.ru_utime - self.cpu0[0], 3),
            "cpu_sys_s": round(ru.ru_stime - self.cpu0[1], 3),
            "max_rss_mb": round(ru.ru_maxrss / 1024, 1),
        }


STATS = Stats()
CFG = argparse.Namespace(latency=0.1, words=5, log_requests=False)
_ID = 0


def _next_id() -> int:
    global _ID
    _ID += 1
    return _ID


def _text_of(content) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # list of content parts
        out = []
        for part in content:
            if isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    out.append(part["text"])
            elif isinstance(part, str):
                out.append(part)
        return " ".join(out)
    return str(content)


def _answer_for(text: str) -> str:
    return "ANSWER: " + " ".join(text.split()[: CFG.words])


def _ntok(text: str) -> int:
    return max(1, len(text.split()))


def _last_user_chat(messages) -> tuple[str, int]:
    last, ptoks = "", 0
    for m in messages or []:
        if not isinstance(m, dict):
            continue
        t = _text_of(m.get("content"))
        ptoks += _ntok(t) + 3
        if m.get("role") == "user":
            last = t
    return last, ptoks


def _last_user_responses(inp) -> tuple[str, int]:
    if isinstance(inp, str):
        return inp, _ntok(inp)
    last, ptoks = "", 0
    for item in inp or []:
        if not isinstance(item, dict):
            continue
        t = _text_of(item.get("content"))
        ptoks += _ntok(t) + 3
        if item.get("role") == "user":
            last = t
    return last, ptoks


def build_chat(req: dict) -> tuple[bytes, str]:
    last, ptoks = _last_user_chat(req.get("messages"))
    answer = _answer_for(last)
    ctoks = _ntok(answer)
    n = req.get("n") or 1
    model = req.get("model") or "mock-model"
    now = int(time.time())
    cid = f"chatcmpl-mock{_next_id()}"
    STATS.prompt_tokens += ptoks
    STATS.completion_tokens += ctoks * n
    usage = {"prompt_tokens": ptoks, "completion_tokens": ctoks * n,
             "total_tokens": ptoks + ctoks * n}
    if req.get("stream"):
        chunks = []
        base = {"id": cid, "object": "chat.completion.chunk", "created": now, "model": model,
                "system_fingerprint": "fp_mock"}
        for i in range(n):
            chunks.append({**base, "choices": [{"index": i, "delta": {"role": "assistant", "content": ""},
                                               "logprobs": None, "finish_reason": None}]})
            chunks.append({**base, "choices": [{"index": i, "delta": {"content": answer},
                                               "logprobs": None, "finish_reason": None}]})
            chunks.append({**base, "choices": [{"index": i, "delta": {}, "logprobs": None,
                                               "finish_reason": "stop"}]})
        if (req.get("stream_options") or {}).get("include_usage"):
            chunks.append({**base, "choices": [], "usage": usage})
        body = "".join("data: " + json.dumps(c, separators=(",", ":")) + "\n\n" for c in chunks)
        body += "data: [DONE]\n\n"
        return body.encode(), "text/event-stream"
    resp = {
        "id": cid,
        "object": "chat.completion",
        "created": now,
        "model": model,
        "system_fingerprint": "fp_mock",
        "choices": [
            {"index": i, "message": {"role": "assistant", "content": answer, "refusal": None},
             "logprobs": None, "finish_reason": "stop"}
            for i in range(n)
        ],
        "usage": usage,
    }
    return json.dumps(resp, separators=(",", ":")).encode(), "application/json"


def build_responses(req: dict) -> tuple[bytes, str]:
    last, ptoks = _last_user_responses(req.get("input"))
    answer = _answer_for(last)
    ctoks = _ntok(answer)
    STATS.prompt_tokens += ptoks
    STATS.completion_tokens += ctoks
    rid = _next_id()
    resp = {
        "id": f"resp_mock{rid}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": req.get("model") or "mock-model",
        "output": [{
            "type": "message", "id": f"msg_mock{rid}", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": answer, "annotations": []}],
        }],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {"input_tokens": ptoks, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": ctoks, "output_tokens_details": {"reasoning_tokens": 0},
                  "total_tokens": ptoks + ctoks},
    }
    return json.dumps(resp, separators=(",", ":")).encode(), "application/json"


def models_body() -> bytes:
    data = [{"id": m, "object": "model", "created": 1700000000, "owned_by": "mock"}
            for m in ("mock-model", "gpt-4o-mini", "gpt-4.1-mini")]
    return json.dumps({"object": "list", "data": data}).encode()


def http_response(status: int, body: bytes, ctype: str = "application/json",
                  keep_alive: bool = True) -> bytes:
    head = (f"HTTP/1.1 {status} {REASONS.get(status, 'OK')}\r\n"
            f"Content-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\n"
            f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n"
            "\r\n")
    return head.encode("latin-1") + body


def error_body(msg: str) -> bytes:
    return json.dumps({"error": {"message": msg, "type": "invalid_request_error"}}).encode()


class HTTPProtocol(asyncio.Protocol):
    __slots__ = ("transport", "buf", "busy", "timer", "closed")

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.buf = bytearray()
        self.busy = False
        self.timer = None
        self.closed = False
        STATS.connections += 1
        STATS.total_connections += 1
        if STATS.connections > STATS.peak_connections:
            STATS.peak_connections = STATS.connections

    def connection_lost(self, exc) -> None:
        self.closed = True
        STATS.connections -= 1
        if self.timer is not None:  # client went away mid-request
            self.timer.cancel()
            self.timer = None
            STATS.inflight -= 1

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if not self.busy:
            self.process()

    # -- parsing ---------------------------------------------------------
    def _parse_one(self):
        """Return (method, path, version, headers, body) or None if incomplete.
        Raises ValueError(status) on a malformed request."""
        buf = self.buf
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > MAX_HEADER:
                raise ValueError(431)
            return None
        head = bytes(buf[:end]).decode("latin-1")
        lines = head.split("\r\n")
        # tolerate stray CRLF between pipelined requests
        while lines and not lines[0]:
            lines.pop(0)
        if not lines:
            del buf[: end + 4]
            return self._parse_one()
        parts = lines[0].split(" ")
        if len(parts) != 3:
            raise ValueError(400)
        method, path, version = parts
        headers = {}
        for ln in lines[1:]:
            k, sep, v = ln.partition(":")
            if not sep:
                raise ValueError(400)
            headers[k.strip().lower()] = v.strip()
        pos = end + 4
        te = headers.get("transfer-encoding", "").lower()
        if "chunked" in te:
            body = bytearray()
            while True:
                nl = buf.find(b"\r\n", pos)
                if nl < 0:
                    return None
                size_s = bytes(buf[pos:nl]).split(b";")[0].strip()
                try:
                    size = int(size_s, 16)
                except ValueError:
                    raise ValueError(400)
                pos = nl + 2
                if size == 0:
                    # skip trailers until empty line
                    while True:
                        nl = buf.find(b"\r\n", pos)
                        if nl < 0:
                            return None
                        if nl == pos:
                            pos += 2
                            break
                        pos = nl + 2
                    break
                if len(buf) < pos + size + 2:
                    return None
                body += buf[pos: pos + size]
                pos += size + 2
                if len(body) > MAX_BODY:
                    raise ValueError(413)
            body = bytes(body)
        else:
            try:
                clen = int(headers.get("content-length", "0") or 0)
            except ValueError:
                raise ValueError(400)
            if clen > MAX_BODY:
                raise ValueError(413)
            if len(buf) < pos + clen:
                return None
            body = bytes(buf[pos: pos + clen])
            pos += clen
        del buf[:pos]
        return method, path, version, headers, body

    def process(self) -> None:
        while not self.busy and not self.closed and self.buf:
            try:
                req = self._parse_one()
            except ValueError as e:
                STATS.errors += 1
                status = e.args[0] if e.args and isinstance(e.args[0], int) else 400
                self.transport.write(http_response(status, error_body("bad request"), keep_alive=False))
                self.transport.close()
                self.closed = True
                return
            if req is None:
                return
            self.handle(*req)

    # -- routing ---------------------------------------------------------
    def handle(self, method, path, version, headers, body) -> None:
        STATS.requests += 1
        STATS.total_requests_ever += 1
        if CFG.log_requests:
            print(f"mock_llm: {method} {path} {body[:300]!r}", file=sys.stderr, flush=True)
        conn = headers.get("connection", "").lower()
        if version == "HTTP/1.0":
            keep = "keep-alive" in conn
        else:
            keep = "close" not in conn
        route = path.split("?", 1)[0].rstrip("/")
        if route.endswith("/chat/completions") or route.endswith("/responses"):
            if method != "POST":
                self.reply(405, error_body("use POST"), keep=keep)
                return
            try:
                req = json.loads(body or b"{}")
                if not isinstance(req, dict):
                    raise ValueError("body must be an object")
                if route.endswith("/chat/completions"):
                    payload, ctype = build_chat(req)
                else:
                    payload, ctype = build_responses(req)
            except Exception as exc:  # malformed JSON etc.
                STATS.errors += 1
                self.reply(400, error_body(f"bad request: {exc}"), keep=keep)
                return
            STATS.completions += 1
            STATS.inflight += 1
            if STATS.inflight > STATS.peak_concurrency:
                STATS.peak_concurrency = STATS.inflight
            now = time.time()
            if STATS.first_ts is None:
                STATS.first_ts = now
            self.busy = True
            data = http_response(200, payload, ctype, keep_alive=keep)
            self.timer = asyncio.get_running_loop().call_later(CFG.latency, self._finish, data, keep)
            return
        if route.endswith("/models") and method == "GET":
            self.reply(200, models_body(), keep=keep)
        elif route == "/__stats" and method == "GET":
            self.reply(200, json.dumps(STATS.as_dict()).encode(), keep=keep)
        elif route == "/__reset" and method == "POST":
            STATS.reset()
            self.reply(200, b'{"ok":true}', keep=keep)
        elif route in ("", "/health", "/v1") and method == "GET":
            self.reply(200, b'{"ok":true}', keep=keep)
        else:
            STATS.errors += 1
            self.reply(404, error_body(f"no route {method} {path}"), keep=keep)

    def reply(self, status, body, ctype="application/json", keep=True) -> None:
        self.transport.write(http_response(status, body, ctype, keep_alive=keep))
        if not keep:
            self.transport.close()
            self.closed = True

    def _finish(self, data: bytes, keep: bool) -> None:
        self.timer = None
        STATS.inflight -= 1
        STATS.last_ts = time.time()
        if self.closed:
            return
        self.transport.write(data)
        if not keep:
            self.transport.close()
            self.closed = True
            return
        self.busy = False
        if self.buf:
            self.process()


def print_stats(reason: str) -> None:
    d = STATS.as_dict()
    d["reason"] = reason
    d["total_requests_ever"] = STATS.total_requests_ever
    print(f"mock_llm: stopped ({reason}) requests={d['requests']} completions={d['completions']} "
          f"peak_concurrency={d['peak_concurrency']} peak_connections={d['peak_connections']} "
          f"errors={d['errors']}", flush=True)
    print("mock_llm_stats " + json.dumps(d), flush=True)


async def main_async(args) -> int:
    loop = asyncio.get_running_loop()
    stop = loop.create_future()

    def _stop(reason):
        if not stop.done():
            stop.set_result(reason)

    for sig, name in ((signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "SIGINT")):
        try:
            loop.add_signal_handler(sig, _stop, name)
        except (NotImplementedError, RuntimeError):
            pass
    loop.call_later(args.max_seconds, _stop, "max-seconds")
    server = await loop.create_server(HTTPProtocol, host="127.0.0.1", port=args.port,
                                      backlog=args.backlog, reuse_address=True)
    port = server.sockets[0].getsockname()[1]
    print(f"mock_llm: listening on http://127.0.0.1:{port}/v1 latency_ms={args.latency_ms} "
          f"max_seconds={args.max_seconds}", flush=True)
    if args.port_file:
        with open(args.port_file, "w") as f:
            f.write(f"{port}\n")
    reason = await stop
    server.close()
    print_stats(reason)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=18080, help="TCP port on 127.0.0.1 (0 = any free)")
    p.add_argument("--latency-ms", type=float, default=100.0, help="fixed latency per completion")
    p.add_argument("--max-seconds", type=float, default=600.0, help="stop by itself after this")
    p.add_argument("--words", type=int, default=5, help="words of the last user message echoed")
    p.add_argument("--backlog", type=int, default=2048)
    p.add_argument("--log-requests", action="store_true", help="log each request to stderr")
    p.add_argument("--port-file", default=None, help="write the bound port here once listening")
    args = p.parse_args(argv)
    CFG.latency = max(0.0, args.latency_ms / 1000.0)
    CFG.words = args.words
    CFG.log_requests = args.log_requests
    try:
        return asyncio.run(main_async(args))
    except KeyboardInterrupt:
        print_stats("KeyboardInterrupt")
        return 0


if __name__ == "__main__":
    sys.exit(main())
