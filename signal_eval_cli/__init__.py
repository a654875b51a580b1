"""signal-eval: evaluate AI agent workflows by asserting over the signals they emit.

The public API is what this module exports; the CLI is a thin layer over it. Each name
is imported on first use (PEP 562), so ``import signal_eval_cli`` and the CLI's start
do not pay for the whole library.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from signal_eval_cli.assertions import (
        AssertionResult,
        EvalContext,
        Judge,
        JudgeRequest,
        JudgeVerdict,
        assertion,
        evaluate_assertion,
        evaluate_assertions,
        known_types,
    )
    from signal_eval_cli.compare import compare, compare_files
    from signal_eval_cli.comparison import CompareOptions, Comparison
    from signal_eval_cli.configured_dataset import run_configured
    from signal_eval_cli.configured_runs import run_matrix_configured, run_scenarios_configured
    from signal_eval_cli.dataset import (
        EvalCase,
        EvalDataset,
        HarnessSpec,
        load_dataset,
        save_dataset,
    )
    from signal_eval_cli.errors import (
        EvalError,
        IncompatibleResults,
        InputError,
        InvalidAssertion,
        Problem,
        UnknownAssertionType,
    )
    from signal_eval_cli.harness import HarnessContext, load_factory, resolve_harness
    from signal_eval_cli.kinds import Result
    from signal_eval_cli.matrix import Variant, load_matrix, run_matrix
    from signal_eval_cli.matrix_model import MatrixResult
    from signal_eval_cli.persistence import load_result, save_result
    from signal_eval_cli.reports.json_report import generate_json_report
    from signal_eval_cli.reports.junit import write_junit_report
    from signal_eval_cli.reports.markdown import generate_markdown_report
    from signal_eval_cli.reports.reporter import ReportOptions
    from signal_eval_cli.results import AggregateMetrics, CaseMetrics, CaseResult, DatasetResult
    from signal_eval_cli.run_config import ProviderPolicy
    from signal_eval_cli.runner import RunOptions, run_case, run_dataset
    from signal_eval_cli.scenarios import (
        Scenario,
        ScenarioResult,
        ScenarioRunResult,
        load_scenario,
        run_scenario,
        run_scenarios,
    )
    from signal_eval_cli.signals import Signal, Trace, read_jsonl, write_jsonl
    from signal_eval_cli.traces import import_trace
    from signal_eval_cli.traces.cases import draft_case, import_cases
    from signal_eval_cli.validate import validate_path

__version__ = "0.1.0"

__all__ = [
    "AggregateMetrics",
    "AssertionResult",
    "CaseMetrics",
    "CaseResult",
    "CompareOptions",
    "Comparison",
    "DatasetResult",
    "EvalCase",
    "EvalContext",
    "EvalDataset",
    "EvalError",
    "HarnessContext",
    "HarnessSpec",
    "IncompatibleResults",
    "InputError",
    "InvalidAssertion",
    "Judge",
    "JudgeRequest",
    "JudgeVerdict",
    "MatrixResult",
    "Problem",
    "ProviderPolicy",
    "ReportOptions",
    "Result",
    "RunOptions",
    "Scenario",
    "ScenarioResult",
    "ScenarioRunResult",
    "Signal",
    "Trace",
    "UnknownAssertionType",
    "Variant",
    "assertion",
    "compare",
    "compare_files",
    "draft_case",
    "evaluate_assertion",
    "evaluate_assertions",
    "generate_json_report",
    "generate_markdown_report",
    "import_cases",
    "import_trace",
    "known_types",
    "load_dataset",
    "load_factory",
    "load_matrix",
    "load_result",
    "load_scenario",
    "read_jsonl",
    "resolve_harness",
    "run_case",
    "run_configured",
    "run_dataset",
    "run_matrix",
    "run_matrix_configured",
    "run_scenario",
    "run_scenarios",
    "run_scenarios_configured",
    "save_dataset",
    "save_result",
    "validate_path",
    "write_jsonl",
    "write_junit_report",
]

_EXPORTS = {  # name: the module that defines it, imported on first use
    "AggregateMetrics": "signal_eval_cli.results",
    "AssertionResult": "signal_eval_cli.assertions",
    "CaseMetrics": "signal_eval_cli.results",
    "CaseResult": "signal_eval_cli.results",
    "CompareOptions": "signal_eval_cli.comparison",
    "Comparison": "signal_eval_cli.comparison",
    "DatasetResult": "signal_eval_cli.results",
    "EvalCase": "signal_eval_cli.dataset",
    "EvalContext": "signal_eval_cli.assertions",
    "EvalDataset": "signal_eval_cli.dataset",
    "EvalError": "signal_eval_cli.errors",
    "HarnessContext": "signal_eval_cli.harness",
    "HarnessSpec": "signal_eval_cli.dataset",
    "IncompatibleResults": "signal_eval_cli.errors",
    "InputError": "signal_eval_cli.errors",
    "InvalidAssertion": "signal_eval_cli.errors",
    "Judge": "signal_eval_cli.assertions",
    "JudgeRequest": "signal_eval_cli.assertions",
    "JudgeVerdict": "signal_eval_cli.assertions",
    "MatrixResult": "signal_eval_cli.matrix_model",
    "Problem": "signal_eval_cli.errors",
    "ReportOptions": "signal_eval_cli.reports.reporter",
    "ProviderPolicy": "signal_eval_cli.run_config",
    "Result": "signal_eval_cli.kinds",
    "RunOptions": "signal_eval_cli.runner",
    "Scenario": "signal_eval_cli.scenarios",
    "ScenarioResult": "signal_eval_cli.scenarios",
    "ScenarioRunResult": "signal_eval_cli.scenarios",
    "Signal": "signal_eval_cli.signals",
    "Trace": "signal_eval_cli.signals",
    "UnknownAssertionType": "signal_eval_cli.errors",
    "Variant": "signal_eval_cli.matrix",
    "assertion": "signal_eval_cli.assertions",
    "compare": "signal_eval_cli.compare",
    "compare_files": "signal_eval_cli.compare",
    "evaluate_assertion": "signal_eval_cli.assertions",
    "evaluate_assertions": "signal_eval_cli.assertions",
    "draft_case": "signal_eval_cli.traces.cases",
    "generate_json_report": "signal_eval_cli.reports.json_report",
    "generate_markdown_report": "signal_eval_cli.reports.markdown",
    "import_cases": "signal_eval_cli.traces.cases",
    "import_trace": "signal_eval_cli.traces",
    "known_types": "signal_eval_cli.assertions",
    "load_dataset": "signal_eval_cli.dataset",
    "load_factory": "signal_eval_cli.harness",
    "load_matrix": "signal_eval_cli.matrix",
    "load_result": "signal_eval_cli.persistence",
    "load_scenario": "signal_eval_cli.scenarios",
    "read_jsonl": "signal_eval_cli.signals",
    "resolve_harness": "signal_eval_cli.harness",
    "run_case": "signal_eval_cli.runner",
    "run_configured": "signal_eval_cli.configured_dataset",
    "run_matrix_configured": "signal_eval_cli.configured_runs",
    "run_scenarios_configured": "signal_eval_cli.configured_runs",
    "run_dataset": "signal_eval_cli.runner",
    "run_matrix": "signal_eval_cli.matrix",
    "run_scenario": "signal_eval_cli.scenarios",
    "run_scenarios": "signal_eval_cli.scenarios",
    "save_dataset": "signal_eval_cli.dataset",
    "save_result": "signal_eval_cli.persistence",
    "validate_path": "signal_eval_cli.validate",
    "write_jsonl": "signal_eval_cli.signals",
    "write_junit_report": "signal_eval_cli.reports.junit",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'signal_eval_cli' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


class _Package(types.ModuleType):
    """This package, whose ``compare`` stays the function when the submodule of the same
    name is imported (the import system sets the package's attribute to the submodule)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "compare" and isinstance(value, types.ModuleType):
            value = value.compare
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
