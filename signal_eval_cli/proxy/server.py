"""The loopback model proxy: one per run, on 127.0.0.1, in its own thread and loop.

Modes: ``replay`` answers from the cassette only (a miss is a 400 naming the case,
the request and what changed, and a ``provider:error`` in the case's trace);
``record`` calls upstream and records every call; ``record-missing`` replays what it
can and records the rest; ``live`` passes through and records nothing. Upstream is
``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` as they were when the proxy was made,
else the providers' usual endpoints; keys come from that environment (or from the
client) and are never written. 429, 5xx, dropped connections and timeouts are
retried with the run's :class:`RetryPolicy` before the client sees them.

What is recorded, replayed, kept and saved per case is the :class:`~.recorder.Recorder`'s
(the proxy is one, serving HTTP); a pickled proxy (sent to a Ray actor) is an unstarted
copy that serves the actor's cases and hands their recordings back (see there).

Why its own thread: an in-process harness may call a *sync* SDK from async code,
blocking the runner's loop; a proxy on that loop could then never answer. Why its own
HTTP (:mod:`.serving`, :mod:`.client`) rather than a framework's: the proxy shares the
harness's process, so every bit of CPU it spends per call is time the harness waits
for the interpreter, and a replay's recorded durations carry what recording cost.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import socket
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from signal_eval_cli.pricing import PriceTable, default_prices
from signal_eval_cli.proxy.apis import SSEEvent, provider_of, split_events
from signal_eval_cli.proxy.calls import CallSignals
from signal_eval_cli.proxy.cassette import Interaction, ProxyCassette
from signal_eval_cli.proxy.matching import normalise, request_key
from signal_eval_cli.proxy.recorder import Mode, Recorder
from signal_eval_cli.proxy.route import PLACEHOLDER_KEY, CaseRoute, client_env
from signal_eval_cli.proxy.session import CaseSession, Emit
from signal_eval_cli.retrying import RetryPolicy, parse_retry_after

if TYPE_CHECKING:
    from signal_eval_cli.proxy.serving import Reply, Request

__all__ = ["ModelProxy", "Upstream"]


_BACKLOG = 1024
"""Connections that may wait to be accepted: every case of a run at once, before the
server is up (the socket listens first) and while it is busy."""
_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
_DROP_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "accept-encoding",
        "te",
        "upgrade",
        "proxy-authorization",
        "proxy-connection",
    }
)
_PLACEHOLDER_BEARER = f"Bearer {PLACEHOLDER_KEY}"
_RUNNING: weakref.WeakSet[ModelProxy] = weakref.WeakSet()


@dataclass(frozen=True)
class Upstream:
    """Where record and live calls go, and the keys to put in place of a placeholder."""

    openai: str = "https://api.openai.com/v1"
    anthropic: str = "https://api.anthropic.com"
    openai_key: str | None = None
    anthropic_key: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Upstream:
        env = os.environ if environ is None else environ
        return cls(
            (env.get("OPENAI_BASE_URL") or cls.openai).rstrip("/"),
            (env.get("ANTHROPIC_BASE_URL") or cls.anthropic).rstrip("/"),
            env.get("OPENAI_API_KEY"),
            env.get("ANTHROPIC_API_KEY"),
        )

    def check(self) -> None:
        """An :class:`InputError` naming the variable when a base URL cannot be called."""
        from signal_eval_cli.transport.client import checked_base_url  # as _serve: lazily

        for base, variable in (
            (self.openai, "OPENAI_BASE_URL"),
            (self.anthropic, "ANTHROPIC_BASE_URL"),
        ):
            checked_base_url(base, f"the model proxy's upstream ({variable})")

    def url(self, path: str, query: str) -> str:
        """``/v1/chat/completions`` → the upstream URL (the OpenAI base ends in ``/v1``)."""
        if provider_of(path) == "anthropic":
            base = self.anthropic
        else:
            base, path = self.openai, path.removeprefix("/v1")
        return f"{base}{path}" + (f"?{query}" if query else "")

    def headers(self, given: Mapping[str, str], path: str) -> dict[str, str]:
        """What to send upstream: ``given`` without the hop's own headers, the real key
        in place of a placeholder."""
        anthropic = provider_of(path) == "anthropic"
        out = {}
        for name, value in given.items():
            low = name.lower()
            if low in _DROP_HEADERS:
                continue
            if low == "authorization" and value == _PLACEHOLDER_BEARER:
                value = f"Bearer {(self.anthropic_key if anthropic else self.openai_key) or ''}"
            elif anthropic and low == "x-api-key" and value == PLACEHOLDER_KEY:
                value = self.anthropic_key or ""
            out[name] = value
        return out


class _UpstreamFailed(Exception):
    """Upstream never answered well (after retries): the client gets ``status``."""

    def __init__(self, message: str, status: int = 502, body: bytes | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class ModelProxy(Recorder):
    """Start with ``with ModelProxy(...) as proxy:`` (or :meth:`start` / :meth:`stop`)."""

    def __init__(
        self,
        cassette: ProxyCassette | None = None,
        mode: Mode = "live",
        *,
        match: Sequence[str] | None = None,
        upstream: Upstream | None = None,
        prices: PriceTable | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = 600.0,
        timing: bool = False,
        case_order: Sequence[str] = (),
        settle_s: float = 30.0,
    ) -> None:
        super().__init__(cassette, mode, match=match, case_order=case_order, settle_s=settle_s)
        self.upstream = upstream or Upstream.from_env()
        self.prices = prices or default_prices()
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.timing = timing
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped: asyncio.Event | None = None
        self._client: Any = None
        self._saved_env: dict[str, str | None] = {}
        self.bare_concurrency = 1
        """How many cases may run at once (:meth:`export_env`): above 1, a call to the
        address without a case prefix is refused rather than given to the one running."""
        self.bare_refusal: str | None = None
        """When set, every call without a case prefix is refused with this message,
        whatever the concurrency (a matrix: which variant's call it is cannot be told)."""
        self.port = 0
        self.cpu_seconds = 0.0
        """CPU time the serving thread spent serving, from the moment it listens (not
        importing and setting up the server), known once stopped: what the proxy costs."""
        self._serving_since: float | None = None

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> ModelProxy:
        """Load the cassette and check the upstream (errors raise here, before any case
        runs: a replay never calls upstream, so it does not check it) and serve."""
        if self.mode != "replay":
            self.upstream.check()
        self._load()
        ready = threading.Event()
        failure: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._serve, args=(ready, failure), name="signal-eval-proxy", daemon=True
        )
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]
        _RUNNING.add(self)
        return self

    def settings(self) -> dict[str, Any]:
        return {
            **super().settings(),
            "upstream": self.upstream,
            "prices": self.prices,
            "retry": self.retry,
            "timeout": self.timeout,
            "timing": self.timing,
        }

    def _serve(self, ready: threading.Event, failure: list[BaseException]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main(ready))
        except BaseException as exc:  # reported to start() when it happens while starting
            failure.append(exc)
        finally:
            ready.set()
            loop.close()
            if self._serving_since is not None:
                self.cpu_seconds = time.thread_time() - self._serving_since

    async def _main(self, ready: threading.Event) -> None:
        """Listen at once, serve from the first connection: most harnesses never call a
        model, so the server and client are imported (and set up) only when one does. A
        client that connects before the server is up waits in the socket's backlog."""
        self._stopped = asyncio.Event()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(_BACKLOG)
        self.port = int(listener.getsockname()[1])
        self._serving_since = time.thread_time()
        ready.set()
        loop = asyncio.get_running_loop()
        called = asyncio.Event()
        loop.add_reader(listener.fileno(), called.set)
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            first = asyncio.ensure_future(called.wait())
            await asyncio.wait((first, stopped), return_when=asyncio.FIRST_COMPLETED)
            first.cancel()
        finally:
            loop.remove_reader(listener.fileno())
        if stopped.done():
            listener.close()
            return
        await self._serve_http(listener, stopped)

    async def _serve_http(self, listener: socket.socket, stopped: asyncio.Future[Any]) -> None:
        from signal_eval_cli.proxy.serving import Server
        from signal_eval_cli.transport.client import Client

        server = Server(self._handle)
        await server.start(listener, _BACKLOG)
        self._client = Client(read_timeout=self.timeout, connect_timeout=30)
        self._serving_since = time.thread_time()  # not the imports and setup above
        try:
            await stopped
        finally:
            await server.close()
            await self._client.close()

    def stop(self) -> None:
        """Stop serving (the port is closed when this returns). Safe to call twice."""
        loop, thread, stopped = self._loop, self._thread, self._stopped
        if loop is not None and thread is not None and stopped is not None:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(stopped.set)
            thread.join(30)
        self._thread = None
        _RUNNING.discard(self)
        saved, self._saved_env = self._saved_env, {}
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def export_env(self, concurrency: int) -> None:
        """Point this process's ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` (and a
        placeholder key where none is set) at the run-level address until :meth:`stop`,
        so an SDK client an in-process harness makes itself goes through the proxy too.
        That address names no case: with ``concurrency`` 1 a call there is the running
        case's; above 1 it is always a 404 saying to use ``ctx.openai()`` (never a guess
        that holds only when the other cases happen to have ended, never live)."""
        self.bare_concurrency = concurrency
        env = self.env
        self._saved_env = {name: os.environ.get(name) for name in env}
        os.environ.update(env)

    def __enter__(self) -> ModelProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        """Run-level variables (no case prefix): right while one case runs at a time."""
        return client_env(f"{self.url}/v1", self.url, os.environ)

    # -- cases ------------------------------------------------------------------------------

    def open(self, case_id: str, run: int = 0, emit: Emit | None = None) -> CaseRoute:
        """Start attributing ``/c/<case_id>/<run>/…`` requests to this case."""
        self.open_session(case_id, run, emit)
        return CaseRoute(self.url, case_id, run)

    # -- HTTP -------------------------------------------------------------------------------

    def _session(self, raw_path: str) -> tuple[CaseSession | None, str]:
        if raw_path.startswith("/c/"):
            parts = raw_path.split("/", 4)
            if len(parts) == 5 and parts[3].isdigit():
                key = (unquote(parts[2]), int(parts[3]))
                return self.sessions.get(key), "/" + parts[4]
            return None, raw_path
        open_now = list(self.sessions.values())
        alone = len(open_now) == 1 and self.bare_concurrency <= 1 and self.bare_refusal is None
        return (open_now[0] if alone else None), raw_path

    def _unattributed(self, raw_path: str) -> str:
        if self.bare_refusal is not None and not raw_path.startswith("/c/"):
            return f"signal-eval proxy: {raw_path} names no case: {self.bare_refusal}"
        running = len(self.sessions)
        if raw_path.startswith("/c/") or not running:
            return f"signal-eval proxy: no case is running under {raw_path}"
        at_once = max(running, self.bare_concurrency)
        return (
            f"signal-eval proxy: {raw_path} names no case and up to {at_once} cases run at "
            "once: make the client with ctx.openai() / ctx.anthropic() (or give it "
            "ctx.proxy's base URLs) so its calls are its case's; a client that only reads "
            "OPENAI_BASE_URL / ANTHROPIC_BASE_URL is its case's with --concurrency 1"
        )

    async def _handle(self, request: Request, reply: Reply) -> None:
        session, path = self._session(request.path)
        if session is None:
            reply.error(404, self._unattributed(request.path))
            return
        call = session.next_call()
        try:
            await self._answer(request, reply, session, path, call)
        finally:
            session.call_done()

    # A whole answer is sent, and a streamed one ended, once the handler has returned: the
    # call is recorded, traced and done (CaseSession.call_done) before a client that reads
    # to the end has its answer, so the runner seldom waits for it to settle. A client that
    # stops at a stream's last event (the OpenAI SDK stops at [DONE]) may return first: the
    # runners wait for CaseSession.settled(). Its provider:end is emitted before that last
    # event is sent (calls.py), so the trace's order never depends on it.

    async def _answer(
        self, request: Request, reply: Reply, session: CaseSession, path: str, call: int
    ) -> None:
        raw = request.body
        try:
            body = json.loads(raw) if raw else None
        except (ValueError, RecursionError):  # not JSON, or none a parser reads (nested
            body = raw.decode("utf-8", "replace")  # 100,000 deep, a 5,000-digit number): text
        norm = normalise(body, raw)
        signals = CallSignals(session.emit, path, body, self.prices)
        if self.mode in ("replay", "record-missing"):  # (the key is only for looking up)
            key = request_key(request.method, path, norm, self.match)
            found = session.take(key, call)
            if found is not None:
                await self._replay(reply, found, signals)
                return
            if self.mode == "replay":
                model = norm.get("model") if isinstance(norm, dict) else None
                what = f"{request.method} {path}" + (f" (model {model})" if model else "")
                message = session.miss(f"{what}, call #{call}", path, norm, key, call)
                signals.error(message, "cassette_miss")
                reply.error(400, message, "cassette_miss")
                return
        try:
            answer, whole = await self._forward(request, reply, path, signals)
        except _ClientGone as exc:  # it gave up waiting: nothing to answer, nothing to keep
            signals.error(f"case '{session.case}': {request.method} {path}: {exc}", "client_gone")
            reply.send(499, b"")
            return
        except _UpstreamFailed as exc:
            message = f"case '{session.case}': {request.method} {path}: {exc}"
            session.fail(message)
            signals.error(message, "upstream_failed")
            if exc.body is not None:
                reply.send(exc.status, exc.body)
            else:
                reply.error(exc.status, message, "upstream_failed")
            return
        duration = signals.end()
        if self.mode != "live":
            status, content_type, parsed, events = answer
            session.add(
                Interaction(
                    session.case,
                    call,
                    request.method,
                    path,
                    norm,
                    status,
                    parsed,
                    events,
                    duration,
                    session.run,
                    "application/json" if events is not None else content_type,
                )
            )
        if whole is not None:
            reply.send(*whole)

    async def _replay(self, reply: Reply, item: Interaction, signals: CallSignals) -> None:
        if self.timing and item.duration_ms:  # as long as recorded, from the same moment
            left = item.duration_ms / 1000 - (time.perf_counter() - signals.began)
            if left > 0:
                await asyncio.sleep(left)
        signals.duration_ms = item.duration_ms
        if item.events is None:
            signals.body(item.response)
            signals.end()
            reply.send(item.status, item.body_bytes(), item.content_type)
            return
        await reply.start(item.status, _SSE_HEADERS)
        for event in item.events:
            signals.event(event)
            await _send(reply, event.encode())
        signals.end()  # the server ends the stream after the handler: see _answer

    async def _forward(
        self, request: Request, reply: Reply, path: str, signals: CallSignals
    ) -> tuple[tuple[int, str, Any, list[SSEEvent] | None], tuple[int, bytes, str] | None]:
        """Call upstream (retrying what is worth retrying): ``(status, media type, parsed
        body, SSE events)`` to record, and a whole answer to send once it is recorded and
        traced (``None``: a stream, relayed through ``reply`` as it came)."""
        from signal_eval_cli.transport.client import ClientError

        url = self.upstream.url(path, request.query)
        headers = self.upstream.headers(request.headers.by_name, path)
        attempt = 0
        while True:
            retry_after: float | None = None
            try:
                upstream = await self._client.request(
                    request.method, url, headers, request.body or None
                )
                try:
                    content_type = upstream.headers.get("content-type") or "application/json"
                    if upstream.status in _RETRY_STATUS and attempt < self.retry.max_retries:
                        await upstream.read()
                        retry_after = parse_retry_after(upstream.headers.by_name)
                        raise _Retry(f"HTTP {upstream.status}")
                    if upstream.status >= 400:
                        data = await upstream.read()
                        raise _UpstreamFailed(
                            f"upstream answered HTTP {upstream.status}: {data[:300]!r}",
                            upstream.status,
                            data,
                        )
                    if "text/event-stream" not in content_type:
                        data = await upstream.read()
                        media_type = content_type.split(";")[0].strip()
                        parsed = _parsed(data, media_type)
                        signals.body(parsed)
                        whole = (upstream.status, data, content_type)
                        return (upstream.status, media_type, parsed, None), whole
                    try:
                        await reply.start(upstream.status, _SSE_HEADERS)
                    except ConnectionError as exc:  # not upstream's fault: never retried
                        raise _ClientGone("the client left before the answer came") from exc
                    events: list[SSEEvent] = []
                    buffer = b""
                    try:
                        async for chunk in upstream.chunks():
                            blocks, buffer = split_events(buffer + chunk)
                            await _relay(blocks, reply, events, signals)
                    except (ClientError, asyncio.TimeoutError, OSError) as exc:
                        # half a stream was relayed: it cannot be retried; cut the client off
                        raise _StreamCut(f"the stream broke off: {exc!r}") from exc
                    if buffer.strip():  # a last event without its blank line
                        await _relay(split_events(buffer + b"\n\n")[0], reply, events, signals)
                    return (upstream.status, "text/event-stream", None, events), None
                finally:
                    upstream.release()
            except _Retry:
                pass
            except _StreamCut as exc:
                raise _UpstreamFailed(str(exc)) from exc
            except (ClientError, asyncio.TimeoutError, OSError) as exc:
                if attempt >= self.retry.max_retries:
                    raise _UpstreamFailed(
                        f"upstream failed after {attempt + 1} attempt(s): "
                        f"{type(exc).__name__}: {exc}",
                        502,
                    ) from exc
            await asyncio.sleep(self.retry.delay(attempt, retry_after))
            attempt += 1


async def _relay(
    blocks: list[bytes], relay: Reply, events: list[SSEEvent], signals: CallSignals
) -> None:
    """Pass complete SSE events on to the client as they come, keeping and tracing each."""
    for block in blocks:
        event = SSEEvent.parse(block)
        if event is not None:
            events.append(event)
            signals.event(event)
        await _send(relay, block)


async def _send(response: Reply, data: bytes) -> None:
    """Write to the client; one that left (stopped reading at the last event it wanted)
    is no upstream failure: the rest of the stream is still read, recorded and traced."""
    with contextlib.suppress(ConnectionError):
        await response.write(data)


class _Retry(Exception):
    pass


class _ClientGone(Exception):
    pass


class _StreamCut(Exception):
    pass


_SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}


def _parsed(data: bytes, content_type: str) -> Any:
    if "json" in content_type:
        try:
            return json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError):
            pass
    return data.decode("utf-8", "replace")


def stop_all() -> None:
    """Stop every running proxy (at interpreter exit: no port outlives the run)."""
    for proxy in list(_RUNNING):
        proxy.stop()


atexit.register(stop_all)
