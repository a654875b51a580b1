"""Appending cases to a dataset file as text, so the user's own file stays as written.

The file is never re-dumped: its comments, quoting, anchors and other cases are kept
byte for byte, and the new cases are inserted after the last item of its ``cases:``
list (a block list gets block items at its indentation; a flow list, as in a JSON
file, gets JSON items). The result is parsed again and must be the old data with the
cases added, else nothing is written.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from signal_eval_cli.dataset import EvalCase, load_dataset
from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.files import atomic_write_bytes, editing, read_text_file
from signal_eval_cli.json_events import json_node
from signal_eval_cli.loading import is_json, parse_document
from signal_eval_cli.redaction import redact_text

__all__ = ["append_cases"]


def append_cases(path: str | Path, cases: Sequence[EvalCase]) -> list[EvalCase]:
    """Append ``cases`` to the dataset at ``path`` and return them as written.

    A missing file is created as a dataset named after it. An id already taken gets a
    ``-2``, ``-3``... suffix. A file that is not a valid dataset is refused with its
    problems located (:class:`InputError`), and left untouched.
    """
    target = Path(path)
    with editing(target):  # another command's append in between would be lost
        if not target.exists():
            written = _unique(cases, set())
            data = {"name": target.stem, "cases": [c.to_data() for c in written]}
            atomic_write_bytes(target, _new_file(target, data).encode())
            return written
        dataset = load_dataset(target)  # refuses, located, a file that is not a dataset
        written = _unique(cases, {c.id for c in dataset.cases})
        text, encoding = read_text_file(target)  # written back as it was: its mark, codec
        new_text = _appended(str(target), text, [_redacted(c.to_data()) for c in written])
        atomic_write_bytes(target, encoding.encode(new_text), redact=False)  # user's text kept
    return written


def _redacted(case: dict[str, Any]) -> dict[str, Any]:
    """A case drafted from a trace, with the secrets the trace held redacted
    (:mod:`~signal_eval_cli.redaction`): the file's own text is left as it is."""
    redacted: dict[str, Any] = json.loads(redact_text(json.dumps(case, ensure_ascii=False)))
    return redacted


def _unique(cases: Sequence[EvalCase], taken: set[str]) -> list[EvalCase]:
    out = []
    for case in cases:
        id, n = case.id, 1
        while id in taken:
            n += 1
            id = f"{case.id}-{n}"
        taken.add(id)
        out.append(replace(case, id=id))
    return out


def _new_file(target: Path, data: dict[str, Any]) -> str:
    if target.suffix == ".json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)


def _appended(name: str, text: str, cases: list[dict[str, Any]]) -> str:
    """``text`` with ``cases`` inserted at the end of its ``cases`` list, checked."""
    old = parse_document(text, name).data
    expected = {**old, "cases": [*old["cases"], *cases]}
    node = _cases_node(name, text)
    for at, snippet in _insertions(text, node, cases):
        candidate = text[:at] + snippet + text[at:]
        try:
            if parse_document(candidate, name).data == expected:
                return candidate
        except InputError:
            continue
    where = node.start_mark
    raise InputError(
        [
            Problem(
                name,
                where.line + 1,
                where.column + 1,
                "cannot append a case to this 'cases' list without rewriting the file "
                "(is it an alias or a merge?): add it by hand",
            )
        ]
    )


def _cases_node(name: str, text: str) -> yaml.SequenceNode:
    # load_dataset bounded it already
    root = json_node(text, name) if is_json(name) else yaml.compose(text, Loader=yaml.CSafeLoader)
    for key, value in root.value if isinstance(root, yaml.MappingNode) else []:
        if key.value == "cases" and isinstance(value, yaml.SequenceNode):
            return value
    raise InputError([Problem(name, 1, 1, "no 'cases' list written in this file to append to")])


def _offset(text: str, mark: Any) -> int:
    """The character offset of a libyaml mark (its line and column, 0-based); the end of
    a stream with no final newline is a line past it."""
    at = 0
    for _ in range(mark.line):
        at = text.find("\n", at) + 1
        if not at:
            return len(text)
    return min(at + int(mark.column), len(text))


def _insertions(
    text: str, node: yaml.SequenceNode, cases: list[dict[str, Any]]
) -> Iterator[tuple[int, str]]:
    """Where the cases may go and as what text, best first."""
    newline = "\r\n" if "\r\n" in text else "\n"
    end = _offset(text, node.end_mark)
    if node.flow_style:
        items = [json.dumps(c, ensure_ascii=False) for c in cases]
        if not node.value:  # [] → [case, ...]
            yield end - 1, ", ".join(items)
            return
        last = node.value[-1]
        start = _offset(text, node.start_mark)
        gap = (newline + " " * last.start_mark.column) if "\n" in text[start:end] else " "
        yield _offset(text, last.end_mark), "".join("," + gap + item for item in items)
        return
    indent = " " * node.start_mark.column
    block = yaml.safe_dump(
        cases, sort_keys=False, allow_unicode=True, width=120, default_flow_style=None
    )
    lines = [indent + line if line else line for line in block.split("\n")[:-1]]
    snippet = newline.join(lines) + newline
    for at in (_after_last_content(text, end), end):
        lead = newline if at and text[at - 1] != "\n" else ""
        yield at, lead + snippet


def _after_last_content(text: str, end: int) -> int:
    """The start of the line after the last line before ``end`` that holds more than
    blanks or a comment (trailing comments stay where they are, after the new cases)."""
    at = end
    while at > 0:
        line_start = text.rfind("\n", 0, at - 1) + 1
        line = text[line_start:at].strip()
        if line and not line.startswith("#"):
            return at
        at = line_start
    return end
