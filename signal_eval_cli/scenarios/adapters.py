"""Adapters as data: how to build, test or lint a project of one toolchain.

An adapter maps goal names to commands. A scenario names its adapter and goals;
a goal may override command, args, env, cwd and timeout. Keeping adapters as plain
data means a new toolchain is one entry here, not a new code path.

Placeholders, replaced when a goal runs: ``{fixture}`` (the working directory) in
command, args, env and cwd, and ``{python}`` (the interpreter running signal-eval).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "ADAPTERS",
    "DEFAULT_TIMEOUT_MS",
    "Adapter",
    "GoalCommand",
    "get_adapter",
]

DEFAULT_TIMEOUT_MS = 30_000.0


@dataclass(frozen=True, slots=True)
class GoalCommand:
    """One goal's command line, before placeholders are filled in.

    ``only_if_exists`` names a file (relative to the goal's cwd): when it is absent the
    goal passes without running (``pip install -r requirements.txt`` with no such file).
    """

    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    only_if_exists: str | None = None


@dataclass(frozen=True, slots=True)
class Adapter:
    id: str
    toolchain: str
    """What to install when the command is missing, for the error message."""
    goals: Mapping[str, GoalCommand]
    env: Mapping[str, str] = field(default_factory=dict)


# npm would otherwise try to reach the registry to check for a newer npm.
_NPM_ENV = {"NO_UPDATE_NOTIFIER": "1", "npm_config_update_notifier": "false"}

ADAPTERS: dict[str, Adapter] = {
    adapter.id: adapter
    for adapter in (
        Adapter(
            "typescript-default",
            "Node.js (node and npm)",
            {goal: GoalCommand("npm", ("run", goal)) for goal in ("build", "test", "lint")},
            env=_NPM_ENV,
        ),
        Adapter(
            "python-pytest",
            "Python",
            {
                "build": GoalCommand(
                    "{python}",
                    ("-m", "pip", "install", "-r", "requirements.txt"),
                    only_if_exists="requirements.txt",
                ),
                "test": GoalCommand("{python}", ("-m", "pytest", "-q")),
            },
            env={"PYTHONDONTWRITEBYTECODE": "1"},
        ),
        Adapter(
            "go-module",
            "Go (https://go.dev/dl/)",
            {goal: GoalCommand("go", (goal, "./...")) for goal in ("build", "test", "vet")},
        ),
    )
}


def get_adapter(adapter_id: str) -> Adapter | None:
    return ADAPTERS.get(adapter_id)
