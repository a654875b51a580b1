"""The list of reporters: a format added to it is an option of every command, and written.

The added reporter lives in a driver script that appends it to ``REPORTERS`` and then
runs the real CLI in its own process, as a new format in the package would.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from signal_eval_cli.errors import InputError
from signal_eval_cli.persistence import load_result, save_result
from signal_eval_cli.reports.html import generate_html_report
from signal_eval_cli.reports.json_report import generate_json_report
from signal_eval_cli.reports.junit import junit_xml
from signal_eval_cli.reports.markdown import generate_markdown_report
from signal_eval_cli.reports.reporter import RESULT_KINDS, LazyReporter
from signal_eval_cli.reports.reporters import REPORTERS, write_reports
from signal_eval_cli.results import CaseResult, DatasetResult

ROOT = Path(__file__).resolve().parent.parent

DRIVER = """\
import sys
from signal_eval_cli.reports.reporters import REPORTERS

class CountReporter:
    name = "count"
    options = ("--count",)
    help = "Write the kind and case count."
    kinds = frozenset({"dataset", "scenarios", "matrix", "comparison"})
    appends = False
    noun = "count report"

    def write(self, result, path, context):
        cases = getattr(result, "cases", None)
        path.write_text(f"{type(result).__name__} {len(cases) if cases is not None else '-'}"
                        f" {context.signals}\\n")

REPORTERS.append(CountReporter())
from signal_eval_cli.cli import main
sys.argv[0] = "signal-eval"
main()
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("driver") / "signal_eval_with_count.py"
    path.write_text(DRIVER)
    return path


