"""The one table of result kinds and of file kinds: explicit order, loaded on first use."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from results_helpers import case, dataset
from test_persistence import matrix_result, scenario_run

from signal_eval_cli import kinds
from signal_eval_cli.compare import compare
from signal_eval_cli.compare_matrix import compare_matrices
from signal_eval_cli.dataset import load_dataset
from signal_eval_cli.errors import InputError
from signal_eval_cli.loading import Document
from signal_eval_cli.persistence import load_result, save_result
from signal_eval_cli.results import RESULT_SCHEMA_VERSION, DatasetResult
from signal_eval_cli.validate import validate_path

ROOT = Path(__file__).resolve().parent.parent


def fresh(code: str, tmp_path: Path) -> str:
    """What ``code`` prints in a new interpreter (nothing imported before it)."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_files_are_recognised_in_the_order_of_the_table() -> None:
    names = [k.name for k in kinds.DOCUMENT_KINDS]
    assert names == [
        "result",
        "proxy cassette",
        "cassette",
        "agents",
        "matrix",
        "scenario",
        "dataset",
    ]
    # a file that more than one detector would take is the earliest's
    both = {"schemaVersion": 1, "kind": "dataset", "cases": [], "variants": []}
    assert next(k.name for k in kinds.DOCUMENT_KINDS if k.detect(both)) == "result"


def test_every_entry_of_the_tables_names_code_that_exists() -> None:
    for kind in kinds.DOCUMENT_KINDS:
        assert callable(kind.checker()), kind.name
    for name in kinds.RESULT_KINDS:
        found = kinds.result_type(name)
        assert found is not None and found.kind == name
        assert callable(found.from_dict) and callable(found.to_dict)
    assert kinds.result_type("nonsense") is None


def test_importing_the_table_imports_none_of_the_kinds(tmp_path: Path) -> None:
    code = (
        "import sys\nimport signal_eval_cli.kinds\n"
        "print(sorted(m for m in sys.modules if m.startswith('signal_eval_cli.')))"
    )
    assert fresh(code, tmp_path).strip() == "['signal_eval_cli.kinds']"


def test_validate_imports_the_checker_of_the_files_kind_only(tmp_path: Path) -> None:
    cassette = ROOT / "datasets/cassettes/code-review.yaml"
    code = (
        "import sys\nfrom signal_eval_cli.validate import validate_path\n"
        f"print(validate_path({str(cassette)!r}))\n"
        "print(*(m for m in ('signal_eval_cli.matrix_run', 'signal_eval_cli.scenarios', "
        "'signal_eval_cli.harness.reactive', 'signal_eval_cli.runner') if m in sys.modules))"
    )
    kind, imported = fresh(code, tmp_path).splitlines()
    assert kind == "('cassette', [])" and imported == ""


def test_every_result_kind_loads_in_a_fresh_process(tmp_path: Path) -> None:
    """No import order to get right: ``load_result`` finds each kind in the table."""
    base, cand = dataset(case("a"), case("b")), dataset(case("a"), case("b", False))
    results = {
        "dataset": base,
        "scenarios": scenario_run(),
        "matrix": matrix_result(),
        "comparison": compare(base, cand),
        "matrixComparison": compare_matrices(matrix_result(), matrix_result()),
    }
    assert set(results) == set(kinds.RESULT_KINDS)
    paths = []
    for name, result in results.items():
        paths.append(str(tmp_path / f"{name}.json"))
        save_result(result, paths[-1])
    code = (
        "from signal_eval_cli.persistence import load_result\n"
        f"for path in {paths!r}:\n"
        "    result = load_result(path)\n"
        "    print(result.kind, type(result).__name__)"
    )
    assert fresh(code, tmp_path).splitlines() == [
        "dataset DatasetResult",
        "scenarios ScenarioRunResult",
        "matrix MatrixResult",
        "comparison Comparison",
        "matrixComparison MatrixComparison",
    ]


