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
