"""The run loop: a FIFO queue of signals, each activating the agents that listen to it."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from signal_eval_cli.harness.protocol import HarnessContext
from signal_eval_cli.harness.reactive.guards import guard_failure
from signal_eval_cli.harness.reactive.sources import Reply, read_source
from signal_eval_cli.harness.reactive.spec import Agent, AgentsSpec
from signal_eval_cli.harness.reactive.templates import render
from signal_eval_cli.patterns import get_path, set_path, values_equal
from signal_eval_cli.providers.base import (
    Provider,
    ProviderError,
    ProviderRequest,
    ProviderResponse,
    call_provider,
)
from signal_eval_cli.signals import Signal

__all__ = ["SKIP_BUDGET_FACTOR", "ReactiveHarness"]


SKIP_BUDGET_FACTOR = 10
"""Guard skips allowed per allowed activation: a loop of skips is a runaway loop too."""


class ReactiveHarness:
    """Runs an :class:`AgentsSpec` against one case input; safe to share across cases."""

    model_proxy = False
    """Its calls go through its own provider (or cassette), never the run's model proxy:
    ``run`` starts none for it (nor imports aiohttp's server for one)."""

    def __init__(
        self,
        spec: AgentsSpec,
        provider: Provider,
        *,
        max_activations: int | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> None:
        self.spec = spec
        self.provider = provider
        self.max_activations = max_activations or spec.max_activations
        self.params = dict(params or {})

    async def run(self, input: Any, ctx: HarnessContext) -> None:
        await _Run(self, input, ctx).execute()


class _Run:
    """The mutable part of one case's run."""

    def __init__(self, harness: ReactiveHarness, input: Any, ctx: HarnessContext) -> None:
        self.spec = harness.spec
        self.provider = harness.provider
        self.limit = harness.max_activations
        self.params = {**harness.params, **ctx.params}
        self.input = input
        self.ctx = ctx
        self.state: Any = input
        self.queue: deque[Signal] = deque()
        self.activations = 0
        self.skips = 0
        self.calls: dict[str, int] = {}
        self.unspent_ms = 0.0

    def emit(
        self, name: str, payload: Any = None, *, agent: str | None = None, parent: Any = None
    ) -> Signal:
        signal = self.ctx.emit(name, payload, agent=agent, parent=parent)
        self.queue.append(signal)
        return signal

    def template_context(self, trigger: Signal | None) -> dict[str, Any]:
        return {
            "input": self.input,
            "state": self.state,
            "params": self.params,
            "case": {"id": self.ctx.case_id},
            "trigger": {"name": trigger.name, "payload": trigger.payload} if trigger else None,
        }

    async def execute(self) -> None:
        began = time.perf_counter()
        start = self.emit(
            "harness:start", {"agents": [a.id for a in self.spec.agents], "state": self.state}
        )
        ended: Signal | None = None
        while self.queue and ended is None:
            signal = self.queue.popleft()
            ended = self.terminating(signal, signal.agent) or await self.dispatch(signal)
        duration = (time.perf_counter() - began) * 1000 + self.unspent_ms
        self.ctx.emit(
            "harness:end",
            {
                "durationMs": round(duration, 3),
                "activations": self.activations,
                "state": self.state,
            },
            parent=ended or start,
        )

    async def dispatch(self, trigger: Signal) -> Signal | None:
        """Activate every listening agent; a terminating signal when the run must end."""
        for agent in self.spec.agents_for(trigger.name):
            failure = guard_failure(agent.when, self.state, trigger) if agent.when else None
            if failure is not None:
                ended = self.skip(agent, trigger, failure)
            elif self.activations >= self.limit:
                ended = self.runaway(
                    agent, trigger, f"{self.activations} activations reached max_activations"
                )
            else:
                ended = self.terminating(await self.activate(agent, trigger), agent.id)
            if ended is not None:
                return ended
        return None

    def skip(self, agent: Agent, trigger: Signal, failure: str) -> Signal | None:
        """Emit ``agent:skipped``; a skip loop past its budget is a runaway too."""
        self.skips += 1
        budget = self.limit * SKIP_BUDGET_FACTOR
        if self.skips > budget:
            return self.runaway(agent, trigger, f"more than {budget} guard skips")
        reason = (agent.when or {}).get("reason")
        self.emit(
            "agent:skipped",
            {
                "agent": agent.id,
                "reason": render(reason, self.template_context(trigger)) if reason else failure,
                "trigger": trigger.name,
            },
            agent=agent.id,
            parent=trigger,
        )
        return None

    def terminating(self, signal: Signal, agent: str | None) -> Signal | None:
        end_when = self.spec.end_when
        if end_when is None or guard_failure(end_when, self.state, signal) is not None:
            return None
        reason = end_when.get("reason")
        return self.ctx.emit(
            "harness:terminating",
            {
                "reason": render(reason, self.template_context(signal)) if reason else "end_when",
                "agent": agent,
                "state": self.state,
            },
            agent=agent,
            parent=signal,
        )

    def runaway(self, agent: Agent, trigger: Signal, what: str) -> Signal:
        message = (
            f"runaway loop stopped: {what} (max_activations {self.limit}); agent "
            f"'{agent.id}' was about to run again on '{trigger.name}'. Check the "
            "activate_on cycle, or raise max_activations."
        )
        error = self.ctx.emit(
            "error:max-activations",
            {
                "error": message,
                "code": "max_activations",
                "limit": self.limit,
                "agent": agent.id,
                "trigger": trigger.name,
            },
            agent=agent.id,
            parent=trigger,
        )
        return self.ctx.emit(
            "harness:terminating",
            {"reason": "max-activations", "agent": agent.id, "state": self.state},
            agent=agent.id,
            parent=error,
        )

    async def activate(self, agent: Agent, trigger: Signal) -> Signal:
        """Run one agent; return the last signal it emitted."""
        self.activations += 1
        activated = self.emit(
            "agent:activated",
            {"agent": agent.id, "trigger": trigger.name},
            agent=agent.id,
            parent=trigger,
        )
        reply = Reply()
        if agent.prompt is not None:
            response = await self.call(agent, trigger, activated)
            reply = Reply(response.text, response.tool_calls)
        last = activated
        for key, source in agent.updates:
            found, value = read_source(source, reply, self.state)
            if found:
                last = self.update(key, value, agent, activated) or last
        for spec in agent.emits:
            if spec.when is not None and guard_failure(spec.when, self.state, trigger) is not None:
                continue
            if spec.payload is None:
                payload: dict[str, Any] = {"output": reply.text}
            else:
                payload = {}
                for name, source in spec.payload.items():
                    found, value = read_source(source, reply, self.state)
                    if found:
                        payload[name] = value
            last = self.emit(spec.signal, payload, agent=agent.id, parent=activated)
        return last

    async def call(self, agent: Agent, trigger: Signal, activated: Signal) -> ProviderResponse:
        context = self.template_context(trigger)
        messages = []
        if agent.system is not None:
            messages.append({"role": "system", "content": render(agent.system, context)})
        messages.append({"role": "user", "content": render(agent.prompt or "", context)})
        number = self.calls.get(agent.id, 0)
        self.calls[agent.id] = number + 1
        request = ProviderRequest(
            case_id=self.ctx.case_id,
            agent=agent.id,
            messages=messages,
            model=agent.model,
            tools=[dict(t) for t in agent.tools],
            temperature=agent.temperature,
            call=number,
            run=self.ctx.run,
        )
        began = time.perf_counter()
        try:
            response = await call_provider(self.provider, request, self.emit, parent=activated)
        except ProviderError as exc:
            self.ctx.emit(
                "agent:error",
                {"agent": agent.id, "error": str(exc), "code": exc.code},
                agent=agent.id,
                parent=activated,
            )
            raise
        spent = (time.perf_counter() - began) * 1000
        if response.latency_ms is not None:
            self.unspent_ms += max(0.0, float(response.latency_ms) - spent)
        return response

    def update(self, key: str, value: Any, agent: Agent, activated: Signal) -> Signal | None:
        found, old = get_path(self.state, key)
        old = old if found else None
        if found and values_equal(old, value):
            return None
        self.state = set_path(self.state, key, value)
        return self.emit(
            f"state:{key}:changed",
            {"key": key, "oldValue": old, "newValue": value, "agent": agent.id},
            agent=agent.id,
            parent=activated,
        )
