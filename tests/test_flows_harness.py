"""Issue 10 items 3-4: user harnesses as the README writes them, run by the real CLI."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
import yaml
from flows_helpers import ROOT, cli

README = (ROOT / "README.md").read_text(encoding="utf-8")

BLOCKING = """\
import time


def create_harness():
    async def run(input, ctx):
        ctx.emit("text:complete", {"content": "ok"})
        if input["n"] == 2:
            time.sleep(3600)  # a sync call inside async code: the loop stops turning

    return run
"""


def _readme_block(lang: str, starts_with: str) -> str:
    blocks = re.findall(rf"```{lang}\n(.*?)```", README, re.S)
    return next(b for b in blocks if b.startswith(starts_with))


@pytest.mark.parametrize("place", ["project-root", "outside"])
def test_an_async_harness_blocking_the_loop_ends_the_run_and_names_the_line(
    tmp_path: Path, place: str
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "agents.py").write_text(BLOCKING)
    cases = [
        {
            "id": f"c{n}",
            "input": {"n": n},
            "assertions": [{"type": "output.contains", "text": "ok"}],
        }
        for n in (1, 2, 3)
    ]
    dataset = {"name": "stuck", "harness": "agents.py:create_harness", "defaultTimeout": 1000}
    (project / "evals.yaml").write_text(yaml.safe_dump({**dataset, "cases": cases}))
    cwd = project if place == "project-root" else tmp_path
    path = "evals.yaml" if place == "project-root" else str(project / "evals.yaml")
    started = time.monotonic()
    done = cli(
        "run",
        path,
        "--concurrency",
        "1",
        "-o",
        "r.json",
        "--markdown",
        "r.md",
        cwd=cwd,
        timeout=120,
    )
    assert time.monotonic() - started < 60  # not 3600 s: the watchdog ended it
    assert done.returncode == 1, done.stderr
    assert "event loop was blocked at agents.py:8 in run" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    data = json.loads((cwd / "r.json").read_text())
    outcome = {c["caseId"]: (c["passed"], c.get("error") or "") for c in data["cases"]}
    assert outcome["c1"] == (True, "")  # the finished case's result is kept
    assert not outcome["c2"][0] and "agents.py:8" in outcome["c2"][1]
    assert not outcome["c3"][0]
    assert "c1" in done.stdout and "c2" in done.stdout  # the table is printed
    assert data["durationMs"] >= 1000  # the run's wall time, not 0: it waited past the limit
    row = next(line for line in done.stdout.splitlines() if line.startswith("│ c3"))
    assert "—" in row and "0 ms" not in row  # nothing was measured: not "0 ms"
    # c2 was stuck: it ran (at least the limit) until the watchdog ended the run
    c2 = next(c for c in data["cases"] if c["caseId"] == "c2")
    assert c2["metrics"]["latencyMs"] >= 1000 and c2["durationMs"] >= 1000, c2
    assert data["aggregateMetrics"]["maxLatencyMs"] >= 1000  # c3's unmeasured 0 is left out
    markdown = (cwd / "r.md").read_text()
    assert "| `c3` | failed | - | — |" in markdown, markdown


@pytest.mark.parametrize("place", ["project-root", "outside"])
def test_the_readme_harness_example_passes_the_readme_dataset_example(
    tmp_path: Path, place: str
) -> None:
    project = tmp_path / "scratch"
    (project / "mypkg").mkdir(parents=True)
    (project / "mypkg" / "__init__.py").write_text("")
    (project / "mypkg" / "agents.py").write_text(_readme_block("python", "# mypkg/agents.py"))
    dataset = yaml.safe_load(_readme_block("yaml", "name: Code Review Agent Eval"))
    dataset["harness"] = "mypkg.agents:create_harness"
    dataset["cases"][0]["assertions"].append({"type": "metric.latency.max", "value": 5000})
    (project / "evals").mkdir()
    (project / "evals" / "review.yaml").write_text(yaml.safe_dump(dataset))
    cwd = project if place == "project-root" else tmp_path
    path = "evals/review.yaml" if place == "project-root" else str(project / "evals/review.yaml")
    done = cli("run", path, "-o", str(tmp_path / "r.json"), cwd=cwd)  # no PYTHONPATH
    assert done.returncode == 0, done.stdout + done.stderr
    case = json.loads((tmp_path / "r.json").read_text())["cases"][0]
    assert case["passed"], case
    assert case["metrics"]["latencyMs"] > 0  # measured by the runner's harness:end


def test_harness_start_and_end_are_added_only_when_the_harness_emits_neither(
    tmp_path: Path,
) -> None:
    (tmp_path / "h.py").write_text(
        "def bare():\n"
        "    return lambda input, ctx: [{'name': 'x'}]\n"
        "def own():\n"
        "    def run(input, ctx):\n"
        "        s = ctx.emit('harness:start', {'input': input})\n"
        "        ctx.emit('harness:end', {'durationMs': 7}, parent=s)\n"
        "    return run\n"
    )
    names = {}
    for factory in ("bare", "own"):
        data = {
            "name": factory,
            "harness": f"h.py:{factory}",
            "cases": [{"id": "c", "input": 1, "assertions": []}],
        }
        (tmp_path / f"{factory}.yaml").write_text(yaml.safe_dump(data))
        out = tmp_path / f"{factory}.json"
        done = cli("run", f"{factory}.yaml", "-q", "-o", str(out), "--signals", "all", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        case = json.loads(out.read_text())["cases"][0]
        names[factory] = ([s["name"] for s in case["signals"]], case["signals"])
    assert names["bare"][0] == ["harness:start", "x", "harness:end"]
    start, _, end = names["bare"][1]
    assert start["payload"] == {"input": 1} and end["source"]["parent"] == start["id"]
    assert names["own"][0] == ["harness:start", "harness:end"]  # left exactly as emitted
    assert names["own"][1][1]["payload"] == {"durationMs": 7}


CUT_SHORT = """\
import asyncio


