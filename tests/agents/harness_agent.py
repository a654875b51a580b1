"""A harness used as a scenario's agent: edits ``ctx.workspace`` and emits signals."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class FixingAgent:
    def __init__(self, greeting: str = "hello") -> None:
        self.greeting = greeting

    async def run(self, input: Any, ctx: Any) -> None:
        workspace = Path(ctx.workspace)
        assert ctx.metadata["workspace"] == str(workspace) == input["workspace"]
        ctx.emit("agent:activated", {"name": "fixer"})
        ctx.emit("tool:call", {"name": "write_file", "args": {"path": "greet.py"}})
        source = workspace / "greet.py"
        source.write_text(
            source.read_text().replace('"hi " + name', f'f"{self.greeting} {{name}}"')
        )
        ctx.emit("text:complete", {"text": "fixed"})


def create(greeting: str = "hello") -> FixingAgent:
    return FixingAgent(greeting)


class AskingAgent:
    """Asks the model (through ``ctx.openai``: the run's proxy) which greeting to write."""

    async def run(self, input: Any, ctx: Any) -> None:
        client = ctx.openai(async_=True, max_retries=0)
        source = Path(ctx.workspace) / "greet.py"
        reply = await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                {"role": "system", "content": "You are a coding agent. Answer with one word."},
                {"role": "user", "content": f"fix the greeting: {source.read_text()}"},
            ],
        )
        word = (reply.choices[0].message.content or "").strip()
        source.write_text(source.read_text().replace('"hi "', f'"{word} "'))


def create_asking() -> AskingAgent:
    return AskingAgent()
