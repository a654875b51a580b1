"""A journaled run in one library call (``run_configured``): what ``--resume``,
``--retry``, ``--shard`` and Ctrl-C do for ``signal-eval run``, called in process."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from signal_eval_cli import run_journals
from signal_eval_cli.configured_dataset import run_configured
from signal_eval_cli.errors import InputError
from signal_eval_cli.journal import journal_path
from signal_eval_cli.results import CaseResult
from signal_eval_cli.runner import RunOptions

HARNESS = """\
import asyncio
from pathlib import Path

def create(variant=""):
    async def run(input, ctx):
        with open(Path(__file__).with_name("calls.log"), "a") as log:
            log.write(ctx.case_id + "\\n")
        here = Path(__file__)
        if here.with_name(f"hold-{input.get('hold', variant)}").exists():
            await asyncio.Event().wait()  # until the run is cancelled
        if input.get("boom") and not Path(__file__).with_name("fixed").exists():
            raise RuntimeError("boom")
        ctx.emit("harness:end", {"output": ctx.case_id})
    return run
"""


def write_eval(directory: Path, cases: dict[str, str]) -> Path:
    """A dataset of ``cases`` (id → input) whose harness logs each case it runs."""
    (directory / "h.py").write_text(HARNESS)
    body = "".join(
        f"  - id: {case}\n    input: {given}\n"
        "    assertions: [{type: signal.contains, pattern: 'harness:end'}]\n"
        for case, given in cases.items()
    )
    path = directory / "eval.yaml"
    path.write_text("name: journaled\nharness: h.py:create\ncases:\n" + body)
    return path


def calls(directory: Path) -> list[str]:
    log = directory / "calls.log"
    return sorted(log.read_text().split()) if log.exists() else []


def test_a_retried_run_keeps_the_finished_cases_and_runs_the_errored_again(
    tmp_path: Path,
) -> None:
    dataset = write_eval(tmp_path, {"a": "{}", "b": "{boom: true}", "c": "{}"})
    output = tmp_path / "out.json"
    notes: list[str] = []
    first = asyncio.run(run_configured(dataset, output=output, note=notes.append))
    assert [c.error is not None for c in first.cases] == [False, True, False]
    assert journal_path(output).is_file() and calls(tmp_path) == ["a", "b", "c"]
    (tmp_path / "calls.log").unlink()
    (tmp_path / "fixed").touch()
    totals: list[int] = []
    again = asyncio.run(
        run_configured(
            dataset, output=output, retry="errored", note=notes.append, on_start=totals.append
        )
    )
    assert calls(tmp_path) == ["b"] and totals == [1]  # a and c kept from the journal
    assert [c.case_id for c in again.cases] == ["a", "b", "c"] and again.passed
    assert notes[-1].endswith("2 finished kept, 1 to run again")
    (tmp_path / "calls.log").unlink()
    resumed = asyncio.run(run_configured(dataset, output=output, resume=True, note=notes.append))
    assert calls(tmp_path) == [] and [c.case_id for c in resumed.cases] == ["a", "b", "c"]
    with pytest.raises(InputError, match="retry"):
        asyncio.run(run_configured(dataset, output=output, retry="flaky"))


def test_a_sharded_run_journals_only_its_shard(tmp_path: Path) -> None:
    dataset = write_eval(tmp_path, {f"c{i}": "{}" for i in range(6)})
    output = tmp_path / "out.json"
    first = asyncio.run(run_configured(dataset, output=output, shard="1/2"))
    second = asyncio.run(run_configured(dataset, output=tmp_path / "two.json", shard="2/2"))
    ran = [c.case_id for c in first.cases]
    assert ran and sorted(ran + [c.case_id for c in second.cases]) == sorted(calls(tmp_path))
    assert len(calls(tmp_path)) == 6 and not set(ran) & {c.case_id for c in second.cases}
    lines = [json.loads(line) for line in journal_path(output).read_text().splitlines()]
    assert lines[0]["shard"] == [1, 2]
    assert sorted(line["case"] for line in lines[1:]) == sorted(ran)
    with pytest.raises(InputError, match="shard"):
        asyncio.run(run_configured(dataset, shard="3/2"))


def test_a_cancelled_run_returns_what_finished_and_its_journal_holds_it(tmp_path: Path) -> None:
    dataset = write_eval(tmp_path, {"free": "{}", "held": "{hold: held}", "last": "{}"})
    output = tmp_path / "out.json"
    (tmp_path / "hold-held").touch()  # held waits until the run is cancelled

    async def main() -> tuple[object, list[str]]:
        seen: list[str] = []

        def finished(result: CaseResult) -> None:
            seen.append(result.case_id)
            if result.case_id == "free":
                run.cancel()  # as Ctrl-C does in the command

        options = RunOptions(concurrency=2, parallel=True, on_case_complete=finished)
        run = asyncio.ensure_future(run_configured(dataset, None, options, output=output))
        return await run, seen

    result, seen = asyncio.run(main())
    assert seen == ["free"] and result.interrupted  # type: ignore[attr-defined]
    assert [c.case_id for c in result.cases] == ["free"]  # type: ignore[attr-defined]
    (tmp_path / "hold-held").unlink()
    resumed = asyncio.run(run_configured(dataset, output=output, resume=True))
    assert calls(tmp_path).count("free") == 1  # kept: not run again
    assert [c.case_id for c in resumed.cases] == ["free", "held", "last"]


def test_a_matrix_cancelled_after_its_first_variant_keeps_it_and_resumes(
    tmp_path: Path,
) -> None:
    from signal_eval_cli.configured_runs import run_matrix_configured
    from signal_eval_cli.matrix import MatrixOptions, MatrixResult, VariantResult

    write_eval(tmp_path, {"a": "{}", "b": "{}"})
    (tmp_path / "m.yaml").write_text(
        "name: m\ndataset: eval.yaml\nvariants:\n"
        "  - {id: one, name: One, harness: h.py:create}\n"
        "  - {id: two, name: Two, harness: h.py:create, params: {variant: two}}\n"
    )
    output = tmp_path / "m.json"

    async def main() -> MatrixResult:
        def done(variant: VariantResult) -> None:
            run.cancel()  # as Ctrl-C does in the command

        # three slots: two's cases, held, can never keep one's from running (with one slot,
        # a case of two that started first held it until its timeout)
        options = MatrixOptions(concurrency=3, on_variant_complete=done)
        run = asyncio.ensure_future(
            run_matrix_configured(tmp_path / "m.yaml", None, options, output=output)
        )
        return await run

    (tmp_path / "hold-two").touch()  # two's cases wait until the run is cancelled
    stopped = asyncio.run(main())
    assert stopped.interrupted and [v.variant_id for v in stopped.variants] == ["one"]
    journaled = len(journal_path(output).read_text().splitlines()) - 1
    assert journaled == 2
    (tmp_path / "hold-two").unlink()
    totals: list[int] = []
    resumed = asyncio.run(
        run_matrix_configured(
            tmp_path / "m.yaml", output=output, resume=True, on_start=totals.append
        )
    )
    assert totals == [2]  # one's cases, in the journal, are kept: not run again
    assert [v.variant_id for v in resumed.variants] == ["one", "two"] and not resumed.interrupted
    assert [len(v.result.cases) for v in resumed.variants] == [2, 2]


def test_scenarios_sharded_and_resumed_in_one_call(tmp_path: Path) -> None:
    from test_scenarios_cli import greet_scenario, write_json

    from signal_eval_cli.configured_runs import run_scenarios_configured

    (tmp_path / "fx").mkdir()
    (tmp_path / "fx" / "greet.py").write_text('def greet(name):\n    return "hi " + name\n')
    (tmp_path / "scenarios").mkdir()
    files = []
    for name in ("greet", "two", "three"):
        files.append(str(tmp_path / "scenarios" / f"{name}.json"))
        write_json(Path(files[-1]), greet_scenario(id=name))
    output = tmp_path / "s.json"
    first = asyncio.run(run_scenarios_configured(files, root=tmp_path, output=output, shard="2/2"))
    ran = [s.id for s in first.scenarios]
    assert ran and len(ran) < 3 and first.passed
    assert json.loads(journal_path(output).read_text().splitlines()[0])["shard"] == [2, 2]
    totals: list[int] = []
    again = asyncio.run(
        run_scenarios_configured(
            files, root=tmp_path, output=output, shard="2/2", resume=True, on_start=totals.append
        )
    )
    assert totals == [0] and [s.id for s in again.scenarios] == ran


@pytest.mark.parametrize("kind", ["dataset", "matrix", "scenarios"])
def test_a_run_that_raises_closes_its_journal(tmp_path: Path, kind: str) -> None:
    """A callback of the caller's that raised left the journal open (its file and its
    fsync thread) for the life of the process; ``output`` given as text raised
    ``AttributeError: 'str' object has no attribute 'is_char_device'``."""
    from signal_eval_cli.configured_runs import run_matrix_configured, run_scenarios_configured
    from signal_eval_cli.matrix import MatrixOptions

    def boom(*_: object) -> None:
        raise RuntimeError("boom")

    output = str(tmp_path / "out.json")  # text, as a caller may well give it
    write_eval(tmp_path, {"a": "{}"})
    (tmp_path / "m.yaml").write_text(
        "name: m\ndataset: eval.yaml\nvariants: [{id: one, name: One, harness: h.py:create}]\n"
    )
    if kind == "scenarios":
        from test_scenarios_cli import greet_scenario, write_json

        (tmp_path / "fx").mkdir()
        (tmp_path / "fx" / "greet.py").write_text('def greet(name):\n    return "hi " + name\n')
        write_json(tmp_path / "greet.json", greet_scenario(id="greet"))
    runs = {
        "dataset": lambda: run_configured(
            tmp_path / "eval.yaml", options=RunOptions(on_case_complete=boom), output=output
        ),
        "matrix": lambda: run_matrix_configured(
            tmp_path / "m.yaml", options=MatrixOptions(on_variant_case=boom), output=output
        ),
        "scenarios": lambda: run_scenarios_configured(
            [str(tmp_path / "greet.json")], root=tmp_path, on_complete=boom, output=output
        ),
    }
    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(runs[kind]())
    journal = journal_path(Path(output))
    assert journal.exists()
    fds = Path("/proc/self/fd")
    assert journal not in {Path(os.readlink(fd)) for fd in fds.iterdir() if fd.exists()}


def test_a_run_with_no_journal_hashes_no_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing writes or compares the fingerprint of a run with no results file (or one on
    a stream): the dataset's hash, a second or more for a large one, is not made."""
    dataset = write_eval(tmp_path, {"a": "{}"})
    hashed: list[object] = []
    monkeypatch.setattr(run_journals, "dataset_fingerprint", lambda *a: hashed.append(a) or {})
    for output in (None, Path("/dev/null")):
        assert asyncio.run(run_configured(dataset, output=output)).passed
    assert hashed == []
    asyncio.run(run_configured(dataset, output=tmp_path / "out.json"))
    assert len(hashed) == 1
