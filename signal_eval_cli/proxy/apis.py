"""The model APIs the proxy speaks, and what one call said (text, tool calls, usage).

The proxy forwards bytes; this module only *reads* them, to turn a call into signals:
which provider an API path belongs to, and :class:`CallReader`, which takes a JSON
answer or the SSE events of a stream (OpenAI chat completions and responses,
Anthropic messages, embeddings) and yields text deltas as they come, then the tool
calls the model asked for and the token usage. Pure: no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CallReader", "SSEEvent", "ToolCall", "provider_of", "split_events"]

_ANTHROPIC_PATHS = ("/v1/messages", "/v1/complete")


def provider_of(path: str) -> str:
    """``anthropic`` for the Anthropic API paths, else ``openai``."""
    return "anthropic" if path.startswith(_ANTHROPIC_PATHS) else "openai"


@dataclass(slots=True)
class SSEEvent:
    """One server-sent event: its ``event:`` name (if any) and ``data:`` text."""

    data: str
    event: str | None = None

    def encode(self) -> bytes:
        head = f"event: {self.event}\n" if self.event is not None else ""
        lines = "".join(f"data: {line}\n" for line in self.data.split("\n"))
        return f"{head}{lines}\n".encode()

    @classmethod
    def parse(cls, block: bytes) -> SSEEvent | None:
        """An event from one blank-line-terminated block (comments and ids ignored)."""
        event = None
        data: list[str] = []
        for line in block.decode("utf-8", "replace").splitlines():
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event":
                event = value
            elif name == "data":
                data.append(value)
        if event is None and not data:
            return None
        return cls("\n".join(data), event)


def split_events(buffer: bytes) -> tuple[list[bytes], bytes]:
    """Complete event blocks in ``buffer`` (each with its blank line) and the rest."""
    normalised = buffer.replace(b"\r\n", b"\n")
    blocks = normalised.split(b"\n\n")
    rest = blocks.pop()
    return [b + b"\n\n" for b in blocks if b.strip()], rest


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str = ""
    input: Any = None

    def payload(self) -> dict[str, Any]:
        data = self.input
        if data is None:
            try:
                data = json.loads(self.arguments) if self.arguments else {}
            except json.JSONDecodeError:
                data = self.arguments
        return {"id": self.id, "name": self.name, "input": data}


@dataclass
class CallReader:
    """Accumulates one call's answer; ``feed`` returns the text deltas it carried."""

    model: str | None = None
    text: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    tools: dict[str, ToolCall] = field(default_factory=dict)
    done: bool = False
    """The stream's last event was read: ``[DONE]``, a finished response, ``message_stop``."""

    def _tool(self, key: str, ident: str | None = None, name: str | None = None) -> ToolCall:
        tool = self.tools.get(key)
        if tool is None:
            tool = self.tools[key] = ToolCall(ident or key, name or "")
        if ident:
            tool.id = ident
        if name:
            tool.name = name
        return tool

    def _usage(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        for name in ("prompt_tokens", "input_tokens"):
            if isinstance(usage.get(name), int):
                self.input_tokens = usage[name]
        for name in ("completion_tokens", "output_tokens"):
            if isinstance(usage.get(name), int):
                self.output_tokens = usage[name]

    # -- whole answers --------------------------------------------------------------------

    def read_json(self, body: Any) -> list[str]:
        """A non-streamed answer; its text counts as one delta."""
        if not isinstance(body, dict):
            return []
        self.model = body.get("model") or self.model
        self._usage(body.get("usage"))
        before = len(self.text)
        for choice in body.get("choices") or []:  # chat completions
            message = (choice or {}).get("message") or {}
            if isinstance(message.get("content"), str):
                self.text += message["content"]
            for i, call in enumerate(message.get("tool_calls") or []):
                fn = call.get("function") or {}
                tool = self._tool(f"c{i}", call.get("id"), fn.get("name"))
                tool.arguments = fn.get("arguments") or ""
        for i, item in enumerate(body.get("output") or []):  # responses
            self._response_item(item, i)
        if body.get("type") == "message":  # anthropic
            for i, block in enumerate(body.get("content") or []):
                self._anthropic_block(block, i)
        return [self.text[before:]] if len(self.text) > before else []

    def _response_item(self, item: Any, index: int) -> None:
        if not isinstance(item, dict):
            return
        if item.get("type") == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "output_text":
                    self.text += str(part.get("text") or "")
        elif item.get("type") == "function_call":
            tool = self._tool(f"r{index}", item.get("call_id") or item.get("id"), item.get("name"))
            tool.arguments = item.get("arguments") or ""

    def _anthropic_block(self, block: Any, index: int) -> None:
        if not isinstance(block, dict):
            return
        if block.get("type") == "text":
            self.text += str(block.get("text") or "")
        elif block.get("type") == "tool_use":
            tool = self._tool(f"a{index}", block.get("id"), block.get("name"))
            tool.input = block.get("input")

    # -- streams --------------------------------------------------------------------------

    def feed(self, event: SSEEvent) -> list[str]:
        """One SSE event of a stream; returns the text it added (if any)."""
        if event.data == "[DONE]":
            self.done = True
        if event.data in ("", "[DONE]"):
            return []
        try:
            data = json.loads(event.data)
        except json.JSONDecodeError:
            return []
        if not isinstance(data, dict):
            return []
        kind = data.get("type") or event.event
        if kind is None or "choices" in data:
            return self._chat_chunk(data)
        if kind.startswith("response."):
            return self._responses_event(kind, data)
        return self._anthropic_event(kind, data)

    def _add(self, text: Any) -> list[str]:
        if isinstance(text, str) and text:
            self.text += text
            return [text]
        return []

    def _chat_chunk(self, data: dict[str, Any]) -> list[str]:
        self.model = data.get("model") or self.model
        self._usage(data.get("usage"))
        out: list[str] = []
        for choice in data.get("choices") or []:
            delta = (choice or {}).get("delta") or {}
            out += self._add(delta.get("content"))
            for call in delta.get("tool_calls") or []:
                fn = call.get("function") or {}
                tool = self._tool(f"c{call.get('index', 0)}", call.get("id"), fn.get("name"))
                tool.arguments += fn.get("arguments") or ""
        return out

    def _responses_event(self, kind: str, data: dict[str, Any]) -> list[str]:
        if kind == "response.output_text.delta":
            return self._add(data.get("delta"))
        if kind in _RESPONSE_ENDS:
            self.done = True
        if kind in ("response.completed", "response.incomplete"):
            response = data.get("response") or {}
            self.model = response.get("model") or self.model
            self._usage(response.get("usage"))
            for i, item in enumerate(response.get("output") or []):
                if isinstance(item, dict) and item.get("type") == "function_call":
                    self._response_item(item, i)
        elif kind == "response.created":
            self.model = (data.get("response") or {}).get("model") or self.model
        return []

    def _anthropic_event(self, kind: str, data: dict[str, Any]) -> list[str]:
        if kind == "message_stop":
            self.done = True
        elif kind == "message_start":
            message = data.get("message") or {}
            self.model = message.get("model") or self.model
            self._usage(message.get("usage"))
        elif kind == "message_delta":
            usage = data.get("usage") or {}
            if isinstance(usage.get("output_tokens"), int):
                self.output_tokens = usage["output_tokens"]
        elif kind == "content_block_start":
            block = data.get("content_block") or {}
            if block.get("type") == "tool_use":
                self._tool(f"a{data.get('index', 0)}", block.get("id"), block.get("name"))
            elif block.get("type") == "text":
                return self._add(block.get("text"))
        elif kind == "content_block_delta":
            delta = data.get("delta") or {}
            if delta.get("type") == "text_delta":
                return self._add(delta.get("text"))
            if delta.get("type") == "input_json_delta":
                tool = self._tool(f"a{data.get('index', 0)}")
                tool.arguments += delta.get("partial_json") or ""
        return []

    def tool_calls(self) -> list[dict[str, Any]]:
        return [t.payload() for t in self.tools.values() if t.name]


_RESPONSE_ENDS = frozenset({"response.completed", "response.incomplete", "response.failed"})