@dataclass
class Tally:
    """A result kind from outside the package."""

    name: str
    count: int
    kind: ClassVar[str] = "tally"

    def to_dict(self, signals: Any = "failed") -> dict[str, Any]:
        return {
            "schemaVersion": RESULT_SCHEMA_VERSION,
            "kind": self.kind,
            "name": self.name,
            "count": self.count,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Tally:
        return cls(str(data["name"]), int(data["count"]))


def test_a_plugin_registers_a_result_kind_and_a_file_kind(tmp_path: Path) -> None:
    save_result(Tally("t", 3), tmp_path / "tally.json")
    (tmp_path / "notes.yaml").write_text("notes: [a]\n")
    with pytest.raises(InputError, match=r"unknown result kind 'tally' \(known: comparison, "):
        load_result(tmp_path / "tally.json")
    assert validate_path(tmp_path / "notes.yaml")[0] == "unknown"
    checked: list[str] = []

    def check(doc: Document) -> None:
        checked.append(doc.path)

    result_kinds, document_kinds = dict(kinds.RESULT_KINDS), list(kinds.DOCUMENT_KINDS)
    try:
        kinds.register_result_kind("tally", Tally)
        kinds.register_document_kind(kinds.DocumentKind("notes", lambda d: "notes" in d, check))
        assert load_result(tmp_path / "tally.json") == Tally("t", 3)
        assert validate_path(tmp_path / "notes.yaml") == ("notes", [])
        assert checked == [str(tmp_path / "notes.yaml")]
        assert [k.name for k in kinds.DOCUMENT_KINDS][-2:] == ["notes", "dataset"]
    finally:  # the tables are the package's: leave them as they were
        kinds.RESULT_KINDS.clear()
        kinds.RESULT_KINDS.update(result_kinds)
        kinds.DOCUMENT_KINDS[:] = document_kinds


def test_the_kind_of_a_result_is_its_class_attribute() -> None:
    assert DatasetResult.kind == "dataset" and dataset(case("a")).to_dict()["kind"] == "dataset"
    assert scenario_run().to_dict()["kind"] == "scenarios"
    assert kinds.kind_of(object()) == "object"  # not a result: named by its type


@pytest.mark.parametrize(
    ("path", "kind", "use"),
    [
        ("datasets/matrix-code-review.yaml", "matrix", "run it with `signal-eval matrix`"),
        ("scenarios/python-smoke.yaml", "scenario", "run it with `signal-eval scenario`"),
        ("datasets/agents/code-review.yaml", "agents", "(agents: PATH)"),
        ("datasets/cassettes/code-review.yaml", "cassette", "(cassette: PATH)"),
    ],
)
def test_a_file_of_another_kind_given_as_a_dataset_says_what_it_is(
    path: str, kind: str, use: str
) -> None:
    """``run matrix.yaml`` (or a scenario, a results file…): one line naming the file's kind
    and what to do with it, not every dataset field it lacks (dozens for a results file);
    every kind in the table says what to do with it."""
    with pytest.raises(InputError) as raised:
        load_dataset(ROOT / path)
    [problem] = raised.value.problems
    assert problem.message.startswith(f"not a dataset ({kind} file): ") and use in problem.message
    assert all(k.use for k in kinds.DOCUMENT_KINDS)


def test_a_results_file_given_as_a_dataset_says_what_it_is(tmp_path: Path) -> None:
    save_result(dataset(case("a", True)), tmp_path / "r.json")
    with pytest.raises(InputError, match=r"r\.json:1:1: not a dataset \(result file\): read it"):
        load_dataset(tmp_path / "r.json")


def test_validate_reads_a_trace_as_run_traces_and_import_read_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OTLP or Agents SDK ``.json`` trace, which ``run --traces`` evaluates, was "not a
    recognised file" (exit 2); a LangGraph ``.jsonl`` was "ok" read as signals; an empty
    ``.jsonl``, which ``run --traces`` refuses, was "ok (trace)"."""
    import shutil

    from typer.testing import CliRunner

    from signal_eval_cli.cli import app

    traces = ROOT / "datasets" / "traces"
    shutil.copy(traces / "otel.json", tmp_path / "otel.json")
    shutil.copy(traces / "agents-sdk.json", tmp_path / "sdk.json")
    fixture = ROOT / "tests" / "fixtures" / "traces" / "langgraph_react_tool_error_updates.jsonl"
    shutil.copy(fixture, tmp_path / "gap.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "other.json").write_text('{"a": 1}')
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, ["validate", "otel.json", "sdk.json", "gap.jsonl"])
    assert done.exit_code == 0, done.output
    assert done.stdout.splitlines() == [
        "ok otel.json (trace: otlp)",
        "ok sdk.json (trace: openai-agents)",
        "ok gap.jsonl (trace: langgraph-updates)",
    ]
    assert 'warning: gap.jsonl: astream(stream_mode="updates") holds no input' in done.stderr
    done = CliRunner().invoke(app, ["validate", "empty.jsonl", "other.json"])
    assert done.exit_code == 2
    assert done.stderr.splitlines() == [
        "empty.jsonl: empty trace file",
        "other.json:1:1: not a recognised file (expected one of: result, proxy cassette, "
        "cassette, agents, matrix, scenario, dataset, or a trace)",
    ]
