"""A live harness over an OpenAI Agents SDK ``Agent`` (extra ``[openai-agents]``).

``harness: {factory: openai-agents, params: {agent: mypkg.support:triage}}`` runs the
agent on the case input with ``Runner.run_streamed`` inside a trace of its own, keeps
what a ``TracingProcessor`` sees of that trace (the very records the importer reads,
with a ``response`` span's input and output: see ``traces.openai_agents.export_span``)
and maps them with the importer's mapping; streamed text becomes ``text:delta``.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from signal_eval_cli.errors import InputError
from signal_eval_cli.harness.entrypoints import load_object
from signal_eval_cli.harness.protocol import HarnessContext, kept_on_failure
from signal_eval_cli.signals import Signal
from signal_eval_cli.traces.mapping import ModelCall, to_signals

__all__ = ["AgentsHarness", "create_harness"]


def _require() -> Any:
    try:
        import agents
    except ImportError:
        raise InputError(
            "the openai-agents harness needs the OpenAI Agents SDK: "
            "pip install 'signal-eval[openai-agents]'"
        ) from None
    return agents


class _Recorder:
    """One process-wide TracingProcessor, handing each run the spans of its own trace."""

    _lock = threading.Lock()
    _installed: _Recorder | None = None

    def __init__(self) -> None:
        self.runs: dict[str, list[dict[str, Any]]] = {}

    @classmethod
    def install(cls) -> _Recorder:
        with cls._lock:
            if cls._installed is None:
                recorder = cls()
                _require().add_trace_processor(recorder)
                cls._installed = recorder
            return cls._installed

    def _keep(self, trace_id: str | None, item: dict[str, Any] | None) -> None:
        if trace_id in self.runs and item:
            self.runs[trace_id].append(item)

    def on_trace_start(self, trace: Any) -> None:
        pass

    def on_trace_end(self, trace: Any) -> None:
        self._keep(trace.trace_id, trace.export())

    def on_span_start(self, span: Any) -> None:
        pass

    def on_span_end(self, span: Any) -> None:
        from signal_eval_cli.traces.openai_agents import export_span

        self._keep(span.trace_id, export_span(span))

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


class AgentsHarness:
    def __init__(self, agent: Any, max_turns: int = 10) -> None:
        self.agent = agent
        self.max_turns = max_turns

    async def run(self, input: Any, ctx: HarnessContext) -> list[Signal]:
        agents = _require()
        from signal_eval_cli.traces.openai_agents import facts_from_items

        recorder = _Recorder.install()
        trace_id = agents.gen_trace_id()
        recorder.runs[trace_id] = []
        deltas: list[list[str]] = []
        outputs: list[Any] = []

        async def stream() -> None:
            with agents.trace(f"signal-eval {ctx.case_id}", trace_id=trace_id):
                result = agents.Runner.run_streamed(
                    self.agent,
                    input if isinstance(input, (str, list)) else str(input),
                    max_turns=self.max_turns,
                )
                async for event in result.stream_events():
                    _collect_delta(event, deltas)
            outputs.append(result.final_output)

        def signals(failure: BaseException | None) -> list[Signal]:
            facts = facts_from_items(recorder.runs[trace_id])  # a failed agent's span says why
            calls = sorted(
                (s for s in facts.steps if isinstance(s, ModelCall)), key=lambda c: c.start
            )
            for call, chunks in zip(calls, deltas, strict=False):
                call.deltas = chunks
            if facts.output is None and outputs and outputs[0] is not None:
                facts.output = str(outputs[0])
            if facts.input is None:
                facts.input = input
            return to_signals(facts)

        try:
            return await kept_on_failure(ctx, stream(), signals)
        finally:
            recorder.runs.pop(trace_id, None)


def _collect_delta(event: Any, deltas: list[list[str]]) -> None:
    """Streamed text, one list per model response (a response starts a new list)."""
    if getattr(event, "type", None) != "raw_response_event":
        return
    kind = getattr(event.data, "type", "")
    if kind == "response.created":
        deltas.append([])
    elif kind == "response.output_text.delta" and getattr(event.data, "delta", ""):
        if not deltas:
            deltas.append([])
        deltas[-1].append(event.data.delta)


def create_harness(
    agent: str, max_turns: int = 10, dataset_dir: Path | None = None
) -> AgentsHarness:
    """``agent``: the entry point of an ``agents.Agent`` (``mypkg.support:triage``), or of
    a function returning one."""
    agents = _require()
    target = load_object(agent, base_dir=dataset_dir)
    if not isinstance(target, agents.Agent) and callable(target):
        target = target()  # a function building the agent
    if not isinstance(target, agents.Agent):
        raise InputError(f"harness 'openai-agents': '{agent}' is not an agents.Agent")
    return AgentsHarness(target, max_turns)
