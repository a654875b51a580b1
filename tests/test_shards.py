"""--shard i/N and `signal-eval merge` (in process, through the Typer app): merged shards
equal the unsharded result minus timings; missing, duplicated, mismatched or unfinished
shards are refused; matrices and scenarios resume and shard too."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from journal_helpers import load, scenario_essence, scenario_matrix_essence
from typer.testing import CliRunner

from signal_eval_cli.cli import app
from signal_eval_cli.journal import journal_path
from signal_eval_cli.sharding import parse_shard, shard_ids

HARNESS = """\
from pathlib import Path

def create(style="plain"):
    async def run(input, ctx):
        with open(Path(__file__).with_name("calls.log"), "a") as log:
            log.write(f"{style}:{ctx.case_id}\\n")
        if input.get("boom"):
            raise RuntimeError("boom")
        ctx.emit("harness:end", {"output": f"{style} {input['n']}", "durationMs": input["n"]})
    return run
"""


def write_eval(directory: Path, n: int = 23) -> Path:
    (directory / "h.py").write_text(HARNESS)
    cases = "".join(
        f"  - id: case-{i}\n    tags: [t{i % 3}]\n"
        f"    input: {{n: {i}, boom: {'true' if i % 9 == 4 else 'false'}}}\n"
        f"    assertions: [{{type: output.contains, text: '{i % 4}'}}]\n"
        for i in range(n)
    )
    path = directory / "eval.yaml"
    path.write_text(f"name: shards\nharness: h.py:create\nmetadata: {{team: x}}\ncases:\n{cases}")
    return path


def invoke(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.output


def calls(directory: Path) -> list[str]:
    log = directory / "calls.log"
    return log.read_text().split() if log.exists() else []


def test_shards_are_balanced_deterministic_and_cover_every_case_once() -> None:
    ids = [f"id-{i}" for i in range(101)]
    for count in range(1, 8):
        parts = [shard_ids(ids, (i, count)) for i in range(1, count + 1)]
        assert sorted(x for p in parts for x in p) == sorted(ids)
        assert max(map(len, parts)) - min(map(len, parts)) <= 1
        assert parts == [shard_ids(list(reversed(ids)), (i, count)) for i in range(1, count + 1)]
    assert shard_ids(ids, (2, 3)) == {i for i in shard_ids(ids, (2, 3))}  # no hash seed
    assert parse_shard("2/5") == (2, 5)
    for bad in ("0/3", "4/3", "1/0", "x", "1-3"):
        with pytest.raises(Exception, match="--shard"):
            parse_shard(bad)


def test_merged_shards_equal_the_unsharded_run_for_n_1_to_5(tmp_path: Path) -> None:
    write_eval(tmp_path)
    whole = tmp_path / "whole.json"
    code, _ = invoke("run", tmp_path / "eval.yaml", "-o", whole, "-q")
    assert code == 1
    expected = load(whole)
    for count in range(1, 6):
        parts = []
        for index in range(1, count + 1):
            part = tmp_path / f"part-{index}-of-{count}.json"
            invoke("run", tmp_path / "eval.yaml", "-o", part, "-q", "--shard", f"{index}/{count}")
            parts.append(part)
        merged = tmp_path / f"merged-{count}.json"
        code, output = invoke("merge", *parts, "-o", merged)
        assert code == 1, output  # the same failures as the whole run
        assert load(merged) == expected, count
        # journals merge too, and mixed with results files
        mixed = [journal_path(parts[0]), *parts[1:]]
        code, output = invoke("merge", *mixed, "-o", tmp_path / "mixed.json")
        assert code == 1, output
        assert load(tmp_path / "mixed.json") == expected


def test_a_part_is_read_once_so_a_pipe_or_a_byte_order_mark_merges(tmp_path: Path) -> None:
    """merge read a part three times (a journal? valid? its data): a pipe
    (``<(curl …)``) was empty the second time ('invalid JSON: Expecting value'), and a
    results file an editor saved with a byte order mark ended in a JSONDecodeError
    traceback at the third read."""
    write_eval(tmp_path, n=6)
    whole, parts = tmp_path / "whole.json", [tmp_path / "p1.json", tmp_path / "p2.json"]
    invoke("run", tmp_path / "eval.yaml", "-o", whole, "-q")
    for index, part in enumerate(parts, 1):
        invoke("run", tmp_path / "eval.yaml", "-o", part, "-q", "--shard", f"{index}/2")
    parts[1].write_bytes(b"\xef\xbb\xbf" + parts[1].read_bytes())
    for first in (parts[0], journal_path(parts[0])):
        read, write = os.pipe()
        os.write(write, first.read_bytes())  # a few KB: within the pipe's buffer
        os.close(write)
        try:
            code, output = invoke("merge", f"/dev/fd/{read}", parts[1], "-o", tmp_path / "m.json")
        finally:
            os.close(read)
        assert code == 1, output  # the whole run's failures, no input error
        assert load(tmp_path / "m.json") == load(whole)


def test_missing_duplicated_mismatched_and_unfinished_shards_are_refused(tmp_path: Path) -> None:
    path = write_eval(tmp_path)
    parts = [tmp_path / f"p{i}.json" for i in (1, 2, 3)]
    for i, part in enumerate(parts, start=1):
        invoke("run", path, "-o", part, "-q", "--shard", f"{i}/3")
    code, output = invoke("merge", parts[0], parts[2], "-o", tmp_path / "m.json")
    assert code == 2 and "shard(s) 2/3 missing" in output
    code, output = invoke("merge", *parts, parts[1], "-o", tmp_path / "m.json")
    assert code == 2 and "shard 2/3 given twice" in output
    whole = tmp_path / "whole.json"
    invoke("run", path, "-o", whole, "-q")
    code, output = invoke("merge", whole, "-o", tmp_path / "m.json")
    assert code == 2 and "not a shard" in output
    other = tmp_path / "other.json"
    invoke("run", path, "-o", other, "-q", "--shard", "2/3", "-p", "style=fancy")
    code, output = invoke("merge", parts[0], other, parts[2], "-o", tmp_path / "m.json")
    assert code == 2 and "from another run" in output
    four = tmp_path / "four.json"
    invoke("run", path, "-o", four, "-q", "--shard", "2/4")
    code, output = invoke("merge", parts[0], four, parts[2], "-o", tmp_path / "m.json")
    assert code == 2 and "is one of 3" in output
    journal = journal_path(parts[1])
    journal.write_text("".join(journal.read_text().splitlines(keepends=True)[:-2]))
    code, output = invoke("merge", parts[0], journal, parts[2], "-o", tmp_path / "m.json")
    assert code == 2 and "incomplete" in output and "--resume" in output
    assert not (tmp_path / "m.json").exists()


MATRIX = """\
name: styles
dataset: eval.yaml
variants:
  - {id: plain, name: Plain, params: {style: plain}}
  - {id: fancy, name: Fancy, params: {style: fancy}}
