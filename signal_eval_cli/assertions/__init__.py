"""Assertion types: each a small check registered under its ``type`` string.

A type is one ``@assertion`` check beside its family (``signal``, ``tool``, …) with its
options class (its fields, :mod:`.options`); :mod:`.registry` holds them, :mod:`.evaluate`
runs them, :mod:`.schema` writes their JSON Schema. Plugins register theirs under the
``signal_eval.assertions`` entry points.
"""

from signal_eval_cli.assertions.context import EvalContext
from signal_eval_cli.assertions.evaluate import (
    evaluate_assertion,
    evaluate_assertions,
    evaluate_guarded,
)
from signal_eval_cli.assertions.judging import Judge, JudgeRequest, JudgeVerdict
from signal_eval_cli.assertions.options import Field, Options
from signal_eval_cli.assertions.outcome import AssertionResult, Outcome
from signal_eval_cli.assertions.registry import AssertionType, assertion, known_types

__all__ = [
    "AssertionResult",
    "AssertionType",
    "EvalContext",
    "Field",
    "Judge",
    "JudgeRequest",
    "JudgeVerdict",
    "Options",
    "Outcome",
    "assertion",
    "evaluate_assertion",
    "evaluate_assertions",
    "evaluate_guarded",
    "known_types",
]
