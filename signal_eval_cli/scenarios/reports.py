"""A goal's ``report: junit <path>``: where it is, reading it, and when a baseline is due.

The report's path is relative to the goal's cwd (where the test runner writes it) and
placeholders are filled in as in the goal's args. It must stay inside the workspace.
Any report left from before the goal ran is removed first, so a runner that crashed
before writing one is "no report", never yesterday's results.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from signal_eval_cli.scenarios.goals import GoalResult, fill_placeholders
from signal_eval_cli.scenarios.junit import JunitError, parse_junit
from signal_eval_cli.scenarios.model import ResolvedGoal, Scenario
from signal_eval_cli.scenarios.workspace import AgentTaskError, resolve_inside

__all__ = ["goal_report_path", "needs_test_baseline", "read_report"]

REPORT_LIMIT = 50_000_000
"""Bytes of a report read at most (a runaway report is an error, not a memory spike)."""


def goal_report_path(goal: ResolvedGoal, workdir: Path) -> Path | None:
    """Where the goal's report will be, or None when it has none or it would leave the
    workspace (then :func:`read_report` says so)."""
    if goal.report is None:
        return None
    relative = fill_placeholders(goal.report, workdir)
    cwd = fill_placeholders(goal.cwd, workdir) if goal.cwd else "."
    try:
        return resolve_inside(
            workdir, f"{cwd}/{relative}" if not Path(relative).is_absolute() else relative
        )
    except AgentTaskError:
        return None


def read_report(goal: ResolvedGoal, path: Path, outcome: GoalResult) -> dict[str, Any]:
    """The ``tests:result`` payload: ``{goal, report, tests}`` or ``{..., error}``."""
    payload: dict[str, Any] = {"goal": goal.goal, "report": goal.report, "baseline": False}
    try:
        size = path.stat().st_size
        if size > REPORT_LIMIT:
            raise JunitError(f"the report is {size:,} bytes (limit {REPORT_LIMIT:,})")
        tests = parse_junit(path.read_bytes())
    except FileNotFoundError:
        exit_code = f"exit {outcome.exit_code}" if outcome.exit_code is not None else outcome.error
        payload["error"] = f"no report at {goal.report} (the goal ended with {exit_code})"
        return payload
    except (OSError, JunitError) as exc:
        payload["error"] = f"cannot read the report {goal.report}: {exc}"
        return payload
    payload["tests"] = [t.to_dict() for t in tests]
    return payload


def _assertions(items: Iterable[Any]) -> Iterable[Mapping[str, Any]]:
    for item in items:
        if isinstance(item, Mapping):
            yield item
            yield from _assertions(item.get("assertions") or [])
            if isinstance(item.get("assertion"), Mapping):
                yield from _assertions([item["assertion"]])


def needs_test_baseline(scenario: Scenario) -> bool:
    """Whether some ``tests.stillPass {all: true}`` needs the tests run on the fixture."""
    return any(
        a.get("type") == "tests.stillPass" and a.get("all")
        for a in _assertions(scenario.assertions)
    )