"""


def matrix_essence(path: Path) -> Any:
    """A matrix result minus timings, and minus its ranking: with equal pass rates and
    costs the variants are ranked by latency, which differs between runs."""
    data = load(path)
    del data["recommendation"], data["comparison"]
    return data


def test_a_matrix_resumes_and_shards_like_a_dataset(tmp_path: Path) -> None:
    write_eval(tmp_path, 9)
    (tmp_path / "m.yaml").write_text(MATRIX)
    whole = tmp_path / "whole.json"
    assert invoke("matrix", tmp_path / "m.yaml", "-o", whole, "-q")[0] == 0
    expected = matrix_essence(whole)
    assert len(calls(tmp_path)) == 18
    journal = journal_path(whole)
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(lines[:8]))  # a crash after 7 of 18 cases
    (tmp_path / "calls.log").unlink()
    code, output = invoke("matrix", tmp_path / "m.yaml", "-o", whole, "-q", "--resume")
    assert code == 0, output
    assert len(calls(tmp_path)) == 11
    assert matrix_essence(whole) == expected
    (tmp_path / "calls.log").unlink()
    assert invoke("matrix", tmp_path / "m.yaml", "-o", whole, "-q", "--retry", "errored")[0] == 0
    assert sorted(calls(tmp_path)) == ["fancy:case-4", "plain:case-4"]
    parts = [tmp_path / f"p{i}.json" for i in (1, 2)]
    for i, part in enumerate(parts, start=1):
        invoke("matrix", tmp_path / "m.yaml", "-o", part, "-q", "--shard", f"{i}/2")
    code, output = invoke("merge", *parts, "-o", tmp_path / "merged.json")
    assert code == 0, output
    assert matrix_essence(tmp_path / "merged.json") == expected


def scenario(sid: str, fail: bool = False) -> dict[str, object]:
    return {
        "id": sid,
        "title": f"scenario {sid}",
        "adapterId": "python-pytest",
        "tags": ["smoke"],
        "goals": [
            {
                "goal": "check",
                "command": "{python}",
                "args": ["-c", f"raise SystemExit({int(fail)})"],
            }
        ],
        "fixture": {"path": "fx"},
        "agentTask": {"instruction": f"WRITE|{sid}.txt|hello {sid}\n"},
        "patternAssertions": [{"type": "file-exists", "path": f"{sid}.txt"}],
    }


def test_scenarios_resume_and_merge_like_a_dataset(tmp_path: Path) -> None:
    (tmp_path / "fx").mkdir()
    (tmp_path / "fx" / "README").write_text("fixture\n")
    (tmp_path / "scenarios").mkdir()
    for i in range(5):
        data = scenario(f"s{i}", fail=i == 2)
        (tmp_path / "scenarios" / f"s{i}.json").write_text(json.dumps(data))
    common = ["--all", "--dir", tmp_path / "scenarios", "--root", tmp_path]
    whole = tmp_path / "whole.json"
    code, output = invoke("scenario", *common, "-o", whole)
    assert code == 1, output
    expected = scenario_essence(whole)
    journal = journal_path(whole)
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text("".join(lines[:3]))
    assert invoke("scenario", *common, "-o", whole, "--resume")[0] == 1
    assert scenario_essence(whole) == expected
    assert (
        json.loads(journal.read_text().splitlines()[1])["result"] == json.loads(lines[1])["result"]
    )
    parts = [tmp_path / f"p{i}.json" for i in (1, 2, 3)]
    for i, part in enumerate(parts, start=1):
        invoke("scenario", *common, "-o", part, "--shard", f"{i}/3")
    code, output = invoke("merge", *parts, "-o", tmp_path / "merged.json")
    assert code == 1, output
    assert scenario_essence(tmp_path / "merged.json") == expected
    (tmp_path / "fx" / "README").write_text("changed\n")
    code, output = invoke("scenario", *common, "-o", whole, "--resume")
    assert code == 2 and "a scenario fixture changed" in output


SCENARIO_AGENT = (
    "import pathlib, sys; sid = pathlib.Path('id').read_text(); "
    "open(sys.argv[2], 'a').write(f'{sys.argv[1]}:{sid}\\n'); "
    "pathlib.Path('answer.txt').write_text(sys.argv[1])"
)


def test_a_matrix_of_agents_over_scenarios_resumes_retries_and_shards(tmp_path: Path) -> None:
    (tmp_path / "scenarios").mkdir()
    for i in range(3):
        (tmp_path / f"fx{i}").mkdir()
        (tmp_path / f"fx{i}" / "id").write_text(f"s{i}")
        check = "import pathlib; raise SystemExit(pathlib.Path('answer.txt').read_text() != '42')"
        data = {
            "id": f"s{i}",
            "adapterId": "python-pytest",
            "goals": [{"goal": "check", "command": "{python}", "args": ["-c", check]}],
            "fixture": {"path": f"../fx{i}"},
            "patternAssertions": [{"type": "file-exists", "path": "answer.txt"}],
        }
        (tmp_path / "scenarios" / f"s{i}.json").write_text(json.dumps(data))
    log = str(tmp_path / "calls.log")
    variants = [
        {
            "id": v,
            "name": v.title(),
            "agent": {"command": ["{python}", "-c", SCENARIO_AGENT, n, log]},
        }
        for v, n in (("wrong", "41"), ("right", "42"))
    ]
    path = tmp_path / "m.yaml"
    path.write_text(
        json.dumps({"name": "agents", "scenarios": ["scenarios/*.json"], "variants": variants})
    )
    whole = tmp_path / "whole.json"
    common = ["matrix", path, "-o", whole, "-q", "--repeat", "2"]
    assert invoke(*common)[0] == 0
    expected = scenario_matrix_essence(whole)
    assert sorted(calls(tmp_path)) == sorted(
        f"{n}:s{i}" for n in ("41", "42") for i in range(3) for _ in (0, 1)
    )
    journal = journal_path(whole)
    lines = journal.read_text().splitlines(keepends=True)
    assert len(lines) == 13  # the header, then every (variant, scenario, run) once
    journal.write_text("".join(lines[:6]))  # a crash after 5 of 12 runs
    (tmp_path / "calls.log").unlink()
    code, output = invoke(*common, "--resume")
    assert code == 0, output
    assert len(calls(tmp_path)) == 7
    assert scenario_matrix_essence(whole) == expected
    (tmp_path / "calls.log").unlink()
    code, output = invoke(*common, "--retry", "failed")
    assert code == 0, output
    assert sorted(calls(tmp_path)) == sorted(f"41:s{i}" for i in range(3) for _ in (0, 1))
    assert scenario_matrix_essence(whole) == expected
    variants[1]["agent"]["env"] = {"MODEL": "bigger"}  # type: ignore[index]
    path.write_text(
        json.dumps({"name": "agents", "scenarios": ["scenarios/*.json"], "variants": variants})
    )
    code, output = invoke(*common, "--resume")
    assert code == 2 and "the matrix (variants) changed" in output
    whole_now = tmp_path / "whole-now.json"  # what an unsharded run of the changed matrix gives
    assert invoke("matrix", path, "-o", whole_now, "-q", "--repeat", "2")[0] == 0
    for n in (2, 3):  # results files, then journals: each merges into the unsharded result
        parts = [tmp_path / f"p{i}-of-{n}.json" for i in range(1, n + 1)]
        for i, part in enumerate(parts, start=1):
            before = invoke(
                "matrix", path, "-o", part, "-q", "--repeat", "2", "--shard", f"{i}/{n}"
            )
            assert before[0] == 0, before[1]
        if n == 3:
            parts = [journal_path(p) for p in parts]
        merged = tmp_path / f"merged-{n}.json"
        code, output = invoke("merge", *parts, "-o", merged)
        assert code == 0, output
        assert scenario_matrix_essence(merged) == scenario_matrix_essence(whole_now)
    code, output = invoke("merge", *parts[:2], "-o", tmp_path / "short.json")
    assert code == 2 and "shard(s) 3/3 missing" in output


HARNESS_AGENT = """\
from pathlib import Path

