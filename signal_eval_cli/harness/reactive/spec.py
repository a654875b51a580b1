"""The agents file as data: its agents, what activates them, what they update and emit.

Loading validates it first: the schema, then what the schema cannot say (:mod:`.checks`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from signal_eval_cli.errors import InputError
from signal_eval_cli.harness.reactive.checks import semantic_problems
from signal_eval_cli.loading import Document, load_document, validate_document
from signal_eval_cli.paths import resolve_from
from signal_eval_cli.patterns import compile_glob

__all__ = [
    "DEFAULT_MAX_ACTIVATIONS",
    "Agent",
    "AgentsSpec",
    "EmitSpec",
    "agents_from_document",
    "load_agents",
]


DEFAULT_MAX_ACTIVATIONS = 50


@dataclass(frozen=True, slots=True)
class EmitSpec:
    signal: str
    payload: Mapping[str, Any] | None = None
    """Field -> source; ``None`` means ``{output: <text>}``."""
    when: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Agent:
    """One agent, as data."""

    id: str
    activate_on: tuple[str, ...]
    when: Mapping[str, Any] | None = None
    prompt: str | None = None
    """No prompt: the agent makes no model call (it only updates state and emits)."""
    system: str | None = None
    model: str | None = None
    temperature: float | None = None
    tools: tuple[dict[str, Any], ...] = ()
    updates: tuple[tuple[str, Any], ...] = ()
    emits: tuple[EmitSpec, ...] = ()

    def listens_to(self, name: str) -> bool:
        return any(compile_glob(p).fullmatch(name) for p in self.activate_on)

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Agent:
        activate_on = data["activate_on"]
        return cls(
            id=data["id"],
            activate_on=(activate_on,) if isinstance(activate_on, str) else tuple(activate_on),
            when=data.get("when"),
            prompt=data.get("prompt"),
            system=data.get("system"),
            model=data.get("model"),
            temperature=data.get("temperature"),
            tools=tuple(
                {"name": t} if isinstance(t, str) else dict(t) for t in data.get("tools", [])
            ),
            updates=tuple((data.get("updates") or {}).items()),
            emits=tuple(
                EmitSpec(e)
                if isinstance(e, str)
                else EmitSpec(e["signal"], e.get("payload"), e.get("when"))
                for e in data.get("emits", [])
            ),
        )


@dataclass(frozen=True)
class AgentsSpec:
    """A validated agents file."""

    agents: tuple[Agent, ...]
    end_when: Mapping[str, Any] | None = None
    max_activations: int = DEFAULT_MAX_ACTIVATIONS
    path: Path | None = None
    _routes: dict[str, tuple[Agent, ...]] = field(default_factory=dict, repr=False, compare=False)

    def agents_for(self, name: str) -> tuple[Agent, ...]:
        """Agents listening to signal ``name``, in declaration order (memoised per name)."""
        found = self._routes.get(name)
        if found is None:
            found = tuple(a for a in self.agents if a.listens_to(name))
            self._routes[name] = found
        return found


def load_agents(
    source: str | Path | Sequence[Any] | Mapping[str, Any], *, base_dir: Path | None = None
) -> AgentsSpec:
    """Read and validate agents from a YAML file, a list of agents, or a mapping.

    A mapping is either a whole agents file (with ``agents:``) or ``{id: agent}``.
    Raises :class:`InputError` listing every problem (``file:line:col`` for files).
    """
    if isinstance(source, (str, Path)):
        return agents_from_document(load_document(resolve_from(source, base_dir)))
    return agents_from_document(Document("<agents>", _normalise(source), {}, {}))


def agents_from_document(doc: Document) -> AgentsSpec:
    """Validate parsed agents (schema, then ids, sources and guards)."""
    if not isinstance(doc.data, Mapping):
        raise InputError([doc.problem((), "an agents file must be a mapping with 'agents'")])
    problems = validate_document(doc, "agents") or list(semantic_problems(doc))
    if problems:
        raise InputError(problems)
    data = doc.data
    return AgentsSpec(
        agents=tuple(Agent.from_data(a) for a in data["agents"]),
        end_when=data.get("end_when"),
        max_activations=int(data.get("max_activations", DEFAULT_MAX_ACTIVATIONS)),
        path=Path(doc.path) if doc.path != "<agents>" else None,
    )


def _normalise(source: Sequence[Any] | Mapping[str, Any]) -> Any:
    if isinstance(source, Mapping):
        if "agents" in source:
            return dict(source)
        return {
            "agents": [
                {"id": key, **value} if isinstance(value, Mapping) else value
                for key, value in source.items()
            ]
        }
    return {"agents": list(source)}
