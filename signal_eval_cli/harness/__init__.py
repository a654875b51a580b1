"""Harnesses: what runs a case and emits its signals."""

from signal_eval_cli.harness.entrypoints import load_factory, resolve_harness
from signal_eval_cli.harness.protocol import Harness, HarnessContext
from signal_eval_cli.harness.reactive import create_harness

__all__ = ["Harness", "HarnessContext", "create_harness", "load_factory", "resolve_harness"]
