"""signal-eval: evaluate AI agent workflows by asserting over the signals they emit.

The public API is what this module exports; the CLI is a thin layer over it.
"""

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
from signal_eval_cli.compare import CompareOptions, Comparison, compare, compare_files
from signal_eval_cli.dataset import EvalCase, EvalDataset, HarnessSpec, load_dataset, save_dataset
from signal_eval_cli.errors import (
    EvalError,
    InputError,
    InvalidAssertion,
    Problem,
    UnknownAssertionType,
)
from signal_eval_cli.harness import HarnessContext, load_factory, resolve_harness
from signal_eval_cli.matrix import MatrixResult, Variant, load_matrix, run_matrix
from signal_eval_cli.persistence import load_result, save_result
from signal_eval_cli.reports.json_report import generate_json_report
from signal_eval_cli.reports.junit import write_junit_report
from signal_eval_cli.reports.markdown import ReportOptions, generate_markdown_report
from signal_eval_cli.results import AggregateMetrics, CaseMetrics, CaseResult, DatasetResult
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
    "InputError",
    "InvalidAssertion",
    "Judge",
    "JudgeRequest",
    "JudgeVerdict",
    "MatrixResult",
    "Problem",
    "ReportOptions",
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
    "run_dataset",
    "run_matrix",
    "run_scenario",
    "run_scenarios",
    "save_dataset",
    "save_result",
    "validate_path",
    "write_jsonl",
    "write_junit_report",
]
