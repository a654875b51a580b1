"""What an LLM judge is asked and answers, and the protocol a judge implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["Judge", "JudgeRequest", "JudgeVerdict"]


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """What an LLM judge is asked: the output (and maybe the trace) against criteria."""

    criteria: list[str]
    output: str
    rubric: str | None = None
    model: str | None = None
    temperature: float = 0.0
    trajectory: str | None = None
    run: int = 0
    """Which of a repeated case's runs is judged: repeats are judged independently."""


@dataclass(frozen=True, slots=True)
class JudgeVerdict:
    """A score in [0, 1] per criterion, with the judge's reasons."""

    scores: dict[str, float]
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return sum(self.scores.values()) / len(self.scores) if self.scores else 0.0


class Judge(Protocol):
    """Scores an output against criteria. Raise to fail the assertion with that error."""

    def judge(self, request: JudgeRequest) -> JudgeVerdict: ...
