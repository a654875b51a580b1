"""The OpenAI Responses and Embeddings APIs of the mock LLM server (mock_servers.py).

- ``POST /v1/responses``: JSON or SSE (``stream: true``: ``response.created``, the output
  item and text part events, ``response.output_text.delta`` per chunk, ``response.completed``),
  text and ``function_call`` items.
- ``POST /v1/embeddings``: one vector per input, derived from its text (the same text, the
  same vector), as floats or, when asked (the SDK's default), base64 float32.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from typing import Any

__all__ = ["embeddings", "response", "response_events"]

DIMENSIONS = 8


def _usage(tokens_in: int, tokens_out: int) -> dict[str, Any]:
    return {
        "input_tokens": tokens_in,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": tokens_out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tokens_in + tokens_out,
    }


def _message(number: int, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"msg_{number}",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _function_call(number: int, index: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{number}_{index}",
        "call_id": f"call_{number}_{index}",
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }


def response(
    model: str,
    number: int,
    text: str,
    tools: list[tuple[str, dict[str, Any]]],
    tokens: tuple[int, int],
    *,
    status: str = "completed",
) -> dict[str, Any]:
    """A whole ``Response`` object (``status`` ``in_progress`` has no output yet)."""
    output: list[dict[str, Any]] = []
    if status == "completed":
        output = [_message(number, text)] if text else []
        output += [_function_call(number, i, n, a) for i, (n, a) in enumerate(tools)]
    return {
        "id": f"resp_{number}",
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
        "text": {"format": {"type": "text"}},
        "usage": _usage(*tokens) if status == "completed" else None,
    }


def response_events(
    model: str,
    number: int,
    chunks: list[str],
    tools: list[tuple[str, dict[str, Any]]],
    tokens: tuple[int, int],
) -> list[bytes]:
    """The SSE events of a streamed response, as the API sends them."""
    text = "".join(chunks)
    events: list[dict[str, Any]] = [
        {
            "type": "response.created",
            "response": response(model, number, text, tools, tokens, status="in_progress"),
        }
    ]
    if text:
        item = {**_message(number, ""), "status": "in_progress", "content": []}
        part = {"type": "output_text", "text": "", "annotations": []}
        where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
        events += [
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {"type": "response.content_part.added", **where, "part": part},
            *({"type": "response.output_text.delta", **where, "delta": c} for c in chunks),
            {"type": "response.output_text.done", **where, "text": text},
            {"type": "response.content_part.done", **where, "part": {**part, "text": text}},
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": _message(number, text),
            },
        ]
    events.append(
        {"type": "response.completed", "response": response(model, number, text, tools, tokens)}
    )
    return [
        f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': n})}\n\n".encode()
        for n, e in enumerate(events)
    ]


def vector(text: str) -> list[float]:
    """A small vector that depends on the text only."""
    digest = hashlib.sha256(text.encode()).digest()
    return [round(b / 255, 4) for b in digest[:DIMENSIONS]]


def embeddings(body: dict[str, Any]) -> dict[str, Any]:
    """The answer to an embeddings request (``input``: a string or a list of them)."""
    given = body.get("input")
    texts = [given] if isinstance(given, str) else [str(t) for t in given or []]
    as_base64 = body.get("encoding_format") == "base64"
    data = []
    for index, text in enumerate(texts):
        values = vector(text)
        embedding: Any = values
        if as_base64:
            embedding = base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    tokens = sum(len(t.split()) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": body.get("model", "mock"),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
