"""What a check may read: :class:`EvalContext` (the trace, and a judge, workspace, baselines)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from signal_eval_cli.assertions.judging import Judge
from signal_eval_cli.signals import Trace

__all__ = ["EvalContext"]


@dataclass(slots=True)
class EvalContext:
    """Everything a check may read. Only ``trace`` is always there."""

    trace: Trace
    judge: Judge | None = None
    judge_model: str | None = None
    workspace: Path | None = None
    root: Path | None = None
    baselines: dict[tuple[str, str], str | None] = field(default_factory=dict)
    run: int = 0
    """With repeats: which run of the case (0-based) this trace is."""
