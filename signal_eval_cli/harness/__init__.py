"""Harnesses: what runs a case and emits its signals."""

from signal_eval_cli.harness.entrypoints import load_factory, resolve_harness
from signal_eval_cli.harness.protocol import Harness, HarnessContext

__all__ = ["Harness", "HarnessContext", "load_factory", "resolve_harness"]
