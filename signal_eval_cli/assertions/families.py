"""Importing this module registers every built-in assertion type."""

from signal_eval_cli.assertions import (  # noqa: F401
    agent,
    compose,
    files,
    grading,
    judge,
    metric,
    output,
    signal,
    snapshot,
    tool,
)
