"""What a command prints of a result, by its kind: one entry per kind of
:data:`~signal_eval_cli.kinds.RESULT_KINDS`, as each file report has (a new kind is one
line here). The drawings themselves are :mod:`.console` (cases) and
:mod:`.console_matrix` (matrices, comparisons), imported when one is printed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console

from signal_eval_cli.kinds import Result
from signal_eval_cli.reports.console import TableChoice, plain_console, print_dataset
from signal_eval_cli.reports.reporter import renderer

__all__ = ["print_result"]


def _cases(result: Any, console: Console, table: TableChoice) -> None:
    print_dataset(result, console, table)


def _matrix(result: Any, console: Console, table: TableChoice) -> None:
    from signal_eval_cli.reports.console_matrix import print_matrix

    print_matrix(result, console)


def _comparison(result: Any, console: Console, table: TableChoice) -> None:
    from signal_eval_cli.reports.console_matrix import print_comparison

    print_comparison(result, console)


def _matrix_comparison(result: Any, console: Console, table: TableChoice) -> None:
    from signal_eval_cli.reports.console_matrix import print_matrix_comparison

    print_matrix_comparison(result, console)


_RENDERS: dict[str, Callable[[Any, Console, TableChoice], None]] = {
    "dataset": _cases,
    "scenarios": _cases,
    "matrix": _matrix,
    "comparison": _comparison,
    "matrixComparison": _matrix_comparison,
}


def print_result(
    result: Result, console: Console | None = None, table: TableChoice = "auto"
) -> None:
    """Print ``result`` as ``merge`` and ``compare`` do: a results table of cases (``table``:
    which rows), a matrix's ranking, a comparison's changes; a kind with no drawing is a
    ``TypeError`` naming it."""
    renderer(_RENDERS, result, "terminal view")(result, plain_console(console), table)
