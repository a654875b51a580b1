"""Load and validate a 100,000-case dataset: ``signal-eval validate`` and the load in ``run``.

The dataset is made of the example datasets' cases (``datasets/*.yaml``: inputs with code,
tags, several assertions each: trajectories with payload patterns, snapshots, regexes,
tool calls, ``any``/``all``), cycled with fresh ids, written as YAML block style the way
``yaml.safe_dump`` writes a case.

Timed, each as a child process (wall, CPU and peak RSS from ``wait4``):
- ``signal-eval validate DATASET``;
- ``signal-eval run DATASET --case case-0 --traces DIR`` (one case evaluated), with the
  time spent in ``load_datasets`` (loading and checking) reported by the child itself;
- ``signal-eval validate`` of the same cases written as JSON by ``json.dumps`` (printed
  beside, not the figure: a script that generates 100,000 cases may write either);
- the floor, in the same run: a child that only iterates libyaml's events over the file
  (``yaml.parse`` with the C parser), what any PyYAML-based reader pays.
Last line: ``load_100k_s: <validate wall s>`` (target ≤ 5 s and ≤ 500 MB).
``python bench/load.py 10000`` times a 10,000-case dataset (an older build, for comparison).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CASES = 100_000
CLI = [sys.executable, "-m", "signal_eval_cli.cli"]

FLOOR = """
import sys, yaml
for _ in yaml.parse(open(sys.argv[1], encoding="utf-8").read(), Loader=yaml.CSafeLoader):
    pass
"""

TIMED_RUN = """
import sys, time
import signal_eval_cli.cli.run as command
from signal_eval_cli.cli import main
load = command.load_datasets
def timed(*args, **kwargs):
    started = time.perf_counter()
    try:
        return load(*args, **kwargs)
    finally:
        print(f"load_in_run_s {time.perf_counter() - started:.2f}", file=sys.stderr)
command.load_datasets = timed  # what `run` calls to load and check every dataset it names
sys.argv = ["signal-eval", *sys.argv[1:]]
main()
"""


def example_cases() -> list[str]:
    """Each example case as YAML text, its id a placeholder."""
    texts = []
    for path in sorted((ROOT / "datasets").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for case in data.get("cases", []) if isinstance(data, dict) else []:
            dumped = yaml.safe_dump([{**case, "id": "ID"}], sort_keys=False, width=120)
            texts.append("".join(f"  {line}\n" for line in dumped.splitlines()))
    return texts


# The example's reactive harness (its agents and cassette), as a user's dataset names it.
AGENTS, CASSETTE = (ROOT / "datasets" / d / "code-review.yaml" for d in ("agents", "cassettes"))


def write_dataset(path: Path, cases: int) -> None:
    texts = example_cases()
    with path.open("w", encoding="utf-8") as out:
        out.write("name: load-bench\nharness:\n  factory: reactive\n")
        out.write(f"  params: {{agents: '{AGENTS}', cassette: '{CASSETTE}'}}\ncases:\n")
        for i in range(cases):
            out.write(texts[i % len(texts)].replace("- id: ID\n", f"- id: case-{i}\n", 1))


def write_json_dataset(path: Path, cases: int) -> None:
    """The same dataset as JSON, as a script writes one (``json.dumps``, indented)."""
    examples = [yaml.safe_load(text)[0] for text in example_cases()]
    dataset = {
        "name": "load-bench",
        "harness": {
            "factory": "reactive",
            "params": {"agents": str(AGENTS), "cassette": str(CASSETTE)},
        },
        "cases": [{**examples[i % len(examples)], "id": f"case-{i}"} for i in range(cases)],
    }
    path.write_text(json.dumps(dataset, indent=2), encoding="utf-8")


def in_fresh_process(function: Callable[..., None], *args: Any) -> None:
    """``function(*args)`` in a fresh interpreter, so that this one stays small: a child's
    peak RSS (``wait4``) counts its parent's pages at the fork, and this one, grown by
    the JSON dataset it built, made every child after it seem to peak at 561 MB (a child
    that does nothing: 579 MB after a parent that built 2 million dicts, 11 MB else)."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        pool.submit(function, *args).result()


def measure(argv: list[str], cwd: Path) -> dict[str, Any]:
    """Wall, CPU and peak RSS of one child process, and what it wrote to stderr."""
    started = time.perf_counter()
    child = subprocess.Popen(
        argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert child.stderr is not None
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return {
        "wall": time.perf_counter() - started,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_mb": usage.ru_maxrss / 1024,
        "code": child.returncode,
        "stderr": stderr,
    }


def main() -> int:
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else CASES  # fewer, to time an old build
    work = Path(tempfile.mkdtemp(prefix="signal-eval-load-"))
    try:
        dataset = work / "dataset.yaml"
        write_dataset(dataset, cases)
        traces = work / "traces"
        traces.mkdir()
        shutil.copy(ROOT / "datasets/traces/langgraph.jsonl", traces / "case-0.jsonl")
        size = dataset.stat().st_size / 1e6
        print(f"dataset: {cases:,} cases, {size:.1f} MB; load {os.getloadavg()[0]:.2f}")
        floor = measure([sys.executable, "-c", FLOOR, str(dataset)], work)
        validate = measure([*CLI, "validate", str(dataset)], work)
        as_json = work / "dataset.json"
        in_fresh_process(write_json_dataset, as_json, cases)
        validate_json = measure([*CLI, "validate", str(as_json)], work)
        run = measure(
            [sys.executable, "-c", TIMED_RUN, "run", str(dataset), "--case", "case-0",
             "--traces", str(traces), "-q", "--table", "none"],
            work,
        )  # fmt: skip
        assert validate["code"] == 0, validate["stderr"][-2000:]
        assert validate_json["code"] == 0, validate_json["stderr"][-2000:]
        assert run["code"] in (0, 1), run["stderr"][-2000:]
        timed = [x.split()[1] for x in run["stderr"].splitlines() if x.startswith("load_in_run_s")]
        if not timed:
            sys.exit("the run never called load_datasets: TIMED_RUN times the wrong call")
        in_run = timed[0]
        for name, m in (
            ("libyaml events (floor)", floor),
            ("validate", validate),
            ("validate, as JSON", validate_json),
            ("run 1 case", run),
        ):
            print(
                f"{name:24} wall {m['wall']:6.2f} s  cpu {m['cpu']:6.2f} s  peak RSS {m['rss_mb']:6.0f} MB"
            )
        print(f"load inside run: {in_run} s")
        print(f"validate_cpu_vs_floor: {validate['cpu'] / floor['cpu']:.2f}")
        print(f"load_{cases // 1000}k_s: {validate['wall']:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