def create():
    async def run(input, ctx):
        (Path(ctx.workspace) / "answer.txt").write_text("42")
    return run
"""


def test_a_changed_harness_agent_refuses_to_resume(tmp_path: Path) -> None:
    (tmp_path / "fx").mkdir()
    (tmp_path / "fx" / "README").write_text("fixture\n")
    (tmp_path / "scenarios").mkdir()
    agent = tmp_path / "scenarios" / "agent.py"
    agent.write_text(HARNESS_AGENT)
    data = {
        "id": "s0",
        "adapterId": "python-pytest",
        "goals": [{"goal": "check", "command": "{python}", "args": ["-c", "pass"]}],
        "fixture": {"path": "../fx"},
        "agent": {"harness": "agent.py:create"},
        "patternAssertions": [{"type": "file-exists", "path": "answer.txt"}],
    }
    (tmp_path / "scenarios" / "s0.json").write_text(json.dumps(data))
    matrix = {
        "name": "m",
        "scenarios": ["scenarios/*.json"],
        "variants": [{"id": "a", "name": "A"}],
    }
    (tmp_path / "m.yaml").write_text(json.dumps(matrix))
    runs = {
        "scenario": ["scenario", tmp_path / "scenarios" / "s0.json", "-o", tmp_path / "s.json"],
        "matrix": ["matrix", tmp_path / "m.yaml", "-o", tmp_path / "m.json", "-q"],
    }
    for argv in runs.values():
        code, output = invoke(*argv)
        assert code == 0, output
    agent.write_text(HARNESS_AGENT + "# edited\n")
    for argv in runs.values():
        code, output = invoke(*argv, "--resume")
        assert code == 2 and "the harness changed" in output, output
