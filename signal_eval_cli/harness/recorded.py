"""A harness that replays recorded traces (``DIR/<case-id>.<ext>``) instead of running.

A trace may be signal-eval JSONL or any format :mod:`signal_eval_cli.traces` imports
(OpenAI Agents SDK export, OTLP/JSON, LangGraph streams), detected from its content.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from signal_eval_cli.errors import InputError, Problem
from signal_eval_cli.harness.protocol import HarnessContext
from signal_eval_cli.signals import Signal
from signal_eval_cli.traces import TRACE_SUFFIXES, read_trace_signals

__all__ = ["RecordedTraces"]


class RecordedTraces:
    """Reads every trace up front, so a bad line is an input error before anything runs."""

    emits_lifecycle = True  # a recorded trace is evaluated as recorded: no harness:start/end added

    def __init__(self, directory: str | Path, case_ids: Iterable[str]) -> None:
        self.directory = Path(directory)
        self.traces: dict[str, list[Signal]] = {}
        problems: list[Problem] = []
        if not self.directory.is_dir():
            why = (
                "is a file: --traces takes the directory that holds <case-id>.jsonl (.json, .ndjson)"
                if self.directory.exists()
                else "traces directory not found"
            )
            raise InputError([Problem(str(self.directory), 0, 0, why)])
        for case_id in case_ids:
            path = _trace_file(self.directory, case_id)
            if path is None:
                where = str(self.directory / f"{case_id}.jsonl")
                problems.append(Problem(where, 0, 0, f"no recorded trace for case '{case_id}'"))
                continue
            try:
                self.traces[case_id] = read_trace_signals(path)[0]
            except InputError as exc:
                problems.extend(exc.problems)
        if problems:
            raise InputError(problems)

    def run(self, input: Any, ctx: HarnessContext) -> list[Signal]:
        return list(self.traces[ctx.case_id])


def _trace_file(directory: Path, case_id: str) -> Path | None:
    """``DIR/<case-id>.jsonl``, else ``.json``/``.ndjson``: the first that exists."""
    for suffix in TRACE_SUFFIXES:
        path = directory / f"{case_id}{suffix}"
        if path.is_file():
            return path
    return None
