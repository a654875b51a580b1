"""A live harness capturing OpenTelemetry GenAI spans in-process (extra ``[otel]``).

``harness: {factory: otel, params: {target: mypkg.app:answer}}`` calls ``target(input)``
(sync or async) under a span of its own, keeps every span of that trace with a span
processor, and maps them as the OTLP/JSON importer does: any agent or SDK that emits
GenAI spans (OpenAI instrumentation, the Agents SDK bridge, OpenInference) is
evaluated without a collector. GenAI log events (``gen_ai.*.message``, ``gen_ai.choice``:
where ``opentelemetry-instrumentation-openai-v2`` puts message content) are kept by a log
processor too and folded into their spans' messages.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from pathlib import Path
from typing import Any

from signal_eval_cli.errors import InputError
from signal_eval_cli.harness.entrypoints import load_factory
from signal_eval_cli.harness.protocol import HarnessContext, kept_on_failure
from signal_eval_cli.signals import Signal
from signal_eval_cli.traces.mapping import to_signals

__all__ = ["OtelHarness", "create_harness"]


def _require() -> None:
    try:
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        raise InputError(
            "the otel harness needs the OpenTelemetry SDK: pip install 'signal-eval[otel]'"
        ) from None


def _logger_provider() -> Any:
    """The global SDK logger provider (one is set when there is none)."""
    from opentelemetry import _logs
    from opentelemetry.sdk._logs import LoggerProvider

    provider = _logs.get_logger_provider()
    if not isinstance(provider, LoggerProvider):
        provider = LoggerProvider()
        _logs.set_logger_provider(provider)
    return provider


class _Capture:
    """A span processor keeping the finished spans of the traces being recorded."""

    _lock = threading.Lock()
    _installed: _Capture | None = None

    def __init__(self) -> None:
        self.runs: dict[int, list[Any]] = {}
        self.events: dict[int, list[tuple[int, str, Any]]] = {}

    @classmethod
    def install(cls) -> _Capture:
        """Added to the global SDK tracer provider (one is set when there is none)."""
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider

        with cls._lock:
            if cls._installed is None:
                provider = trace.get_tracer_provider()
                if not isinstance(provider, TracerProvider):
                    provider = TracerProvider()
                    trace.set_tracer_provider(provider)
                capture = cls()
                provider.add_span_processor(capture)  # type: ignore[arg-type]
                _logger_provider().add_log_record_processor(capture)
                cls._installed = capture
            return cls._installed

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        pass

    def _on_ending(self, span: Any) -> None:  # the SDK calls it on every processor
        pass

    def on_end(self, span: Any) -> None:
        spans = self.runs.get(span.context.trace_id)
        if spans is not None:
            spans.append(span)

    def on_emit(self, log_record: Any) -> None:  # a LogRecordProcessor too
        record = log_record.log_record
        events = self.events.get(record.trace_id or 0)
        if events is not None and record.span_id and getattr(record, "event_name", None):
            events.append((record.span_id, record.event_name, record.body))

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class OtelHarness:
    def __init__(self, target: Any) -> None:
        self.target = target

    async def run(self, input: Any, ctx: HarnessContext) -> list[Signal]:
        from opentelemetry import trace

        from signal_eval_cli.traces.otlp import facts_from_request
        from signal_eval_cli.traces.otlp_encode import spans_to_otlp

        capture = _Capture.install()
        tracer = trace.get_tracer("signal-eval")
        root = tracer.start_span(f"signal-eval {ctx.case_id}")
        trace_id, root_id = root.get_span_context().trace_id, root.get_span_context().span_id
        capture.runs[trace_id] = []
        capture.events[trace_id] = []
        answers: list[Any] = []

        async def traced() -> None:
            with trace.use_span(root, end_on_exit=True):
                if inspect.iscoroutinefunction(self.target):
                    answer = await self.target(input)
                else:  # a thread keeps the loop free; it copies the context, span included
                    answer = await asyncio.to_thread(self.target, input)
                    if inspect.isawaitable(answer):
                        answer = await answer
                answers.append(answer)
            await asyncio.sleep(0)  # processors run at span end: the root has ended now

        def signals(failure: BaseException | None) -> list[Signal]:
            spans = [s for s in capture.runs[trace_id] if s.context.span_id != root_id]
            facts = facts_from_request(spans_to_otlp(spans, capture.events[trace_id]))
            if facts.input is None:
                facts.input = input
            if answers and isinstance(answers[0], str) and answers[0]:
                facts.output = answers[0]
            return to_signals(facts)

        try:
            return await kept_on_failure(ctx, traced(), signals)
        finally:
            capture.runs.pop(trace_id, None)
            capture.events.pop(trace_id, None)


def create_harness(target: str, dataset_dir: Path | None = None) -> OtelHarness:
    """``target``: the entry point of ``fn(input)`` (sync or async) that emits GenAI spans."""
    _require()
    return OtelHarness(load_factory(target, base_dir=dataset_dir))
