"""The facts a trace of the scripted conversation must show, whatever wrote it."""

from __future__ import annotations

from typing import Any

import agent_script as script

from signal_eval_cli import Trace

SUPPORT_CALLS = [
    ("get_weather", {"city": "Paris"}),
    ("get_weather", {"city": "Rome"}),
    ("get_alerts", {"city": "Paris"}),
]


def facts(trace: Trace) -> dict[str, Any]:
    """Tool calls with arguments and status, handoffs, tokens and output, in order."""
    results = {p.get("id"): p for p in trace.payloads("tool:result")}
    return {
        "input": trace.payloads("harness:start")[0]["input"],
        "calls": [
            (c.name, c.input, "error" if results[c.id].get("error") else "ok")
            for c in trace.tool_calls
        ],
        "handoffs": [(p["from"], p["to"]) for p in trace.payloads("agent:handoff")],
        "tokens": (trace.metrics.input_tokens, trace.metrics.output_tokens),
        "output": trace.output,
    }


SUPPORT_FACTS = {
    "input": script.QUESTION,
    "calls": [
        (name, args, "error" if name == "get_alerts" else "ok") for name, args in SUPPORT_CALLS
    ],
    "handoffs": [("triage", "weather")],
    "tokens": (140, 28),
    "output": script.ANSWER,
}
SIMPLE_FACTS = {
    "input": "Hi",
    "calls": [],
    "handoffs": [],
    "tokens": (12, 4),
    "output": "Hello there, friend.",
}

LOOP_FACTS = {  # the weather agent as a plain OpenAI client loop: a raised tool's error is
    "input": script.QUESTION,  # only text sent back to the model, so every call is "ok"
    "calls": [(name, args, "ok") for name, args in SUPPORT_CALLS],
    "handoffs": [],
    "tokens": (120, 23),
    "output": script.ANSWER,
}
