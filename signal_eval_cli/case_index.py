"""A columnar index of a saved result's cases, sealed with the hash of what it indexes.

Gating a merge needs, per case, its id, pass/fail, repeat outcomes, error and metrics,
and the failed assertions of the few cases that have some. Decoding every case line of
two 100,000-case files (140 MB of JSON) took 2–4 s on our machines; their indexes are
a tenth of that and decode in a few hundredths of a second.

:func:`seal` adds, after the cases, ``caseIndex`` (one column per field) and then, as
the last key, ``caseIndexSha256``: the SHA-256 of the bytes from the ``"cases"`` key up
to the seal. :func:`open_sealed` trusts an index only when that hash matches, so a file
edited by hand, re-indented or converted to CRLF is read in full and never gives a stale
answer. (The seal guards against accidents, not forgery: a tool that rewrites the index
and re-seals it is believed.) Lines that the index makes unnecessary are not decoded,
so they are not validated either.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any

from signal_eval_cli.files import utf8
from signal_eval_cli.limits import loads_json
from signal_eval_cli.results import CaseMetrics, CaseResult, real
from signal_eval_cli.signals import as_count

__all__ = ["INDEX_KEY", "SEAL_KEY", "SealedResult", "build_index", "open_sealed", "seal"]

INDEX_KEY = "caseIndex"
SEAL_KEY = "caseIndexSha256"


def _as_is(value: Any) -> Any:
    return value


def _optional_list(value: Any) -> list[Any] | None:
    return None if value is None else list(value)


_REQUIRED = object()
"""The default of a column that is always written."""

# (key, conversion, default), in the order of CaseResult's positional fields (see
# _cases). Each conversion is the one CaseResult.from_dict applies, so a column holds
# exactly what a full load makes of the case's line and reading converts nothing; a
# column that holds only its default is left out.
_Column = tuple[str, Callable[[Any], Any], Any]
_CASE_COLUMNS: tuple[_Column, ...] = (
    ("caseId", str, _REQUIRED),
    ("passed", bool, _REQUIRED),
    ("durationMs", float, 0.0),
    ("name", _as_is, None),
    ("error", _as_is, None),
    ("skipped", bool, False),
    ("outcomes", _optional_list, None),
    ("kind", str, "case"),
)
_METRIC_COLUMNS: tuple[_Column, ...] = (
    ("latencyMs", float, 0.0),
    ("inputTokens", as_count, 0),
    ("outputTokens", as_count, 0),
    ("totalTokens", as_count, 0),
    ("cost", float, 0.0),
    ("activations", int, 0),
    ("runs", int, 1),
)
_FAILED = "failedAssertions"
"""Per case, how many of its assertions failed: a case with none needs no decoding."""

# The layout of persistence.result_to_json: top-level keys are indented by two spaces
# and every case is one line indented by four, so these occur once, where expected.
# (A newline inside a JSON string is always escaped.)
_CASES = b'\n  "cases": ['
_CASES_END = b"\n  ]"
_INDEX = _CASES_END + f',\n  "{INDEX_KEY}": '.encode()
_SEAL = f'\n  "{SEAL_KEY}": "'.encode()
_SEAL_LINE = re.compile(rb'\n  "' + SEAL_KEY.encode() + rb'": "([0-9a-f]{64})"\n}\n?')


def build_index(cases: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """The columns of the index, from the cases' saved dicts (``CaseResult.to_dict``)."""
    metrics = [case.get("metrics") or {} for case in cases]
    raw: dict[str, list[Any]] = {}
    for items, columns in ((cases, _CASE_COLUMNS), (metrics, _METRIC_COLUMNS)):
        for key, _, default in columns:
            fallback = None if default is _REQUIRED else default
            raw[key] = [item.get(key, fallback) for item in items]
    raw[_FAILED] = [[a.get("passed") for a in case.get("assertions", ())] for case in cases]
    # What a reader decodes from the lines (a value JSON cannot hold is written as str).
    decoded = json.loads(json.dumps(raw, default=str))
    index: dict[str, list[Any]] = {}
    for key, convert, default in (*_CASE_COLUMNS, *_METRIC_COLUMNS):
        column = list(map(convert, decoded[key]))
        if default is _REQUIRED or not all(_is(value, default) for value in column):
            index[key] = column
    index[_FAILED] = [sum(not passed for passed in flags) for flags in decoded[_FAILED]]
    return index


def _is(value: Any, default: Any) -> bool:
    """``value`` is ``default`` as written: not ``-0.0`` for ``0.0``, nor ``False`` for ``0``."""
    return type(value) is type(default) and repr(value) == repr(default)


