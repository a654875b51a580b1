"""The run's console table at any size: a readable page by default, failures first."""

from __future__ import annotations

import io
import subprocess
import sys
import time
from pathlib import Path

import pytest
from results_helpers import case, dataset, repeated
from rich.console import Console

from signal_eval_cli.reports import console
from signal_eval_cli.reports.console import (
    TABLE_ROWS,
    dataset_table,
    print_dataset,
    table_cases,
    width_at_most,
)

ROOT = Path(__file__).resolve().parent.parent


def printed(result: object, table: str = "auto") -> str:
    buffer = io.StringIO()
    print_dataset(result, Console(file=buffer, width=200, no_color=True), table)  # type: ignore[arg-type]
    return buffer.getvalue()


def big(n: int, failing: set[int]) -> object:
    return dataset(*(case(f"c{i}", i not in failing) for i in range(n)))


def test_a_small_run_lists_every_case_in_order() -> None:
    cases = [case("a"), case("b", False), case("c", skipped=True)]
    assert table_cases(cases) == cases
    text = printed(dataset(*cases))
    assert text.index(" a ") < text.index(" b ") < text.index(" c ")
    assert "not shown" not in text


def test_a_large_run_shows_failures_first_then_counts_the_rest() -> None:
    result = big(1000, {10, 500, 999})
    shown = table_cases(result.cases)  # type: ignore[attr-defined]
    assert len(shown) == TABLE_ROWS
    assert [c.case_id for c in shown[:3]] == ["c10", "c500", "c999"]
    assert [c.case_id for c in shown[3:5]] == ["c0", "c1"]
    text = printed(result)
    assert "… 950 more cases not shown (950 passed): --table all lists them" in text
    assert "997 passed, 3 failed, 0 skipped" in text


def test_flaky_cases_count_as_needing_attention() -> None:
    cases = [case(f"p{i}") for i in range(TABLE_ROWS)] + [repeated("flaky", 1, 3)]
    assert table_cases(cases)[0].case_id == "flaky"


def test_more_failures_than_rows_shows_the_first_failures() -> None:
    result = big(500, set(range(100, 400)))
    shown = table_cases(result.cases)  # type: ignore[attr-defined]
    assert [c.case_id for c in shown] == [f"c{i}" for i in range(100, 100 + TABLE_ROWS)]
    assert "(200 passed, 250 failed or flaky)" in printed(result)


@pytest.mark.parametrize(
    ("choice", "rows"), [("all", 200), ("failed", 2), ("none", 0), ("auto", TABLE_ROWS)]
)
def test_the_table_choice(choice: str, rows: int) -> None:
    result = big(200, {3, 7})
    assert len(table_cases(result.cases, choice)) == rows  # type: ignore[attr-defined, arg-type]
    text = printed(result, choice)
    assert ("c150" in text) == (choice == "all")
    assert "198 passed, 2 failed" in text  # the summary line, always
    assert ("not shown" in text) == (choice in ("auto", "failed"))


@pytest.mark.parametrize("width", [200, 60])  # a column, or the reasons under the table
def test_a_huge_error_is_cut_like_a_message(width: int) -> None:
    # bench/fuzz.py: an agent id of 400 KB, quoted by every case's error, was folded whole
    # into the table (10 MB printed, 7 s of CPU).
    error = "agent '" + "x" * 400_000 + "' failed"
    result = dataset(case("a", error=error), case("b", False))
    buffer = io.StringIO()
    print_dataset(result, Console(file=buffer, width=width, no_color=True))  # type: ignore[arg-type]
    text = buffer.getvalue()
    assert "error: agent" in text
    assert "…" in text
    assert len(text) < 5_000


CASE_IDS = [
    ["a", "b"],
    ["case-999", "c"],
    ["[bold]marked[/bold] up", "[link=https://example.com]l[/link]"],
    [":smile: :thumbs_up:", "\\[escaped]"],
    ["日本語のケース", "e\u0301\u0301", "x" * 90],
    ["tab\there", "two\nlines"],  # not one printable line: measured
]


