"""A live harness over a compiled LangGraph graph (extra ``[langgraph]``).

``harness: {factory: langgraph, params: {graph: mypkg.graph:app}}`` streams the graph
with ``astream_events(version="v2")`` on the case input (a string becomes one user
message) and feeds each event, serialized as the importer reads it, to the importer's
reader: a live run and an imported JSONL of it give the same signals.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from signal_eval_cli.errors import InputError
from signal_eval_cli.harness.entrypoints import load_object
from signal_eval_cli.harness.protocol import HarnessContext, kept_on_failure
from signal_eval_cli.signals import Signal
from signal_eval_cli.traces.mapping import to_signals

__all__ = ["GraphHarness", "create_harness"]


def _dumpd() -> Any:
    try:
        from langchain_core.load import dumpd
    except ImportError:
        raise InputError(
            "the langgraph harness needs LangGraph: pip install 'signal-eval[langgraph]'"
        ) from None
    return dumpd


def graph_input(input: Any) -> Any:
    """A string (or a non-state value) becomes ``{"messages": [("user", text)]}``."""
    if isinstance(input, dict):
        return input
    return {"messages": [("user", input if isinstance(input, str) else str(input))]}


class GraphHarness:
    def __init__(self, graph: Any, config: dict[str, Any] | None = None) -> None:
        self.graph = graph
        self.config = config

    async def run(self, input: Any, ctx: HarnessContext) -> list[Signal]:
        from signal_eval_cli.traces.langgraph import LangGraphReader

        dumpd = _dumpd()
        reader = LangGraphReader()

        async def stream() -> None:
            events = self.graph.astream_events(graph_input(input), self.config, version="v2")
            async for event in events:
                reader.event(dumpd(event))

        def signals(failure: BaseException | None) -> list[Signal]:
            # the exception ends the stream inside the node that raised: it is its error
            if failure is None:
                reader.close()
            elif isinstance(failure, asyncio.CancelledError):  # the case's timeout, Ctrl-C
                reader.close("cut off: the case's time ran out (or the run stopped) here")
            else:
                reader.close(f"{type(failure).__name__}: {failure}", raised_in(failure))
            return to_signals(reader.facts)

        return await kept_on_failure(ctx, stream(), signals)


_TASK_NOTE = re.compile(r"During task with name '(.*)' and id ")


def raised_in(failure: BaseException) -> list[str]:
    """The nodes an exception came out of, innermost first: LangGraph notes each task it
    leaves on it (``During task with name 'x' and id ...``; no notes before Python 3.11)."""
    notes = getattr(failure, "__notes__", None)
    found = (_TASK_NOTE.match(n) for n in notes if isinstance(n, str)) if notes else ()
    return [m.group(1) for m in found if m]


def create_harness(
    graph: str, config: dict[str, Any] | None = None, dataset_dir: Path | None = None
) -> GraphHarness:
    """``graph``: the entry point of a compiled graph, or of a function returning one."""
    _dumpd()
    target = load_object(graph, base_dir=dataset_dir)
    if not hasattr(target, "astream_events") and callable(target):
        target = target()
    if not hasattr(target, "astream_events"):
        raise InputError(f"harness 'langgraph': '{graph}' is not a compiled graph")
    return GraphHarness(target, config)
