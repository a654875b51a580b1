"""``--case`` selection (``runner.case_matcher``, ``select_cases``): an id itself, or a
shell glob over ids, the same as ``fnmatch.fnmatchcase`` of each pattern."""

from __future__ import annotations

import fnmatch

import pytest

from signal_eval_cli.dataset import EvalCase, EvalDataset
from signal_eval_cli.runner import RunOptions, case_matcher, select_cases

IDS = ["a.b", "axb", "sql-1", "sql-22", "x[1]", "x1", "*", "Sql-1", "a\\b", "", "tab\tid"]


@pytest.mark.parametrize(
    "patterns",
    [
        ["a.b"],  # no regex: the dot is a dot
        ["sql-*"],
        ["sql-?", "x1"],
        ["x[1]"],  # a glob: the class [1]
        ["*"],
        ["a\\b", "sql-[0-9][0-9]"],
        ["[!s]*"],
        ["nothing", "Sql-*"],
        [""],
    ],
)
def test_a_case_matches_as_its_id_or_any_pattern_s_glob_would(patterns: list[str]) -> None:
    matches = case_matcher(patterns)
    expected = [i for i in IDS if any(p == i or fnmatch.fnmatchcase(i, p) for p in patterns)]
    assert [i for i in IDS if matches(i)] == expected
    dataset = EvalDataset("d", [EvalCase(i, []) for i in IDS])
    selected = select_cases(dataset, RunOptions(case_ids=patterns))
    assert [c.id for c in selected] == expected
