"""What the agents schema cannot say: unique ids, one kind per source, sane guards."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signal_eval_cli.errors import Problem
from signal_eval_cli.harness.reactive.templates import placeholder_problems
from signal_eval_cli.loading import Document
from signal_eval_cli.patterns import matcher_problems, pattern_problems

__all__ = ["semantic_problems"]


_SOURCE_KINDS = ("json", "tool", "state", "value")


def semantic_problems(doc: Document) -> list[Problem]:
    """What the schema cannot say: unique ids, one kind per source, sane matchers."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for i, agent in enumerate(doc.data["agents"]):
        at: tuple[str | int, ...] = ("agents", i)
        if agent["id"] in seen:
            problems.append(doc.problem((*at, "id"), f"duplicate agent id '{agent['id']}'"))
        seen.add(agent["id"])
        for key in ("prompt", "system"):
            problems += _template_problems(doc, agent.get(key), (*at, key))
        if agent.get("when") is not None:
            problems += _guard_problems(doc, agent["when"], (*at, "when"))
        for key, source in (agent.get("updates") or {}).items():
            problems += _source_problems(doc, source, (*at, "updates", key))
        for j, emit in enumerate(agent.get("emits", [])):
            if isinstance(emit, Mapping):
                for name, source in (emit.get("payload") or {}).items():
                    problems += _source_problems(doc, source, (*at, "emits", j, "payload", name))
                if emit.get("when") is not None:
                    problems += _guard_problems(doc, emit["when"], (*at, "emits", j, "when"))
    if doc.data.get("end_when") is not None:
        problems += _guard_problems(doc, doc.data["end_when"], ("end_when",))
    return problems


def _template_problems(doc: Document, template: Any, at: tuple[str | int, ...]) -> list[Problem]:
    if not isinstance(template, str):
        return []
    return [doc.problem(at, message) for message in placeholder_problems(template)]


def _source_problems(doc: Document, source: Any, at: tuple[str | int, ...]) -> list[Problem]:
    if not isinstance(source, Mapping):
        return []
    kinds = [k for k in _SOURCE_KINDS if k in source]
    if len(kinds) != 1:
        found = ", ".join(kinds) or "none"
        return [
            doc.problem(at, f"a source needs exactly one of json, tool, state, value (got {found})")
        ]
    if kinds != ["tool"] and ("input" in source or "all" in source):
        return [doc.problem(at, "'input' and 'all' only apply to a {tool: ...} source")]
    if kinds == ["value"] and "default" in source:
        return [doc.problem(at, "a {value: ...} source never needs a default")]
    return []


def _guard_problems(
    doc: Document, guard: Mapping[str, Any], at: tuple[str | int, ...]
) -> list[Problem]:
    problems = [
        doc.problem((*at, "state", *p.split("/")[1:]), m) for p, m in _state_matchers(guard)
    ]
    if "payload" in guard:
        problems += [
            doc.problem((*at, "payload", *p.split("/")[1:]), m)
            for p, m in pattern_problems(guard["payload"])
        ]
    problems += _template_problems(doc, guard.get("reason"), (*at, "reason"))
    if not set(guard) - {"reason"}:
        problems.append(
            doc.problem(at, "a guard needs a condition (state, signal, payload, all, any or not)")
        )
    for key in ("all", "any"):
        for i, sub in enumerate(guard.get(key, [])):
            problems += _guard_problems(doc, sub, (*at, key, i))
    if "not" in guard:
        problems += _guard_problems(doc, guard["not"], (*at, "not"))
    return problems


def _state_matchers(guard: Mapping[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for path, expected in (guard.get("state") or {}).items():
        out += [(f"/{path}{p}", m) for p, m in matcher_problems(expected)]
    return out
