"""Imported traces written as signal JSONL files (``signal-eval import --output/--out-dir``),
each one a trace ``run --traces DIR`` reads back."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from signal_eval_cli.errors import InputError
from signal_eval_cli.signals import write_jsonl
from signal_eval_cli.traces import read_trace_signals

__all__ = ["write_signal_files"]


def write_signal_files(
    paths: Sequence[Path],
    output: Path | None = None,
    out_dir: Path | None = None,
    format: str | None = None,
    *,
    on_written: Callable[[Path, int], None] | None = None,
) -> list[Path]:
    """Import each trace of ``paths`` and write its signals to ``output`` (one trace) or
    to ``out_dir``/<trace stem>.jsonl; returns the files written, and tells
    ``on_written(file, signal count)`` after each. Every trace is read before anything
    is written; two traces to one file, or a file that is one of the inputs, is an
    :class:`InputError` before anything is written, as is both ``output`` and ``out_dir``."""
    if output is not None and out_dir is not None:
        raise InputError("give --output FILE or --out-dir DIR, not both")
    if output is not None and len(paths) > 1:
        raise InputError("--output takes one trace; use --out-dir DIR for several")
    directory = out_dir if out_dir is not None else Path()
    targets = [output] if output is not None else [directory / f"{p.stem}.jsonl" for p in paths]
    clash = {t for t in targets if targets.count(t) > 1}
    if clash:
        raise InputError(f"two traces would be written to {sorted(map(str, clash))[0]}")
    inputs = {os.path.realpath(p) for p in paths}  # Path.resolve: RuntimeError on a loop
    if any(os.path.realpath(t) in inputs for t in targets):
        raise InputError("an output file is one of the input traces: pick another path")
    imported = [read_trace_signals(p, format)[0] for p in paths]  # all read before writing
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    for signals, target in zip(imported, targets, strict=True):
        write_jsonl(signals, target)
        if on_written is not None:
            on_written(target, len(signals))
    return targets
