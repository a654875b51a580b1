"""Request matching: which recorded call answers a live request.

A request's *key* is the canonical JSON text of its method, API path, ``stream`` flag
and the matched part of its normalised JSON body (messages name it by a short hash).
Normalising drops what changes from run to run but not in meaning — fields such as
``user`` and ``metadata``, the ids a client gives the tool calls it sends back (renamed
``call_1``, ``call_2``… in order of appearance), and key order. ``match: [model,
messages, tools]`` narrows the key to those fields (``messages`` also covers ``input``,
``system``, ``instructions`` and ``prompt``).
Everything here is pure: it runs once per request on the proxy's hot path.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from signal_eval_cli.json_text import compact_encoder

__all__ = [
    "FIELD_GROUPS",
    "NOISE_FIELDS",
    "changes",
    "key_name",
    "normalise",
    "request_key",
    "validate_match",
]

NOISE_FIELDS = frozenset(
    {"user", "metadata", "store", "stream_options", "prompt_cache_key", "safety_identifier"}
)
"""Top-level body fields that never take part in matching."""

FIELD_GROUPS: dict[str, tuple[str, ...]] = {
    "model": ("model",),
    "messages": ("messages", "input", "system", "instructions", "prompt"),
    "tools": ("tools", "tool_choice", "functions", "function_call"),
    "params": (
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "max_output_tokens",
        "stop",
        "stop_sequences",
        "seed",
        "response_format",
        "text",
        "reasoning",
    ),
}
"""Names ``match:`` accepts besides any literal top-level field name."""

_ID_KEYS = ("tool_call_id", "tool_use_id", "call_id")
_ID_TYPES = frozenset({"tool_use", "server_tool_use", "function_call", "function"})


_canonical = compact_encoder(sort_keys=True)
"""Twice per replayed call: the request and its recording (see :mod:`~signal_eval_cli.json_text`)."""


def validate_match(fields: Iterable[Any]) -> list[str]:
    """The ``match`` list as strings; anything else is a :class:`ValueError`."""
    out = []
    for item in fields:
        if not isinstance(item, str) or not item:
            raise ValueError(f"match entries are field names, got {item!r}")
        out.append(item)
    return out


def _tool_ids(value: Any, found: dict[str, str]) -> None:
    """Collect tool-call ids in order of appearance (the client may generate them)."""
    if isinstance(value, dict):
        for key in _ID_KEYS:
            ident = value.get(key)
            if isinstance(ident, str) and ident not in found:
                found[ident] = f"call_{len(found) + 1}"
        ident = value.get("id")
        if (
            isinstance(ident, str)
            and ident not in found
            and (value.get("type") in _ID_TYPES or "function" in value)
        ):
            found[ident] = f"call_{len(found) + 1}"
        for item in value.values():
            _tool_ids(item, found)
    elif isinstance(value, list):
        for item in value:
            _tool_ids(item, found)


def _renamed(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, dict):
        return {k: _renamed(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, ids) for v in value]
    return value


def normalise(body: Any, raw: bytes | None = None) -> Any:
    """The body as recorded and matched: noise fields dropped, tool-call ids renamed.
    ``raw``: the JSON text ``body`` was read from, when at hand: UTF-8 without a key that
    ends in ``id`` (nor an escape that could spell one) has no ids, and is not searched."""
    if not isinstance(body, dict):
        return body
    kept = {k: v for k, v in body.items() if k not in NOISE_FIELDS}
    if raw is not None and b'id"' not in raw and b"\\u" not in raw and b"\0" not in raw:
        return kept
    ids: dict[str, str] = {}
    for name in FIELD_GROUPS["messages"]:
        _tool_ids(kept.get(name), ids)
    return _renamed(kept, ids) if ids else kept


def _selected(body: Any, match: Sequence[str] | None) -> Any:
    if match is None or not isinstance(body, dict):
        return body
    names: list[str] = []
    for item in match:
        names.extend(FIELD_GROUPS.get(item, (item,)))
    return {k: body[k] for k in names if k in body}


def request_key(method: str, path: str, body: Any, match: Sequence[str] | None = None) -> str:
    """What a (normalised) request asks, as text: two requests match when their keys are
    equal. Looked up as it is (a hash of it would cost as much again per key, two keys
    per replayed call); :func:`key_name` names it in messages."""
    stream = bool(body.get("stream")) if isinstance(body, dict) else False
    return _canonical([method.upper(), path, stream, _selected(body, match)])


def key_name(key: str) -> str:
    """A request key's short stable name (a hash of it), for messages."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _walk(old: Any, new: Any, path: str) -> Iterator[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            where = f"{path}.{key}" if path else key
            if key not in new:
                yield f"{where} removed (was {_short(old[key])})"
            elif key not in old:
                yield f"{where} added ({_short(new[key])})"
            else:
                yield from _walk(old[key], new[key], where)
    elif isinstance(old, list) and isinstance(new, list):
        for index in range(max(len(old), len(new))):
            where = f"{path}[{index}]"
            if index >= len(new):
                yield f"{where} removed (was {_short(old[index])})"
            elif index >= len(old):
                yield f"{where} added ({_short(new[index])})"
            else:
                yield from _walk(old[index], new[index], where)
    elif old != new:
        yield f"{path or 'body'}: {_short(old)} → {_short(new)}"


def changes(
    recorded: Any, live: Any, match: Sequence[str] | None = None, limit: int = 3
) -> list[str]:
    """What differs between a recorded and a live body (within ``match``), first few."""
    found = []
    for change in _walk(_selected(recorded, match), _selected(live, match), ""):
        found.append(change)
        if len(found) > limit:
            found[-1] = "…"
            break
    return found
