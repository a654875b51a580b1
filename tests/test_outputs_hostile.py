"""Output problems are found before the run, and a killed write leaves nothing (finding 9)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.dom.minidom
from pathlib import Path

import pytest
from typer.testing import CliRunner

from signal_eval_cli.cli import app
from signal_eval_cli.files import atomic_write_text

CLI = Path(sys.executable).parent / "signal-eval"
ROOT = Path(__file__).resolve().parent.parent

SLOW = """\
import time
from pathlib import Path

def create():
    def run(input, ctx):
        Path(__file__).with_name("ran").write_text("the case ran")
        ctx.emit("harness:end")
    return run
"""


def dataset(tmp_path: Path) -> Path:
    (tmp_path / "h.py").write_text(SLOW)
    path = tmp_path / "d.yaml"
    path.write_text(
        "name: outs\nharness: h.py:create\ncases:\n"
        "  - id: a\n    input: x\n    assertions: [{type: signal.contains, pattern: harness:end}]\n"
    )
    return path


@pytest.mark.parametrize(
    "output",
    [
        "x" * 300 + ".json",  # ENAMETOOLONG after the run, before
        "d.yaml/r.json",  # under a file
    ],
    ids=["name-too-long", "under-a-file"],
)
def test_an_unwritable_output_is_refused_before_any_case_runs(tmp_path: Path, output: str) -> None:
    dataset(tmp_path)
    done = subprocess.run(
        [CLI, "run", "d.yaml", "-q", "-o", output], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 2, done.stderr
    assert "cannot write here" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "ran").exists()


# Every option that names a file to write, in every command that has it.
FILE_OPTIONS = [
    *(["run", "d.yaml", "-q", option] for option in ("-o", "--markdown", "--junit", "--html")),
    *(["matrix", "m.yaml", "-q", option] for option in ("-o", "--markdown", "--junit", "--html")),
    *(["scenario", "--all", option] for option in ("-o", "--markdown", "--junit", "--html")),
    *(["compare", "a.json", "b.json", option] for option in ("-o", "--markdown", "--html")),
    *(["merge", "a.json", "--junit", "j.xml", option] for option in ("-o", "--markdown")),
    ["merge", "a.json", "-o", "m.json", "--junit"],
    ["import", "t.json", "-o"],
    *(["report", "r.json", option] for option in ("--markdown", "--html")),
]


@pytest.mark.parametrize("argv", FILE_OPTIONS, ids=lambda argv: f"{argv[0]} {argv[-1]}")
def test_a_file_option_ending_in_a_slash_is_refused_as_a_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    """``-o out/new/`` names a directory: refused before anything runs, not written as a
    file called ``new`` (a path would drop the slash)."""
    dataset(tmp_path)
    (tmp_path / "m.yaml").write_text("name: m\ndataset: d.yaml\nvariants:\n  - {id: a, name: A}\n")
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, [*argv, "out/new/"])
    assert done.exit_code == 2, done.output
    assert "out/new/: is a directory: give a file path in it" in done.output
    assert not (tmp_path / "out").exists() and not (tmp_path / "ran").exists()


@pytest.mark.parametrize(
    "argv",
    [["run", "d.yaml", "-q"], ["matrix", "m.yaml", "-q"], ["scenario", "--all"]],
    ids=lambda argv: argv[0],
)
def test_a_report_over_the_run_s_journal_is_refused_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    """``-o r.json --junit r.json.journal.jsonl``: the report replaced the journal at the
    end (``--resume`` then refused it: "not a signal-eval journal"); now exit 2 at once."""
    dataset(tmp_path)
    (tmp_path / "m.yaml").write_text("name: m\ndataset: d.yaml\nvariants:\n  - {id: a, name: A}\n")
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, [*argv, "-o", "r.json", "--junit", "r.json.journal.jsonl"])
    assert done.exit_code == 2, done.output
    assert done.stderr.strip() == (
        "r.json.journal.jsonl: is the journal of the run writing r.json: writing a report "
        "there would replace it"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.yaml", "h.py", "m.yaml"]


@pytest.mark.skipif(not Path("/sys").exists(), reason="needs a read-only /sys")
def test_a_read_only_directory_is_refused_before_the_run(tmp_path: Path) -> None:
    if os.access("/sys", os.W_OK) and os.geteuid() != 0:
        pytest.skip("/sys is writable here")
    dataset(tmp_path)
    done = subprocess.run(
        [CLI, "run", "d.yaml", "-q", "-o", "/sys/r.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    if done.returncode != 2:
        pytest.skip("/sys is writable here")
    assert "cannot write here" in done.stderr
    assert not (tmp_path / "ran").exists()


def test_a_temp_file_left_by_a_killed_writer_is_removed_by_the_next_write(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    stale = tmp_path / f".r.json.{dead.stdout.strip()}.abc123.tmp"
    stale.write_text("half a result")
    live = tmp_path / f".r.json.{os.getpid()}.def456.tmp"  # a writer still running
    live.write_text("being written")
    atomic_write_text(tmp_path / "r.json", "{}\n")
    assert not stale.exists() and live.exists()
    assert (tmp_path / "r.json").read_text() == "{}\n"


def test_the_library_refuses_every_output_that_cannot_become_a_file_at_once(
    tmp_path: Path,
) -> None:
    """``files.check_outputs`` (what every command calls before it runs): each bad path a
    problem of one InputError; a writable path, a new directory and a device pass."""
    from signal_eval_cli.errors import InputError
    from signal_eval_cli.files import MAX_OUTPUT_NAME, check_outputs

    (tmp_path / "plain").write_text("x")
    check_outputs(tmp_path / "new" / "deeper" / "out.json", Path("/dev/null"), Path("/dev/null"))
    with pytest.raises(InputError) as caught:
        check_outputs(
            tmp_path,
            tmp_path / "plain" / "out.json",
            tmp_path / ("n" * (MAX_OUTPUT_NAME + 1)),
            tmp_path / "r.json",
            tmp_path / "new" / ".." / "r.json",  # -o r.json --html r.json: the report replaced it
        )
    messages = [p.message for p in caught.value.problems]
    assert messages == [
        "is a directory: give a file path",
        f"cannot write here: {tmp_path / 'plain'} is a file",
        f"cannot write here: the file name is longer than {MAX_OUTPUT_NAME} bytes",
        "is named for two outputs: one would replace the other",
    ]


def test_a_lone_surrogate_in_a_harness_output_is_written_escaped_and_reads_back(
    tmp_path: Path,
) -> None:
    """A model's stream cut inside an emoji's surrogate pair decodes (``json.loads('"\\ud83d"')``)
    to a lone surrogate, which UTF-8 cannot encode: the journal's write raised and the run
    ended in a traceback with nothing written. It is written as its JSON escape."""
    from signal_eval_cli.persistence import load_result

    text = "cut \ud83d here \udc00 and 😀"
    (tmp_path / "h.py").write_text(
        "def create():\n"
        "    def run(input, ctx):\n"
        f"        ctx.emit('text:complete', {{'content': {text!r}}})\n"
        "    return run\n"
    )
    (tmp_path / "d.yaml").write_text(
        "name: d\nharness: h.py:create\ncases:\n  - id: a\n    input: x\n"
        "    assertions: [{type: output.contains, text: never}]\n"
    )
    reports = ["-o", "r.json", "--html", "r.html", "--markdown", "r.md", "--junit", "r.xml"]
    done = CliRunner().invoke(
        app,
        [
            "run",
            str(tmp_path / "d.yaml"),
            "-q",
            *[str(tmp_path / r) if r[0] != "-" else r for r in reports],
        ],
    )
    assert done.exit_code == 1, done.output
    (case,) = load_result(tmp_path / "r.json").cases
    assert case.signals and any(s.payload.get("content") == text for s in case.signals)
    for name in ("r.html", "r.md", "r.json.journal.jsonl"):
        assert "\\ud83d" in (tmp_path / name).read_text(encoding="utf-8"), name
    junit = xml.dom.minidom.parse(str(tmp_path / "r.xml")).toxml()  # XML holds no surrogate
    assert "cut \ufffd here" in junit


def test_a_nan_token_count_is_written_as_null_and_reads_back(tmp_path: Path) -> None:
    """A harness's ``provider:end`` with ``outputTokens: NaN`` made a results file that
    compare, report and merge refused as malformed (null read back as a count)."""
    import math

    from signal_eval_cli.persistence import load_result, save_result
    from signal_eval_cli.results import CaseMetrics, CaseResult, DatasetResult

    metrics = CaseMetrics(1.0, 3, math.nan, math.nan, 0.0, 0)
    save_result(DatasetResult("d", [CaseResult("a", True, metrics=metrics)]), tmp_path / "r.json")
    (case,) = load_result(tmp_path / "r.json").cases
    assert case.metrics.input_tokens == 3 and math.isnan(case.metrics.output_tokens)


def test_comparing_results_whose_latency_and_cost_are_not_numbers_prints_a_dash(
    tmp_path: Path,
) -> None:
    """A harness's ``harness:end {durationMs: -inf}`` and ``cost: inf`` are written as
    null (NaN read back): compare's summary line raised on ``round(nan)``."""
    import math

    from signal_eval_cli.persistence import save_result
    from signal_eval_cli.results import CaseMetrics, CaseResult, DatasetResult

    metrics = CaseMetrics(-math.inf, 1, 1, 2, math.inf, 0)
    for side in ("a.json", "b.json"):
        save_result(DatasetResult("d", [CaseResult("c", True, metrics=metrics)]), tmp_path / side)
    done = CliRunner().invoke(app, ["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert done.exit_code == 0, done.output
    assert "avg latency — · cost —" in " ".join(done.output.split())


def test_dash_writes_the_file_to_stdout_alone_and_the_table_to_stderr(tmp_path: Path) -> None:
    """``-o -`` is the standard output, as ``/dev/stdout`` is: the results JSON alone (for
    ``| jq``), what is printed for people on stderr, and what the harness prints (its
    print(), a process it starts), which went into the JSON and broke it; no file named
    ``-``, no journal."""
    dataset(tmp_path)
    chatty = "import os\n" + SLOW.replace(
        "        ctx.emit(",
        "        print('from print')\n        os.system('echo from a child')\n        ctx.emit(",
    )
    (tmp_path / "h.py").write_text(chatty)
    done = subprocess.run(
        [CLI, "run", "d.yaml", "-o", "-"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["passRate"] == 1.0
    assert "1 passed, 0 failed" in done.stderr and "results written to" in done.stderr
    assert "from print" in done.stderr and "from a child" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.yaml", "h.py", "ran"]


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "d.yaml", "-q", "-o", "-", "--junit", "-"],
        ["run", "d.yaml", "-q", "--markdown", "/dev/stdout", "--html", "-"],
        ["compare", "a.json", "b.json", "--html", "-", "-o", "/proc/self/fd/1"],
    ],
    ids=["run", "run-dev-stdout", "compare"],
)
def test_two_files_to_stdout_are_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    dataset(tmp_path)
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, argv)
    assert done.exit_code == 2, done.output
    assert "only one of them can write to stdout (-)" in done.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.yaml", "h.py"]


