"""The built-in reactive harness: agents as data, activated by the signals they emit.

In the spirit of Open Harness's ``runReactive``. An agents file (YAML) lists agents::

    agents:
      - id: reviewer
        activate_on: [harness:start]            # signal-name globs
        model: claude-sonnet-4
        prompt: "Review this {input.language} code:\\n{input.code}"
        updates: {review: json}                 # state key <- a source (see below)
        emits: [review:complete]                # payload {output: <text>}
      - id: fixer
        activate_on: [review:complete]
        when: {state: {review.issueCount: {gt: 0}}, reason: nothing to fix}
        prompt: "Fix: {state.review.summary}"
        emits: [fix:proposed]
    end_when: {state: {done: true}}             # optional
    max_activations: 50                         # optional runaway guard

The run is event-driven and deterministic: a FIFO queue of signals; each signal
activates, in declaration order, every agent whose ``activate_on`` matches it, one
at a time. Every signal an agent run emits (provider, text, tool, state and custom
ones) joins the queue. A false ``when`` emits ``agent:skipped``; ``end_when``
(checked before each signal is dispatched and after each agent) emits
``harness:terminating``; more than ``max_activations`` activations emit
``error:max-activations`` — which a dataset's ``signal.not "error:*"`` catches.

Sources (for ``updates`` and ``emits[].payload``): ``text`` (the model's text),
``json`` (the JSON it returned: the last ```json block, else the whole text),
``{json: a.b}``, ``{tool: Write, input: file_path, all: true}`` (inputs of this
call's tool calls; the last one unless ``all``), ``{state: a.b}``, ``{value: 42}``;
``default:`` is used when the value is missing, else the update is not made.

Prompts are templates: ``{input.code}``, ``{state.plan.steps}``, ``{trigger.name}``,
``{trigger.payload.output}``, ``{params.tone}``, ``{case.id}``; ``{{``/``}}`` are
literal braces; a missing value renders as nothing (an input field some cases lack is
optional); non-strings render as JSON. A placeholder that can never name a value (an
unknown root, an ``{input.x}`` no case of the dataset holds) is refused before any case.

``durationMs`` of ``harness:end`` is the wall time of the run plus, for replayed
calls, the part of the recorded latency the replay did not spend, so latency
assertions mean the same offline as live.
"""

from __future__ import annotations

# One module per concept (issue 12): the spec, its checks, templates, guards, sources,
# the run loop and the factory. Every name stays importable from here.
from signal_eval_cli.harness.reactive.factory import create_harness
from signal_eval_cli.harness.reactive.guards import guard_failure
from signal_eval_cli.harness.reactive.run import SKIP_BUDGET_FACTOR, ReactiveHarness
from signal_eval_cli.harness.reactive.spec import (
    DEFAULT_MAX_ACTIVATIONS,
    Agent,
    AgentsSpec,
    EmitSpec,
    agents_from_document,
    load_agents,
)
from signal_eval_cli.harness.reactive.templates import extract_json, fenced_blocks, render

__all__ = [
    "DEFAULT_MAX_ACTIVATIONS",
    "SKIP_BUDGET_FACTOR",
    "Agent",
    "AgentsSpec",
    "EmitSpec",
    "ReactiveHarness",
    "agents_from_document",
    "create_harness",
    "extract_json",
    "fenced_blocks",
    "guard_failure",
    "load_agents",
    "render",
]