def run(driver: Path, *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(driver), *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("command", ["run", "matrix", "compare", "scenario", "merge", "report"])
def test_an_added_reporter_is_an_option_of_every_command(driver: Path, command: str) -> None:
    done = run(driver, command, "--help")
    assert done.returncode == 0, done.stderr
    assert "--count <path>" in done.stdout and "Write the kind and case count." in done.stdout


def test_an_added_reporter_is_written_by_every_command(driver: Path, tmp_path: Path) -> None:
    def count(name: str) -> str:
        return (tmp_path / name).read_text()

    shards = []
    for i in (1, 2):  # run, and two shards for merge
        shard = tmp_path / f"part{i}.json"
        done = run(driver, "run", "datasets/code-review.yaml", "-q", "--shard", f"{i}/2",
                   "-o", shard, "--count", tmp_path / f"run{i}.txt", "--signals", "all")  # fmt: skip
        assert done.returncode in (0, 1), done.stderr
        assert f"count report written to {tmp_path / f'run{i}.txt'}" in done.stderr
        shards.append(shard)
    whole = len(load_result(shards[0]).cases) + len(load_result(shards[1]).cases)
    assert count("run1.txt") == f"DatasetResult {len(load_result(shards[0]).cases)} all\n"

    merged = tmp_path / "merged.json"
    done = run(driver, "merge", *shards, "-o", merged, "--count", tmp_path / "merge.txt")
    assert done.returncode in (0, 1), done.stderr
    assert count("merge.txt") == f"DatasetResult {whole} failed\n"

    comparison = tmp_path / "comparison.json"
    done = run(driver, "compare", shards[0], shards[0], "-o", comparison,
               "--count", tmp_path / "compare.txt")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert count("compare.txt") == "Comparison - failed\n"
    done = run(driver, "report", comparison, "--junit", tmp_path / "c.xml")
    assert done.returncode == 0, done.stderr
    assert 'name="(merge gate)"' in count("c.xml")

    done = run(driver, "report", merged, "--count", tmp_path / "report.txt")
    assert done.returncode == 0, done.stderr
    assert count("report.txt") == f"DatasetResult {whole} all\n"

    done = run(driver, "matrix", "datasets/matrix-code-review.yaml", "-q",
               "--count", tmp_path / "matrix.txt")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert count("matrix.txt").startswith("MatrixResult -")

    done = run(driver, "scenario", "python-smoke", "-q", "--count", tmp_path / "scenario.txt")
    assert done.returncode == 0, done.stderr
    assert count("scenario.txt") == "ScenarioRunResult 1 failed\n"


def test_with_several_datasets_a_report_needs_dataset_in_its_path_unless_it_appends(
    driver: Path, tmp_path: Path
) -> None:
    done = run(driver, "run", "datasets/code-review.yaml", "datasets/code-gen.yaml", "-q",
               "--count", tmp_path / "c.txt")  # fmt: skip
    assert done.returncode == 2 and "--count: with several datasets" in done.stderr


def result() -> DatasetResult:
    return DatasetResult("lib", [CaseResult("a", passed=True), CaseResult("b", passed=False)])


def test_write_reports_is_one_library_call(tmp_path: Path) -> None:
    paths = {r.name: tmp_path / f"out.{r.name}" for r in REPORTERS}
    write_reports(result(), paths, signals="all")
    assert load_result(paths["json"]).name == "lib"
    assert "<testsuites" in paths["junit"].read_text()
    assert "out.html" in paths["markdown"].read_text()  # it links the HTML written with it
    assert paths["html"].read_text().startswith("<!DOCTYPE html>")


def test_write_reports_refuses_what_a_format_does_not_take(tmp_path: Path) -> None:
    saved = tmp_path / "r.json"
    save_result(result(), saved)
    custom = CustomResult("x", [CaseResult("a", passed=True)])
    with pytest.raises(InputError, match="--junit does not take a custom result"):
        write_reports(custom, {"html": tmp_path / "c.html", "junit": tmp_path / "j.xml"})
    assert not (tmp_path / "c.html").exists()  # refused before anything is written
    with pytest.raises(ValueError, match="no reporter named pdf"):
        write_reports(result(), {"pdf": tmp_path / "r.pdf"})
    with pytest.raises(InputError, match="cannot write"):
        write_reports(result(), {"json": saved / "x.json"})  # under a file


# -- each report draws a result by its kind -----------------------------------------------------


def test_each_reporter_renders_every_kind_it_takes() -> None:
    package = [r for r in REPORTERS if isinstance(r, LazyReporter)]  # not a plugin's
    assert [r.name for r in package] == ["json", "markdown", "junit", "html"]
    for reporter in package:
        module, _, function = reporter.writer.partition(":")
        written = importlib.import_module(module)
        assert callable(getattr(written, function))
        renders = written._RENDERS  # kind -> how this format draws it
        assert reporter.kinds <= set(renders) <= RESULT_KINDS, reporter.name


class CustomResult(DatasetResult):
    """A kind no report knows, though it has cases: it must not pass for a dataset."""

    kind = "custom"


@pytest.mark.parametrize(
    ("generate", "report"),
    [
        (generate_markdown_report, "Markdown report"),
        (junit_xml, "JUnit report"),
        (generate_html_report, "HTML report"),
        (generate_json_report, "JSON report"),
    ],
)
def test_a_kind_a_report_does_not_know_is_a_clear_error(
    generate: Callable[[Any], object], report: str
) -> None:
    assert generate(result())  # a dataset result is drawn
    with pytest.raises(TypeError, match=f"no {report} for a custom result \\(it renders: dataset"):
        generate(CustomResult("x", [CaseResult("a", passed=True)]))


# -- a command imports only the formats it writes -----------------------------------------------

ONE_CASE = "name: one\ncases:\n  - id: good\n    assertions:\n      - {type: output.contains, text: fine}\n"
TRACE = [
    {"id": "1", "name": "harness:start", "payload": {"state": {}}},
    {"id": "2", "name": "text:complete", "payload": {"content": "fine"}},
]
FORMATS = ("markdown", "junit", "html", "pareto")
"""Report modules a run writing only its results JSON has no use for."""


def imported_formats(tmp_path: Path, prelude: str = "") -> list[str]:
    """The report and comparison modules a real ``run -o out.json`` imports, read from
    ``-X importtime`` (``prelude`` runs first in the same interpreter)."""
    (tmp_path / "d.yaml").write_text(ONE_CASE, encoding="utf-8")
    (tmp_path / "traces").mkdir(exist_ok=True)
    lines = "".join(json.dumps(s) + "\n" for s in TRACE)
    (tmp_path / "traces" / "good.jsonl").write_text(lines, encoding="utf-8")
    script = (
        f"{prelude}\nimport runpy\nrunpy.run_module('signal_eval_cli.cli', run_name='__main__')"
    )
    argv = ["run", "d.yaml", "--traces", "traces", "-q", "-o", "o.json", "--table", "none"]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", script, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert load_result(tmp_path / "o.json").cases[0].passed
    modules = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()]
    unwanted = [f"signal_eval_cli.reports.{name}" for name in FORMATS]
    return [m for m in modules if m in unwanted or m.startswith("signal_eval_cli.compar")]


def test_a_run_writing_json_imports_no_other_format(tmp_path: Path) -> None:
    assert imported_formats(tmp_path) == []


def test_the_import_check_sees_a_format_imported_eagerly(tmp_path: Path) -> None:
    eager = "import signal_eval_cli.reports.junit"
    assert imported_formats(tmp_path, eager) == ["signal_eval_cli.reports.junit"]