@pytest.mark.parametrize("ids", CASE_IDS)
def test_the_counted_width_is_never_below_the_measured_one(ids: list[str]) -> None:
    """print_dataset counts before it measures: only a count that is at least the measure
    may decide the layout without it."""
    cases = [case(i, n % 2 == 0, latency=10.0**n) for n, i in enumerate(ids)]
    table = dataset_table(dataset(*cases), details=False)
    measured = Console(width=300).measure(table).maximum
    counted = width_at_most(table)
    if "tab\there" in ids:
        assert counted is None
    else:
        assert counted is not None
        assert counted >= measured
    if ids[0] in ("a", "case-999"):  # plain text: the count is the measure
        assert counted == measured


@pytest.mark.parametrize("ids", CASE_IDS)
def test_the_layout_is_the_measured_ones_at_every_width(
    ids: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same table (a column of reasons, or the reasons under it) as when every width
    is measured, on both sides of the narrowest width that has room for the column."""
    result = dataset(*(case(i, n % 2 == 0, error="boom") for n, i in enumerate(ids)))
    narrow = Console(width=300).measure(dataset_table(result, details=False)).maximum  # type: ignore[arg-type]
    crossing = narrow + console.MIN_DETAILS_WIDTH
    counted, measured = [], []
    for outputs in (counted, measured):
        for width in (*range(crossing - 3, crossing + 4), 40, 80, 300):
            buffer = io.StringIO()
            print_dataset(result, Console(file=buffer, width=width, no_color=True))  # type: ignore[arg-type]
            outputs.append(buffer.getvalue())
        monkeypatch.setattr(console, "width_at_most", lambda table: None)
    assert counted == measured
    assert any("failed assertions" in text for text in counted)
    assert not all("failed assertions" in text for text in counted)


def test_a_100000_case_table_prints_quickly() -> None:
    """Generous bound (the target is 0.2 s): it used to print 100,000 rows."""
    result = big(100_000, set(range(0, 100_000, 1000)))
    started = time.process_time()
    text = printed(result)
    assert time.process_time() - started < 2.0
    assert text.count("FAIL") == TABLE_ROWS


def test_the_cli_refuses_an_unknown_table_choice(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "signal_eval_cli.cli",
            "run",
            str(ROOT / "datasets/code-review.yaml"),
            "--table",
            "some",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 2
    assert "--table must be auto, all, failed, none, got 'some'" in done.stderr


def test_one_hidden_case_is_one_case() -> None:
    from signal_eval_cli.reports.console import hidden_line
    from signal_eval_cli.results import CaseResult

    assert hidden_line([CaseResult("a", True)]).plain == (
        "… 1 more case not shown (1 passed): --table all lists them"
    )


def test_brackets_in_ids_and_file_names_are_printed_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The consoles read the user's text as rich markup: a case id ``x[/y]`` raised
    MarkupError at the table (a traceback, exit 1, and no results written: the table is
    printed first), ``[red]c`` lost its brackets, and ``validate cases[v2].yaml`` said
    ``ok cases.yaml``."""
    import json

    from typer.testing import CliRunner

    from signal_eval_cli.cli import app

    (tmp_path / "h.py").write_text(
        "def create():\n"
        "    def run(input, ctx):\n"
        "        ctx.emit('text:complete', {'content': 'ok'})\n"
        "    return run\n"
    )
    (tmp_path / "cases[v2].yaml").write_text(
        "name: 'n[/i]'\nharness: h.py:create\ncases:\n"
        "  - {id: 'x[/y]', assertions: [{type: output.contains, text: '[/q]'}]}\n"
        "  - {id: '[red]c', assertions: [{type: output.contains, text: ok}]}\n"
    )
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, ["run", "cases[v2].yaml", "-q", "-o", "r.json"])
    assert done.exit_code == 1, done.output
    assert "Traceback" not in done.output and "n[/i]" in done.stdout
    assert "│ x[/y]  │ FAIL " in done.stdout and "│ [red]c │ PASS " in done.stdout
    assert [c["caseId"] for c in json.loads(Path("r.json").read_text())["cases"]] == [
        "x[/y]",
        "[red]c",
    ]
    done = CliRunner().invoke(app, ["validate", "cases[v2].yaml"])
    assert done.stdout == "ok cases[v2].yaml (dataset)\n"
