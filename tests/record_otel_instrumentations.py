"""Record the OpenAI client tool loop under third-party OpenTelemetry instrumentations.

``tests/fixtures/traces/otel_openai_openinference.json`` (Arize's OpenInference) and
``otel_openai_openllmetry_streamed.json`` (Traceloop's OpenLLMetry) were written by this
script, each encoded as the OpenTelemetry SDK's own OTLP exporter encodes spans, turned
into JSON by protobuf (base64 ids, enum names): the shape a user gets from
``MessageToJson(encode_spans(spans))``. No test imports it, and the test environment does
not install these instrumentations (they pin their own OpenTelemetry); run it from a
virtualenv with ``openai opentelemetry-sdk opentelemetry-exporter-otlp-proto-common
openinference-instrumentation-openai opentelemetry-instrumentation-openai`` and the
repository on ``PYTHONPATH``.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import agent_script as script
from mock_servers import MockLLMServer

FIXTURES = Path(__file__).parent / "fixtures" / "traces"


def record(instrumentation: str, stream: bool, out: Path) -> None:
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    if instrumentation == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor
    else:  # OpenLLMetry
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    tracer = provider.get_tracer("app")

    async def run(url: str) -> str:
        with tracer.start_as_current_span("weather-agent"):
            return await script.openai_tool_loop(url, script.QUESTION, stream=stream)

    try:
        with MockLLMServer(responder=script.responder) as server:
            asyncio.run(run(server.openai_base_url))
    finally:
        instrumentor.uninstrument()
    out.write_text(MessageToJson(encode_spans(spans.get_finished_spans())), encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    record("openinference", False, FIXTURES / "otel_openai_openinference.json")
    record("openllmetry", True, FIXTURES / "otel_openai_openllmetry_streamed.json")
