"""``--executor local|ray`` and the Ray options; the choice itself is the library's
(:mod:`signal_eval_cli.executors`): here an executor it refuses exits 2."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, ParamSpec, TypeVar

import typer

from signal_eval_cli import executors
from signal_eval_cli.cli.common import fail_input
from signal_eval_cli.errors import InputError

__all__ = [
    "ExecutorOpt",
    "RayActorsOpt",
    "RayAddressOpt",
    "dataset_run",
    "matrix_run",
    "scenario_matrix_run",
    "scenarios_run",
]

_P = ParamSpec("_P")
_T = TypeVar("_T")

ExecutorOpt = Annotated[
    str,
    typer.Option(
        metavar="local|ray",
        help="Where cases run: this process (local) or a Ray cluster (ray: needs the ray extra).",
    ),
]
RayAddressOpt = Annotated[
    str | None,
    typer.Option(
        help="Ray cluster to join (host:port, ray://host:10001, auto); default: a local one."
    ),
]
RayActorsOpt = Annotated[
    int | None,
    typer.Option(
        min=1, help="Ray actors (default: one per cluster CPU), each --concurrency at once."
    ),
]


def _or_exit(build: Callable[_P, _T]) -> Callable[_P, _T]:
    """``build`` (a run on the chosen executor), with the :class:`InputError` it raises
    (an unknown executor, Ray not installed) printed and exit 2."""

    @functools.wraps(build)
    def checked(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return build(*args, **kwargs)
        except InputError as exc:
            fail_input(exc)

    return checked


dataset_run = _or_exit(executors.dataset_run)
matrix_run = _or_exit(executors.matrix_run)
scenario_matrix_run = _or_exit(executors.scenario_matrix_run)
scenarios_run = _or_exit(executors.scenarios_run)