def test_import_writes_one_trace_to_stdout_and_refuses_dash_for_a_folder_or_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    trace = ROOT / "datasets" / "traces" / "otel.json"
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(app, ["import", str(trace), "-o", "-"])
    assert done.exit_code == 0, done.output
    lines = capfd.readouterr().out.splitlines()
    assert json.loads(lines[0])["name"] == "harness:start" and len(lines) == 26
    for option in ("--out-dir", "--case-into"):
        done = CliRunner().invoke(app, ["import", str(trace), option, "-"])
        assert done.exit_code == 2, done.output
        assert "- (stdout) holds no folder or dataset: give a path" in done.output
    assert list(tmp_path.iterdir()) == []


def test_a_reader_that_goes_away_loses_no_report(tmp_path: Path) -> None:
    """``signal-eval run ... | head -1``: the table meets a closed pipe; the run still
    writes its results and reports and exits as the run calls for (rich's own handling
    ended the process with exit 1 before they were written)."""
    dataset(tmp_path)
    proc = subprocess.Popen(
        [CLI, "run", "d.yaml", "-q", "-o", "r.json", "--junit", "j.xml"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before the table is printed
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr.decode()
    assert json.loads((tmp_path / "r.json").read_text())["passRate"] == 1.0
    assert (tmp_path / "j.xml").is_file() and b"Traceback" not in stderr


REVIEW = ["code-review.yaml", "agents/code-review.yaml", "cassettes/code-review.yaml"]
"""The code-review example: a dataset, its agents file (a harness param), its cassette."""


@pytest.mark.parametrize(
    ("argv", "written"),
    [
        (["run", "d.yaml", "-q", "-o", "h.py"], "h.py"),  # the harness's own file
        (["run", "{cr}", "-q", "--junit", "{agents}"], "{agents}"),  # a harness param's file
        (["run", "{cr}", "-q", "--html", "{cassette}"], "{cassette}"),  # its recording
        (["run", "d.yaml", "-q", "--harness", "h2.py:create", "-o", "h2.py"], "h2.py"),
        (["matrix", "m.yaml", "-q", "-o", "h2.py"], "h2.py"),  # a variant's harness
        (["matrix", "m.yaml", "-q", "--markdown", "{agents}"], "{agents}"),  # a variant's param
        (["run", "d.yaml", "-q", "--traces", "tr", "-o", "tr/a.jsonl"], "tr/a.jsonl"),
    ],
    ids=[
        "harness",
        "param",
        "cassette",
        "cli-harness",
        "variant-harness",
        "variant-param",
        "trace",
    ],
)
def test_no_report_is_written_over_a_file_the_run_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], written: str
) -> None:
    """``-o h.py`` replaced the harness's source with the results JSON (``--junit`` the
    agents file, ``--html`` a cassette): every file the run reads is an input, refused as
    an output before anything runs, as the dataset itself was."""
    dataset(tmp_path)
    (tmp_path / "h2.py").write_text(SLOW)
    for name in REVIEW:  # copies: a failure must not write over the repository's
        (tmp_path / "cr" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "cr" / name).write_bytes((ROOT / "datasets" / name).read_bytes())
    cr, agents, cassette = (tmp_path / "cr" / name for name in REVIEW)
    (tmp_path / "tr").mkdir()
    (tmp_path / "tr" / "a.jsonl").write_text('{"name": "harness:end"}\n')
    names = {"cr": str(cr), "agents": str(agents), "cassette": str(cassette)}
    (tmp_path / "m.yaml").write_text(
        f"name: m\ndataset: {cr}\nvariants:\n  - {{id: a, name: A, harness: h2.py:create}}\n"
        f"  - {{id: b, name: B, params: {{agents: {agents}}}}}\n"
    )
    monkeypatch.chdir(tmp_path)
    target = Path(written.format(**names))
    before = target.read_bytes()
    done = CliRunner().invoke(app, [a.format(**names) for a in argv])
    assert done.exit_code == 2, done.output
    assert "is an input of this command" in done.output
    assert target.read_bytes() == before and not (tmp_path / "ran").exists()


def test_no_report_is_written_into_a_scenario_s_fixture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``scenario x.yaml -o fixtures/x/greeting.py`` replaced a fixture's source, and a
    new file there (``--junit fixtures/x/j.xml``) is in every later copy of the fixture:
    refused, exit 2, before anything runs."""
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "s.yaml").write_bytes(
        (ROOT / "scenarios" / "python-smoke.yaml").read_bytes()
    )
    fixture = tmp_path / "fixtures" / "python-smoke"
    fixture.mkdir(parents=True)
    source = (ROOT / "fixtures" / "python-smoke" / "greeting.py").read_bytes()
    (fixture / "greeting.py").write_bytes(source)
    monkeypatch.chdir(tmp_path)
    argv = ["scenario", "scenarios/s.yaml", "-q", "-o", "fixtures/python-smoke/greeting.py"]
    done = CliRunner().invoke(app, [*argv, "--junit", "fixtures/python-smoke/j.xml"])
    assert done.exit_code == 2, done.output
    assert done.output.count("which a run never writes to") == 2
    assert sorted(p.name for p in fixture.iterdir()) == ["greeting.py"]
    assert (fixture / "greeting.py").read_bytes() == source
