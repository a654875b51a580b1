"""Assertion types: each a small check registered under its ``type`` string."""

from signal_eval_cli.assertions._registry import (
    AssertionResult,
    EvalContext,
    Judge,
    JudgeRequest,
    JudgeVerdict,
    Outcome,
    assertion,
    evaluate_assertion,
    evaluate_assertions,
    known_types,
)

__all__ = [
    "AssertionResult",
    "EvalContext",
    "Judge",
    "JudgeRequest",
    "JudgeVerdict",
    "Outcome",
    "assertion",
    "evaluate_assertion",
    "evaluate_assertions",
    "known_types",
]
