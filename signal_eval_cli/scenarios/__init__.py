"""Coding-agent scenarios (seed 000): fixture, agentTask, adapter goals, file/diff assertions."""

from signal_eval_cli.loading import Document
from signal_eval_cli.scenarios.adapters import ADAPTERS, DEFAULT_TIMEOUT_MS, Adapter, GoalCommand
from signal_eval_cli.scenarios.goals import GoalResult, run_goal, run_process
from signal_eval_cli.scenarios.model import (
    AgentTask,
    Fixture,
    GoalSpec,
    ResolvedGoal,
    Scenario,
    find_scenarios,
    load_scenario,
    parse_scenario,
    scenario_from_document,
)
from signal_eval_cli.scenarios.runner import (
    ScenarioResult,
    ScenarioRunResult,
    check_scenarios,
    run_scenario,
    run_scenarios,
)
from signal_eval_cli.scenarios.update import update_expected_diffs, update_run
from signal_eval_cli.scenarios.workspace import (
    AgentTaskError,
    PathEscapeError,
    Workspace,
    WriteOp,
    apply_agent_task,
    parse_agent_task,
    prepare_workspace,
)

__all__ = [
    "ADAPTERS",
    "DEFAULT_TIMEOUT_MS",
    "Adapter",
    "AgentTask",
    "AgentTaskError",
    "Fixture",
    "GoalCommand",
    "GoalResult",
    "GoalSpec",
    "PathEscapeError",
    "ResolvedGoal",
    "Scenario",
    "ScenarioResult",
    "ScenarioRunResult",
    "Workspace",
    "WriteOp",
    "apply_agent_task",
    "check_scenario_document",
    "find_scenarios",
    "load_scenario",
    "parse_agent_task",
    "parse_scenario",
    "prepare_workspace",
    "run_goal",
    "run_process",
    "run_scenario",
    "run_scenarios",
    "scenario_from_document",
    "update_expected_diffs",
    "update_run",
]


def check_scenario_document(doc: Document) -> None:
    """What ``scenario`` checks before it runs: the file, then that its fixture exists."""
    check_scenarios([scenario_from_document(doc)])
