"""The console view of scenario runs: one table per scenario (its agent, goals and
assertions), and the run's summary line."""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Group
from rich.table import Table
from rich.text import Text

from signal_eval_cli.scenarios.goals import TAIL_WIDTH, GoalResult
from signal_eval_cli.scenarios.runner import ScenarioResult, ScenarioRunResult

__all__ = ["run_summary", "scenario_tables"]

DETAIL_LIMIT = 1_500
MIN_TAIL_WIDTH = 20


def _status(passed: bool) -> Text:
    return Text("PASS", style="green") if passed else Text("FAIL", style="bold red")


def _clip(text: str, limit: int = DETAIL_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more chars)"


def _goal_details(goal: GoalResult, width: int = TAIL_WIDTH) -> str:
    if goal.skipped:
        return goal.stdout
    parts = [f"exit {goal.exit_code}" if goal.exit_code is not None else "no exit code"]
    parts.append(f"{goal.duration_ms:,.0f} ms")
    text = " · ".join(parts)
    if goal.passed:
        return text
    text += f"\n{goal.error}" if goal.error else ""
    tail = goal.tail(width=width)  # the whole output is in the JSON
    if tail:
        text += "\n" + "\n".join(tail)
    return text


def scenario_tables(result: ScenarioResult, width: int | None = None) -> Group:
    """One table per scenario: its goals, then its pattern and trace assertions.

    ``width`` (the console's) sizes the lines of a failed goal's output tail so that
    each fills one row of the details column rather than folding into several.
    """
    title = f"{result.id}" + (f" — {result.title}" if result.title else "")
    title += f" (run {result.run + 1})" if result.run else ""
    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("check", style="cyan", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("details", overflow="fold")
    goals = [(f"goal {goal.goal}", goal) for goal in result.goals]
    checks = []
    for checked in [*result.pattern_assertions, *result.assertions]:
        kind = str(checked.assertion.get("type"))
        what = checked.assertion.get("path") or checked.assertion.get("pattern") or ""
        checks.append((f"{kind} {what}".strip(), checked))
    tail_width = TAIL_WIDTH
    if width is not None:  # borders and padding take 10 columns, "status" 6
        widest = max((cell_len(label) for label, _ in [*goals, *checks]), default=5)
        tail_width = max(MIN_TAIL_WIDTH, width - 16 - widest)
    if result.agent is not None:
        agent = result.agent
        details = f"{agent.get('durationMs', 0):,.0f} ms"
        if agent.get("exitCode") is not None:
            details = f"exit {agent['exitCode']} · {details}"
        files = len(result.changed_files)
        details += f" · {files} file{'s' if files != 1 else ''} changed"
        if agent.get("error"):
            details += f"\n{agent['error']}"
        table.add_row("agent", _status(agent.get("status") == "passed"), details)
    for label, goal in goals:
        table.add_row(label, _status(goal.passed), _goal_details(goal, tail_width))
    for label, checked in checks:
        table.add_row(label, _status(checked.passed), _clip(checked.message))
    parts: list[Table | Text] = [table]
    footer = Text()
    footer.append(f"{result.id}: ", style="bold")
    footer.append_text(_status(result.passed))
    footer.append(f" · {result.duration_ms / 1000:.2f}s", style="dim")
    if result.error:
        footer.append(f"\nerror: {result.error}", style="red")
    if result.workdir:
        footer.append(f"\nworkdir: {result.workdir}", style="dim")
    parts.append(footer)
    return Group(*parts)


def run_summary(run: ScenarioRunResult) -> Text:
    """``N passed, M failed · 1.23s``, and whether the run was interrupted."""
    passed = sum(s.passed for s in run.scenarios)
    failed = len(run.scenarios) - passed
    style = "green" if failed == 0 else "red"
    text = Text(f"{passed} passed, {failed} failed", style=f"bold {style}")
    text.append(f" · {run.duration_ms / 1000:.2f}s", style="dim")
    if run.interrupted:
        text.append("  (interrupted: partial results)", style="bold yellow")
    return text
