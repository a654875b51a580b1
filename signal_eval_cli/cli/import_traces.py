"""``signal-eval import``: framework traces → signal-eval JSONL (or a test case)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from signal_eval_cli.cli.command import VerboseOpt
from signal_eval_cli.cli.common import EXIT_OK, err, fail_input, file_option, out, place_path
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
        Path | None,
        typer.Option(
            parser=place_path, metavar="<path>", help="Write DIR/<trace name>.jsonl for each trace."
        ),
    ] = None,
    case_into: Annotated[
        Path | None,
        typer.Option(
            parser=place_path,
            metavar="DATASET",
            help="Append a test case per trace to this dataset (created if missing): its "
            "input, and assertions that pass on the trace (trajectory, tool arguments, output).",
        ),
    ] = None,
    format: Annotated[
        str | None,
        typer.Option(
            help="openai-agents, otlp, langgraph-events, langgraph-stream, langgraph-updates, "
            "langgraph-values, langgraph-messages, langgraph-tasks (tasks or debug) or signals "
            "(default: detected from the "
            "content)."
        ),
    ] = None,
    verbose: VerboseOpt = False,
) -> None:
    """Import OpenAI Agents SDK, OTLP/JSON (GenAI) or LangGraph traces as signal JSONL or test cases.

    With --case-into DATASET, each trace becomes a case appended to the dataset."""
    from signal_eval_cli.traces.source import trace_gaps

    with trace_gaps() as said:
        _import(paths, output, out_dir, case_into, format)
    for gap in said:  # a trace that lacks a fact says so, never gives it silently empty
        err.print(f"warning: {gap}", highlight=False)
    raise typer.Exit(EXIT_OK)


def _import(
    paths: list[Path],
    output: Path | None,
    out_dir: Path | None,
    case_into: Path | None,
    format: str | None,
) -> None:
    from signal_eval_cli.traces.cases import import_cases
    from signal_eval_cli.traces.export import write_signal_files

    try:
        if output is None and out_dir is None and case_into is None:
            raise InputError("give --output FILE (one trace), --out-dir DIR or --case-into DATASET")
        if output is not None or out_dir is not None:
            write_signal_files(paths, output, out_dir, format, on_written=_wrote)
        if case_into is not None:
            for path, case in zip(paths, import_cases(paths, case_into, format), strict=True):
                renamed = case.id != path.stem  # --traces DIR finds a trace by its case id
                hint = f"; for --traces DIR name the trace DIR/{case.id}{path.suffix}"
                out.print(
                    f"appended case '{case.id}' to {case_into} ({len(case.assertions)} "
                    f"assertions{hint if renamed else ''})",
                    highlight=False,
                )
    except InputError as exc:
        fail_input(exc)


def _wrote(target: Path, count: int) -> None:
    out.print(f"wrote {target} ({count} signals)", highlight=False)
