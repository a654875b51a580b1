"""``--update-expected``: rewrite failing ``expectedDiff`` values in place, as snapshot tools do.

Only the characters of each rewritten string change — every other byte of the file
(formatting, comments, key order, BOM, line endings) stays as it was. In JSON the new
value is a JSON string literal; in YAML a block literal when the old one was a block
literal and the text allows it, else a double-quoted (JSON-compatible) string. Every
edit is checked by parsing the result back before the file is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from signal_eval_cli.assertions import AssertionResult
from signal_eval_cli.errors import InputError
from signal_eval_cli.files import atomic_write_bytes, editing, read_text_file
from signal_eval_cli.json_events import json_node
from signal_eval_cli.loading import is_json, parse_document
from signal_eval_cli.redaction import redact_text
from signal_eval_cli.scenarios.model import Scenario
from signal_eval_cli.scenarios.runner import ScenarioResult, ScenarioRunResult

__all__ = ["rewrite_strings", "update_expected_diffs", "update_run"]

JsonPath = tuple[str | int, ...]


def update_expected_diffs(scenario: Scenario, result: ScenarioResult) -> list[int]:
    """Rewrite the expectedDiff of each failing diff-match from its actual diff.

    Returns the indexes (in ``patternAssertions``) that were rewritten, and marks those
    results passed. A diff-match with no actual diff (file missing, no changes) is left
    alone: there is nothing to record.
    """
    if scenario.source is None:
        return []
    edits: dict[JsonPath, str] = {}
    updated: list[tuple[int, AssertionResult]] = []
    for i, (spec, checked) in enumerate(
        zip(scenario.pattern_assertions, result.pattern_assertions, strict=False)
    ):
        actual = checked.actual
        if spec.get("type") != "diff-match" or checked.passed:
            continue
        if not isinstance(actual, str) or not actual.strip():
            continue
        edits[("patternAssertions", i, "expectedDiff")] = actual
        updated.append((i, checked))
    if not edits:
        return []
    rewrite_strings(scenario.source, edits)
    for _, checked in updated:
        checked.passed = True
        checked.message = f"expectedDiff updated from the actual diff (was: {checked.message})"
        checked.assertion["expectedDiff"] = checked.actual
    result.recompute()
    return [i for i, _ in updated]


def update_run(scenarios: Sequence[Scenario], run: ScenarioRunResult) -> list[tuple[Path, int]]:
    """``--update-expected`` over a run of ``scenarios`` (each run once, in order): each
    scenario file's failing expectedDiffs rewritten (:func:`update_expected_diffs`), then
    the run's results refreshed (what was rewritten passes). Returns each file changed,
    with how many diff-match assertions were rewritten in it."""
    updated = []
    for scenario, result in zip(scenarios, run.scenarios, strict=True):
        indexes = update_expected_diffs(scenario, result)
        if indexes and scenario.source is not None:
            updated.append((scenario.source, len(indexes)))
    run.refresh()
    return updated


def rewrite_strings(path: Path, edits: Mapping[JsonPath, str]) -> None:
    """Replace the string values at ``edits``' paths in a JSON or YAML file, nothing else
    (another command's edit of the file waits: see :func:`~signal_eval_cli.files.editing`)."""
    with editing(path):
        _rewrite_strings(path, edits)


def _rewrite_strings(path: Path, edits: Mapping[JsonPath, str]) -> None:
    text, encoding = read_text_file(path)  # written back as it was: its mark, its codec
    json_file = is_json(path)
    root = json_node(text, str(path)) if json_file else yaml.compose(text, Loader=yaml.SafeLoader)
    spans = []
    for json_path, actual in edits.items():
        value = redact_text(actual)  # a secret in the new text; the file's own text is kept
        node = _find(root, json_path)
        if not isinstance(node, yaml.ScalarNode):
            raise InputError(f"{path}: {'/'.join(map(str, json_path))} is not a string")
        start, end = node.start_mark.index, node.end_mark.index
        span = text[start:end]
        # A block scalar's span runs on over its line breaks and blank lines: keep them.
        tail = span[len(span.rstrip()) :] if node.style in ("|", ">") else ""
        candidates = [json.dumps(value, ensure_ascii=False)] if json_file else []
        if not json_file:
            if node.style == "|" and tail:
                indent = _indent_of(text, start, end, node.start_mark.column)
                newline = "\r\n" if "\r\n" in tail else "\n"
                block = _block_literal(value, indent, newline)
                if block is not None:
                    candidates.append(block + tail)
            # JSON escapes are valid YAML; ASCII-only so no character YAML reads as a break.
            candidates.append(json.dumps(value, ensure_ascii=True) + tail)
        spans.append((start, end, json_path, value, candidates))
    spans.sort(key=lambda span: span[0], reverse=True)
    for start, end, json_path, value, candidates in spans:
        for literal in candidates:
            attempt = text[:start] + literal + text[end:]
            if _value_at(attempt, str(path), json_path) == value:
                text = attempt
                break
        else:  # pragma: no cover - every candidate is checked; the JSON form always works
            raise InputError(f"{path}: cannot rewrite {'/'.join(map(str, json_path))} safely")
    atomic_write_bytes(path, encoding.encode(text), redact=False)


def _find(node: yaml.Node | None, json_path: JsonPath) -> yaml.Node | None:
    for token in json_path:
        if isinstance(node, yaml.MappingNode) and isinstance(token, str):
            node = next((v for k, v in node.value if k.value == token), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(token, int):
            node = node.value[token] if token < len(node.value) else None
        else:
            return None
    return node


def _value_at(text: str, name: str, json_path: JsonPath) -> object:
    try:
        data: object = parse_document(text, name).data
    except InputError:
        return None
    for token in json_path:
        if isinstance(data, Mapping) and token in data:  # noqa: SIM114 - different index types
            data = data[token]
        elif isinstance(data, list) and isinstance(token, int) and token < len(data):
            data = data[token]
        else:
            return None
    return data


def _indent_of(text: str, start: int, end: int, key_column: int) -> int:
    """The indentation of the block's first content line (else two more than its key)."""
    for line in text[start:end].split("\n")[1:]:
        if line.strip():
            return len(line) - len(line.lstrip(" "))
    line_start = text.rfind("\n", 0, start) + 1
    current = text[line_start:start]
    return len(current) - len(current.lstrip(" ")) + 2 if current.strip() else key_column + 2


def _block_literal(value: str, indent: int, newline: str = "\n") -> str | None:
    """``|`` block text for ``value`` up to its last content line, or None if a block
    cannot hold it."""
    if not value or value.startswith((" ", "\n")):
        return None  # would need an indentation indicator
    if any(not (c.isprintable() or c in "\n\t") for c in value):
        return None  # \r, \x85, \u2028, ... cannot stand in a block
    body = value.rstrip("\n")
    trailing = len(value) - len(body)
    chomp = "-" if trailing == 0 else "" if trailing == 1 else "+"
    lines = value.split("\n")
    if trailing:
        lines = lines[:-1]
    pad = " " * indent
    return f"|{chomp}{newline}" + newline.join(pad + line if line else "" for line in lines)
