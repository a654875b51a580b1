"""Secrets never reach a file we write: the values of key-like environment variables
(``*_API_KEY``, ``*_TOKEN``…) are replaced by ``[REDACTED:NAME]`` in results, reports,
cassettes and traces, wherever they came from (a harness may echo its key in a signal).

``SIGNAL_EVAL_REDACT`` adds names or globs (comma-separated), e.g. ``MY_PASS,DB_*``.
Values shorter than 8 characters are left alone (they would match ordinary text).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from fnmatch import fnmatchcase

__all__ = [
    "REDACT_ENV",
    "SECRET_PATTERNS",
    "byte_redactions",
    "redact_bytes",
    "redact_text",
    "secret_values",
]

REDACT_ENV = "SIGNAL_EVAL_REDACT"
SECRET_PATTERNS = (
    "*_API_KEY",
    "*_APIKEY",
    "*_TOKEN",
    "*_SECRET",
    "*_SECRET_KEY",
    "*_ACCESS_KEY",
    "*_PASSWORD",
)
MIN_SECRET_LENGTH = 8


def secret_values(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """``(name, value)`` of every secret in ``environ`` (default: ours), longest first."""
    env = os.environ if environ is None else environ
    extra = [p.strip().upper() for p in env.get(REDACT_ENV, "").split(",") if p.strip()]
    patterns = (*SECRET_PATTERNS, *extra)
    found = [
        (name, value)
        for name, value in env.items()
        if len(value) >= MIN_SECRET_LENGTH and any(fnmatchcase(name.upper(), p) for p in patterns)
    ]
    return sorted(found, key=lambda item: -len(item[1]))


def _forms(value: str) -> set[str]:
    """The value as written raw and as escaped inside a JSON string."""
    return {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}


def redact_text(text: str, environ: Mapping[str, str] | None = None) -> str:
    for name, value in secret_values(environ):
        for form in _forms(value):
            if form in text:
                text = text.replace(form, f"[REDACTED:{name}]")
    return text


def byte_redactions(environ: Mapping[str, str] | None = None) -> list[tuple[bytes, bytes]]:
    """What :func:`redact_bytes` replaces, in order: each form of each secret (longest
    first) and its marker. A writer that redacts at every case works them out once."""
    return [
        (form.encode("utf-8"), f"[REDACTED:{name}]".encode())
        for name, value in secret_values(environ)
        for form in _forms(value)
    ]


def redact_bytes(
    data: bytes,
    environ: Mapping[str, str] | None = None,
    *,
    redactions: list[tuple[bytes, bytes]] | None = None,
) -> bytes:
    for form, marker in byte_redactions(environ) if redactions is None else redactions:
        if form in data:
            data = data.replace(form, marker)
    return data