def seal(text: str) -> bytes:
    """``text`` (a saved result with ``caseIndex`` right after its cases) with the seal
    added as its last key."""
    head = utf8(text.removesuffix("\n}\n") + ",")
    start = head.find(_CASES)
    if start < 0:
        raise ValueError("no case lines to seal")
    digest = hashlib.sha256(memoryview(head)[start:]).hexdigest()
    return head + f'\n  "{SEAL_KEY}": "{digest}"\n}}\n'.encode()


@dataclass(frozen=True, slots=True)
class SealedResult:
    """A sealed file opened through its index."""

    head: dict[str, Any]
    """The whole document but the cases (``cases`` is ``[]``), index included."""
    cases: list[CaseResult]
    """Every case. One that failed no assertion comes from the index: its ``assertions``,
    ``signals``, ``final_state``, ``tags`` and ``extra`` are empty; the others are
    decoded in full from their lines."""


def open_sealed(data: bytes) -> SealedResult | None:
    """The result in ``data`` read through its index; ``None`` when there is none or the
    seal does not match (then the caller reads the file in full)."""
    start, end = data.find(_CASES), data.rfind(_SEAL)
    seal_line = _SEAL_LINE.fullmatch(data, end) if 0 <= start < end else None
    if seal_line is None:
        return None
    if hashlib.sha256(memoryview(data)[start:end]).hexdigest() != seal_line[1].decode():
        return None
    cases_end = data.rfind(_INDEX, start, end)
    try:
        # Decoded as strictly as a full load: UTF-8, no BOM, no encoded surrogates.
        rest = data[cases_end + len(_CASES_END) :]
        head = loads_json((data[:start] + _CASES + b"]" + rest).decode("utf-8"), check_depth=False)
        if not _well_typed(head[INDEX_KEY]):
            return None
        cases = _cases(head[INDEX_KEY], data, start + len(_CASES), cases_end)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None  # sealed by something that does not write what we do: read it in full
    return SealedResult(head, cases)


_TYPES: dict[Callable[[Any], Any], frozenset[type]] = {
    float: frozenset((int, float)),
    int: frozenset((int,)),
    str: frozenset((str,)),
    bool: frozenset((bool,)),
}


def _well_typed(index: Any) -> bool:
    """Every column of ``index`` holds what its conversion makes (a hand-edited index with
    ``"cost": ["x"]`` sends the reader to the full load, which reports it); a null in a
    float column is read back as the NaN it was written for."""
    if not isinstance(index, Mapping):
        return False
    for key, convert, _ in (*_CASE_COLUMNS, *_METRIC_COLUMNS):
        column = index.get(key, [])
        wanted = _TYPES.get(convert)
        if not isinstance(column, list):
            return False
        if convert is float and None in column:  # NaN, written as null
            column[:] = [real(v) for v in column]
        # JSON's values are of exact types (a bool is no int here): one C-level pass
        if wanted is not None and not wanted.issuperset(map(type, column)):
            return False
    return isinstance(index.get(_FAILED), list)


def _cases(index: Mapping[str, list[Any]], data: bytes, pos: int, end: int) -> list[CaseResult]:
    """The cases whose lines run from ``data[pos]`` (the newline before the first) to
    ``data[end]`` (the newline after the last)."""
    n = len(index[_FAILED])

    def column(key: str, default: Any) -> Iterable[Any]:
        """A column, or its default for every case (zip(strict=True) checks the lengths)."""
        if key in index or default is _REQUIRED:
            return index[key]
        return repeat(default, n)

    metrics = map(CaseMetrics, *(column(key, default) for key, _, default in _METRIC_COLUMNS))
    rows = zip(
        index[_FAILED],
        metrics,
        *(column(key, default) for key, _, default in _CASE_COLUMNS),
        strict=True,
    )
    cases: list[CaseResult] = []
    append, find = cases.append, data.find
    for failed, case_metrics, case_id, passed, duration, name, error, skipped, *rest in rows:
        line_end = find(b"\n", pos + 1, end + 1)
        if line_end < 0:
            raise ValueError("the index has more cases than there are lines")
        if failed:
            line = data[pos + 1 : line_end].rstrip(b",").decode("utf-8")
            case = CaseResult.from_dict(loads_json(line, check_depth=False))
            if case.case_id != case_id:
                raise ValueError(f"case {case_id!r} is not on its line")
            append(case)
        else:
            outcomes, kind = rest
            append(
                CaseResult(
                    case_id, passed, [], [], None, case_metrics, duration, name, error, skipped,
                    [], outcomes, kind,
                )
            )  # fmt: skip
        pos = line_end
    if pos != end:
        raise ValueError("the index and the case lines differ in number")
    return cases