def create_harness():
    async def run(input, ctx):
        ctx.emit("harness:start", {"input": input})
        ctx.emit("text:delta", {"content": "thinking"})
        await asyncio.sleep(0.3 if input == "raises" else 60)
        if input == "raises":
            raise RuntimeError("gave up")

    return run
"""


def _ms(text: str) -> float:
    return float(text.replace(",", "").removesuffix(" ms"))


@pytest.mark.parametrize("place", ["project-root", "outside"])
def test_a_case_cut_short_has_the_time_it_ran_as_its_latency(tmp_path: Path, place: str) -> None:
    """A case that emitted ``harness:start`` (and more) at once and then timed out, or
    raised, ran for its wall time: not the span of its signals (0 ms)."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "agents.py").write_text(CUT_SHORT)
    cases = [
        {"id": name, "input": name, "assertions": [{"type": "output.contains", "text": "x"}]}
        for name in ("times-out", "raises")
    ]
    dataset = {"name": "cut", "harness": "agents.py:create_harness", "defaultTimeout": 500}
    (project / "evals.yaml").write_text(yaml.safe_dump({**dataset, "cases": cases}))
    cwd = project if place == "project-root" else tmp_path
    path = "evals.yaml" if place == "project-root" else str(project / "evals.yaml")
    done = cli("run", path, "-o", "r.json", "--markdown", "r.md", cwd=cwd)
    assert done.returncode == 1, done.stderr
    cases_out = {c["caseId"]: c for c in json.loads((cwd / "r.json").read_text())["cases"]}
    markdown = (cwd / "r.md").read_text()
    for name, at_least in (("times-out", 500), ("raises", 300)):
        case = cases_out[name]
        assert case["error"], case
        assert case["metrics"]["latencyMs"] >= at_least, case["metrics"]
        row = next(line for line in done.stdout.splitlines() if line.startswith(f"│ {name}"))
        cells = [cell.strip() for cell in row.split("│")]
        assert cells[3] == "-" and _ms(cells[4]) >= at_least, row  # no check ran: "-", not 0/0
        md = next(line for line in markdown.splitlines() if line.startswith(f"| `{name}`"))
        md_cells = [cell.strip() for cell in md.split("|")]
        assert md_cells[3] == "-" and _ms(md_cells[4]) >= at_least, md


LEAVES_A_CHILD = """\
import subprocess
from pathlib import Path


def create_harness():
    def run(input, ctx):
        # a child that outlives the case, its stdout (and the run's pipe) inherited; and
        # an orphan (its parent, a shell, gone), as a daemon is
        if input["n"] == 1:
            child = subprocess.Popen(["sleep", "60"])
            Path("child1.pid").write_text(str(child.pid))
        else:
            subprocess.run(["sh", "-c", "sleep 60 & echo $! > child2.pid"], check=True)
        ctx.emit("text:complete", {"content": "ok"})

    return run
"""


def test_a_process_the_harness_leaves_running_is_ended_with_the_run(tmp_path: Path) -> None:
    """``signal-eval run ... | cat`` ends when the run does: a process the harness started
    and left running, holding the pipe open, is killed as the command ends."""
    (tmp_path / "agents.py").write_text(LEAVES_A_CHILD)
    cases = [{"id": f"c{n}", "input": {"n": n}, "assertions": []} for n in (1, 2)]
    dataset = {"name": "children", "harness": "agents.py:create_harness"}
    (tmp_path / "evals.yaml").write_text(yaml.safe_dump({**dataset, "cases": cases}))
    started = time.monotonic()
    done = cli("run", "evals.yaml", "-q", cwd=tmp_path, timeout=50)  # reads stdout to its end
    assert time.monotonic() - started < 40, "the run's stdout stayed open"
    assert done.returncode == 0, done.stderr
    for n in (1, 2):
        pid = int((tmp_path / f"child{n}.pid").read_text())
        assert not Path(f"/proc/{pid}").exists() or _state(pid) in "ZX", f"child {n} runs on"


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "X"
