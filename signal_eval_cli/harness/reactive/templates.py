"""Prompt templates (``{input.code}``, ``{state.plan}``, ``{{`` for a brace) and the JSON
a model's reply holds (its last ```json block, else the whole text).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from signal_eval_cli.patterns import get_path

__all__ = [
    "ROOTS",
    "extract_json",
    "fenced_blocks",
    "placeholder_problems",
    "placeholders",
    "render",
]


_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{\s*([A-Za-z_][\w-]*(?:\.[\w-]+|\[-?\d+\])*)\s*\}")

ROOTS = ("input", "state", "params", "case", "trigger")
"""What a placeholder starts with: the keys of the context a template is rendered in."""


def placeholders(template: str) -> list[str]:
    """The dotted paths ``template``'s placeholders name, in order."""
    return [m.group(1) for m in _PLACEHOLDER.finditer(template) if m.group(1)]


def placeholder_problems(template: str) -> list[str]:
    """Placeholders that can never name a value, whatever the run: their root is none of
    :data:`ROOTS` (``{inputs.code}``, or ``{answer}`` meant as literal braces), so they
    would render as nothing in silence."""
    return [
        f"placeholder {{{path}}} names no value: a placeholder starts with "
        f"{', '.join(ROOTS)} (write {{{{ and }}}} for literal braces)"
        for path in placeholders(template)
        if _root(path) not in ROOTS
    ]


def _root(path: str) -> str:
    return re.split(r"[.\[]", path, maxsplit=1)[0]


def render(template: str, context: Mapping[str, Any]) -> str:
    """Fill ``{dotted.path}`` placeholders from ``context``; other braces stay as written."""

    def fill(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        found, value = get_path(context, match.group(1))
        if not found or value is None:
            return ""
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    return _PLACEHOLDER.sub(fill, template)


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, body)`` of each fenced code block, in order."""
    blocks: list[tuple[str, str]] = []
    language: str | None = None
    body: list[str] = []
    for line in text.split("\n"):
        stripped = line.strip()
        if language is None:
            if stripped.startswith("```"):
                language, body = stripped[3:].strip().lower(), []
        elif stripped.startswith("```"):
            blocks.append((language, "\n".join(body)))
            language = None
        else:
            body.append(line)
    return blocks


def extract_json(text: str) -> tuple[bool, Any]:
    """The JSON a model returned: the last parseable ```json (or bare ```) block,
    else the whole text, else the outermost ``{...}``. ``(found, value)``."""
    for language, body in reversed(fenced_blocks(text)):
        if language in ("json", ""):
            try:
                return True, json.loads(body)
            except ValueError:
                continue
    candidates = [text]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return True, json.loads(candidate)
        except ValueError:
            continue
    return False, None
