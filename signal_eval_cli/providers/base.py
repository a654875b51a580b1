"""The provider protocol: one model call in, one response out.

Providers only talk to a model (or a cassette). :func:`call_provider` turns a
call into signals — ``provider:start``, ``text:delta``…, ``text:complete``,
``tool:call``/``tool:result``, ``provider:end`` (usage, cost, durationMs) or
``provider:error`` — so every provider emits the same shape.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from signal_eval_cli.errors import EvalError
from signal_eval_cli.signals import Signal

__all__ = [
    "Emit",
    "Provider",
    "ProviderError",
    "ProviderRequest",
    "ProviderResponse",
    "ToolCallRecord",
    "call_provider",
]


class ProviderError(EvalError):
    """A model call that failed; ``code`` is short and machine-readable."""

    def __init__(self, message: str, *, code: str = "provider_error") -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ProviderRequest:
    """What an agent asks a model. ``call`` counts this agent's calls within the case,
    ``run`` which run of a repeated case this is."""

    case_id: str
    agent: str
    messages: list[dict[str, Any]]
    model: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    temperature: float | None = None
    call: int = 0
    run: int = 0

    @property
    def key(self) -> str:
        """A stable hash of what was asked (not of who asked or when)."""
        canonical = json.dumps(
            {
                "messages": self.messages,
                "model": self.model,
                "tools": self.tools,
                "temperature": self.temperature,
            },
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass
class ToolCallRecord:
    id: str
    name: str
    input: Any
    result: Any = None


@dataclass
class ProviderResponse:
    text: str
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    latency_ms: float | None = None
    model: str | None = None
    deltas: list[str] | None = None
    """Streamed chunks, when the provider streamed (or a cassette recorded them)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text}
        if self.deltas is not None:
            out["deltas"] = self.deltas
        if self.tool_calls:
            out["toolCalls"] = [
                {"id": t.id, "name": t.name, "input": t.input, "result": t.result}
                for t in self.tool_calls
            ]
        out["usage"] = {"inputTokens": self.input_tokens, "outputTokens": self.output_tokens}
        out["cost"] = self.cost
        if self.latency_ms is not None:
            out["latencyMs"] = self.latency_ms
        if self.model is not None:
            out["model"] = self.model
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProviderResponse:
        usage = data.get("usage") or {}
        return cls(
            text=str(data.get("text", "")),
            tool_calls=[
                ToolCallRecord(
                    str(t.get("id", f"call_{i}")), str(t["name"]), t.get("input"), t.get("result")
                )
                for i, t in enumerate(data.get("toolCalls") or [])
            ],
            input_tokens=int(usage.get("inputTokens", 0)),
            output_tokens=int(usage.get("outputTokens", 0)),
            cost=float(data.get("cost", 0.0)),
            latency_ms=data.get("latencyMs"),
            model=data.get("model"),
            deltas=data.get("deltas"),
        )


Emit = Callable[..., Signal]
"""``ctx.emit``: ``emit(name, payload=None, *, agent=None, parent=None) -> Signal``."""


class Provider(Protocol):
    """Answers one request. ``on_delta`` receives streamed text chunks as they arrive."""

    name: str

    async def complete(
        self, request: ProviderRequest, on_delta: Callable[[str], None] | None = None
    ) -> ProviderResponse: ...


async def call_provider(
    provider: Provider, request: ProviderRequest, emit: Emit, *, parent: Signal | None = None
) -> ProviderResponse:
    """Make one call and emit its signals; a failure emits ``provider:error`` and re-raises."""
    agent = request.agent
    start = emit(
        "provider:start",
        {"provider": provider.name, "model": request.model},
        agent=agent,
        parent=parent,
    )
    streamed: list[str] = []

    def on_delta(chunk: str) -> None:
        streamed.append(chunk)
        emit("text:delta", {"content": chunk}, agent=agent, parent=start)

    began = time.perf_counter()
    try:
        response = await provider.complete(request, on_delta)
    except ProviderError as exc:
        emit("provider:error", {"error": str(exc), "code": exc.code}, agent=agent, parent=start)
        raise
    if not streamed and response.deltas:
        for chunk in response.deltas:
            emit("text:delta", {"content": chunk}, agent=agent, parent=start)
    duration = (
        response.latency_ms
        if response.latency_ms is not None
        else (time.perf_counter() - began) * 1000
    )
    emit("text:complete", {"content": response.text}, agent=agent, parent=start)
    for tool in response.tool_calls:
        call = emit(
            "tool:call",
            {"id": tool.id, "name": tool.name, "input": tool.input},
            agent=agent,
            parent=start,
        )
        emit(
            "tool:result",
            {"id": tool.id, "name": tool.name, "result": tool.result},
            agent=agent,
            parent=call,
        )
    emit(
        "provider:end",
        {
            "provider": provider.name,
            "model": response.model or request.model,
            "output": response.text,
            "usage": {"inputTokens": response.input_tokens, "outputTokens": response.output_tokens},
            "cost": response.cost,
            "durationMs": duration,
        },
        agent=agent,
        parent=start,
    )
    return response
