"""Reading a trace file: its text, JSON documents, and problems located in it.

Every importer reports a bad record as ``file:line:col`` (the line is found by
searching the record's id in the text when the parser does not know it), so a user
is pointed at the span to fix, never at a traceback.
"""

from __future__ import annotations

import contextlib
import json
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from signal_eval_cli.errors import EvalError, InputError, Problem, undecodable
from signal_eval_cli.files import read_input_text
from signal_eval_cli.limits import too_deep_at

__all__ = ["Source", "TraceFormatError", "TraceGap", "trace_gaps"]


class TraceGap(UserWarning):
    """A readable trace that lacks a fact (input, output, tool ids): warned, never silent."""


@contextlib.contextmanager
def trace_gaps() -> Iterator[list[str]]:
    """Collect the :class:`TraceGap` warnings the block raises, for a command to say:
    the list holds each message once, in order, once the block has ended."""
    said: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TraceGap)
        yield said
    said.extend(dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, TraceGap)))


class TraceFormatError(EvalError):
    """A record an importer cannot read: ``where`` is an id to locate, or a line."""

    def __init__(self, message: str, where: str | int | None = None) -> None:
        super().__init__(message)
        self.where = where


@dataclass
class Source:
    path: str
    text: str

    @classmethod
    def read(cls, path: str | Path) -> Source:
        name = str(path)
        try:
            text = read_input_text(path, "utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError([undecodable(name, exc, f"not UTF-8 text ({exc.reason})")]) from None
        except IsADirectoryError:
            raise InputError([Problem(name, 0, 0, "is a directory, not a trace file")]) from None
        except OSError as exc:
            raise InputError([Problem(name, 0, 0, f"cannot read: {exc.strerror}")]) from None
        return cls(name, text)

    def problem(self, message: str, where: str | int | None = None) -> InputError:
        """An input error at line ``where`` or at the first line mentioning id ``where``."""
        line = where if isinstance(where, int) else self.line_of(where)
        if isinstance(where, str) and where:
            message = f"{message} (span {where})"
        return InputError([Problem(self.path, line, 1 if line else 0, message)])

    def line_of(self, needle: str | None) -> int:
        if not needle:
            return 0
        at = self.text.find(json.dumps(needle))
        return self.text.count("\n", 0, at) + 1 if at >= 0 else 0

    @cached_property
    def first_value(self) -> tuple[Any, bool]:
        """``(value, whole)``: the file as one JSON document, else its first JSON line.

        Parsed once: detecting the format and reading the trace share it."""
        text = self.text.lstrip()
        if not text:
            raise self.problem("empty trace file", 0)
        try:
            return json.loads(text), True
        except json.JSONDecodeError as exc:
            whole_error: json.JSONDecodeError | None = exc
        except ValueError:  # too large an integer, say: report it by line below
            whole_error = None
        except RecursionError:
            line, column = too_deep_at(text) or (1, 1)
            raise InputError(
                [Problem(self.path, line, column, "not JSON: nested too deep")]
            ) from None
        try:
            for _, value in self.lines():
                return value, False
        except InputError:  # not JSONL either: a broken (say, truncated) JSON document
            if whole_error is None:
                raise
            problem = Problem(
                self.path, whole_error.lineno, whole_error.colno, f"not JSON: {whole_error.msg}"
            )
            raise InputError([problem]) from None
        raise self.problem("empty trace file")

    def lines(self) -> Iterator[tuple[int, Any]]:
        """``(line number, value)`` of each JSON document: a line each (JSONL), or documents
        one after another over several lines (the files of an exporter that writes one per
        flush, joined with ``cat``); the first bad one raises at its line."""
        text, at, number = self.text, 0, 1
        while True:
            blank = _BLANK.match(text, at)
            start = blank.end() if blank else at
            number += text.count("\n", at, start)
            if start >= len(text):
                return
            end = text.find("\n", start)
            end = len(text) if end < 0 else end
            try:
                value, at = json.loads(text[start:end]), end
            except json.JSONDecodeError as exc:  # the line is not one document: one over lines?
                try:
                    value, at = _DECODER.raw_decode(text, start)
                except (ValueError, RecursionError):
                    column = start - text.rfind("\n", 0, start) - 1 + exc.colno
                    problem = Problem(self.path, number, column, f"not JSON: {exc.msg}")
                    raise InputError([problem]) from None
            except (ValueError, RecursionError) as exc:
                raise InputError([Problem(self.path, number, 1, f"not JSON: {exc}")]) from None
            yield number, value
            number += text.count("\n", start, at)


_BLANK = re.compile(r"\s*")
_DECODER = json.JSONDecoder()
