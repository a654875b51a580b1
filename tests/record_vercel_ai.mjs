// Record the weather agent on the Vercel AI SDK (TypeScript) as OTLP/JSON:
// tests/fixtures/traces/otel_vercel_ai.json (generateText) and otel_vercel_ai_streamed.json
// (streamText), each as the OpenTelemetry JS SDK's own JSON serializer writes an export.
// No test runs it (the test environment has no Node packages). From a directory with
//   npm install ai@5 @ai-sdk/openai@2 zod @opentelemetry/api @opentelemetry/sdk-trace-base \
//     @opentelemetry/sdk-trace-node @opentelemetry/otlp-transformer
// start the scripted mock (python -c "import sys,time; sys.path.insert(0,'tests');
// import agent_script as s; from mock_servers import MockLLMServer as M;
// m=M(responder=s.responder).start(); print(m.openai_base_url, flush=True); time.sleep(600)")
// and run: node tests/record_vercel_ai.mjs <mock base URL> <out.json> [stream]
import { createOpenAI } from "@ai-sdk/openai";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { generateText, stepCountIs, streamText, tool } from "ai";
import fs from "node:fs";
import { z } from "zod";

const [url, out, mode] = process.argv.slice(2);
const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register();
const openai = createOpenAI({ baseURL: url, apiKey: "sk-mock" });
const city = z.object({ city: z.string() });
const request = {
	model: openai.chat("mock-model"),
	system: "You are the weather agent.",
	prompt: "What is the weather in Paris and Rome?",
	tools: {
		get_weather: tool({ description: "The weather in a city.", inputSchema: city, execute: async (a) => `${a.city}: sunny` }),
		get_alerts: tool({
			description: "Weather alerts for a city.",
			inputSchema: city,
			execute: async (a) => {
				throw new Error(`alerts service unavailable for ${a.city}`);
			},
		}),
	},
	stopWhen: stepCountIs(6),
	experimental_telemetry: { isEnabled: true, functionId: "weather" },
};
if (mode === "stream") {
	const result = streamText(request);
	for await (const _ of result.textStream);
} else {
	await generateText(request);
}
const bytes = JsonTraceSerializer.serializeRequest(exporter.getFinishedSpans());
fs.writeFileSync(out, JSON.stringify(JSON.parse(new TextDecoder().decode(bytes)), null, 1));
console.log(`wrote ${out}`);
