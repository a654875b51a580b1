"""``signal-eval import``: framework traces → signal-eval JSONL (or a test case)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from signal_eval_cli.cli.common import EXIT_OK, fail_input, file_option, out
from signal_eval_cli.errors import InputError

__all__ = ["import_command"]


def import_command(
    paths: Annotated[
        list[Path], typer.Argument(metavar="TRACE...", help="Trace files in any known format.")
    ],
    output: Annotated[
        Path | None, file_option("--output", "-o", help="Write the one trace's JSONL here.")
    ] = None,
    out_dir: Annotated[
        Path | None, typer.Option(help="Write DIR/<trace name>.jsonl for each trace.")
    ] = None,
    format: Annotated[
        str | None,
        typer.Option(
            help="openai-agents, otlp, langgraph-events, langgraph-stream or signals "
            "(default: detected from the content)."
        ),
    ] = None,
) -> None:
    """Import OpenAI Agents SDK, OTLP/JSON (GenAI) or LangGraph traces as signal JSONL."""
    from signal_eval_cli.signals import write_jsonl
    from signal_eval_cli.traces import read_trace_signals

    try:
        if output is None and out_dir is None:
            raise InputError("give --output FILE (one trace) or --out-dir DIR")
        if output is not None and len(paths) > 1:
            raise InputError("--output takes one trace; use --out-dir DIR for several")
        directory = out_dir if out_dir is not None else Path()
        targets = [output] if output is not None else [directory / f"{p.stem}.jsonl" for p in paths]
        clash = {t for t in targets if targets.count(t) > 1}
        if clash:
            raise InputError(f"two traces would be written to {sorted(map(str, clash))[0]}")
        inputs = {p.resolve() for p in paths}
        if any(t.resolve() in inputs for t in targets):
            raise InputError("an output file is one of the input traces: pick another path")
        imported = [read_trace_signals(p, format)[0] for p in paths]  # all read before writing
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
        for signals, target in zip(imported, targets, strict=True):
            write_jsonl(signals, target)
            out.print(f"wrote {target} ({len(signals)} signals)", highlight=False)
    except InputError as exc:
        fail_input(exc)
    raise typer.Exit(EXIT_OK)
