"""A proxied call as signals in its case's trace.

``provider:start {provider, model}`` when the request arrives, ``text:delta`` for
each streamed chunk as it passes, then ``tool:call`` for each tool the model asked
for and ``provider:end {usage, cost, durationMs}`` (cost from the price table) — or
``provider:error`` when the call failed. An agent with no instrumentation at all
gets model-call, token and cost assertions this way.

A stream's ``provider:end`` is emitted when its last event (``[DONE]``, a finished
response, ``message_stop``) is read, before that event reaches the client: a client
that stops there may make its next call at once, and that call's ``provider:start``
must not come first. Recorded, replayed and live runs then give one order.
"""

from __future__ import annotations

import time
from typing import Any

from signal_eval_cli.pricing import PriceTable
from signal_eval_cli.proxy.apis import CallReader, SSEEvent, provider_of
from signal_eval_cli.proxy.session import Emit

__all__ = ["CallSignals"]


class CallSignals:
    """Emits one call's signals through ``emit`` (``ctx.emit``), or nothing without it."""

    def __init__(self, emit: Emit | None, path: str, body: Any, prices: PriceTable) -> None:
        self.emit = emit
        self.provider = provider_of(path)
        self.reader = CallReader(model=body.get("model") if isinstance(body, dict) else None)
        self.prices = prices
        self.began = time.perf_counter()
        self.duration_ms: float | None = None
        """Set when the call ends, or beforehand to a replayed call's recorded duration."""
        self.ended = False
        self.start = (
            emit("provider:start", {"provider": self.provider, "model": self.reader.model})
            if emit is not None
            else None
        )

    def _deltas(self, chunks: list[str]) -> None:
        if self.emit is not None:
            for chunk in chunks:
                self.emit("text:delta", {"content": chunk}, parent=self.start)

    def event(self, event: SSEEvent) -> None:
        self._deltas(self.reader.feed(event))
        if self.reader.done:
            self.end()

    def body(self, body: Any) -> None:
        self._deltas(self.reader.read_json(body))

    def end(self) -> float:
        """Emit the call's end once (a stream's last event may have done it already);
        its duration, as the client saw it, is what a recording keeps."""
        if self.duration_ms is None:
            self.duration_ms = (time.perf_counter() - self.began) * 1000
        duration_ms = self.duration_ms
        if self.emit is None or self.ended:
            return duration_ms
        self.ended = True
        reader = self.reader
        for tool in reader.tool_calls():
            self.emit("tool:call", tool, parent=self.start)
        self.emit(
            "provider:end",
            {
                "provider": self.provider,
                "model": reader.model,
                "output": reader.text,
                "usage": {"inputTokens": reader.input_tokens, "outputTokens": reader.output_tokens},
                "cost": self.prices.cost(reader.model, reader.input_tokens, reader.output_tokens),
                "durationMs": round(duration_ms, 3),
            },
            parent=self.start,
        )
        return duration_ms

    def error(self, message: str, code: str) -> None:
        if self.emit is not None:
            self.emit("provider:error", {"error": message, "code": code}, parent=self.start)
