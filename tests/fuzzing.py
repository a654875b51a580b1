"""A seeded mutator over every input file kind, and a runner that judges each mutant.

Shared by ``tests/test_fuzz.py`` (a few hundred mutants, in CI) and ``bench/fuzz.py``
(10,000+). Each mutant is one file of one kind (:data:`KINDS`: a dataset in YAML or JSON,
scenario, matrix, agents, cassette, signal trace, result, and the frameworks' recorded
traces) fed to the CLI command that reads it. The CLI runs in a
forked child of this (already imported) process, so a mutant costs a fork, not an
interpreter start; the parent kills a child that passes its time budget.

A mutant *fails* when the command exits with anything but 0, 1 or 2, prints a
traceback, takes longer than its budget or grows past its memory budget. The time budget
counts the mutant's own time: wall time less the time its threads were kept waiting
for a CPU by other work (the machine is shared), so a loaded machine does not fail a
mutant, and a mutant that computes, sleeps or hangs too long still does.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import random
import resource
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
TIME_BUDGET = 10.0  # seconds per mutant, of its own time: not counting time spent waiting for a CPU
LOADED_LIMIT = 30  # ... but never more than this many budgets of wall time
MEMORY_BUDGET = 1 << 30  # bytes of resident memory per mutant
KINDS = (
    "dataset",
    "scenario",
    "matrix",
    "agents",
    "cassette",
    "trace",
    "result",
    "dataset-json",  # a dataset as json.dumps writes it: read by json, not libyaml
    "agents-sdk-trace",  # the frameworks' traces, as `import` and `validate` read them
    "otlp-trace",
    "langgraph-trace",
)
FRAMEWORK_TRACES = {  # kind -> a recorded trace of tests/fixtures/traces
    "agents-sdk-trace": "agents_support.json",
    "otlp-trace": "otel_openinference_agents.json",
    "langgraph-trace": "langgraph_updates.jsonl",
}

# Placeholders a structural mutation writes, swapped for raw text after dumping
# (values no YAML/JSON dumper would produce, or would refuse to).
_RAW = {
    "@@DEEP_JSON@@": "[" * 1200 + "]" * 1200,
    "@@DEEP_YAML@@": "[" * 600 + "]" * 600,
    "@@BIG_INT@@": "9" * 5000,
    "@@NAN@@": "NaN",
    "@@INF@@": "Infinity",
    "@@YAML_INF@@": ".inf",
    "@@CONTROL@@": "x\x08y",
}

HOSTILE: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    -1e308,
    2**63,
    "",
    " ",
    "x" * 300,
    "x" * 400_000,
    "a" * 300 + ".yaml",
    "../../../../etc/passwd",
    "/etc/passwd",
    "*",
    "**",
    "(a+)+$",
    "[",
    "{input.missing}",
    "harness:start",
    "llm.judge",
    "output.matches",
    "OPENAI_API_KEY",
    [],
    {},
    [1.5],
    [None],
    [[]],
    {"type": 1},
    {"type": "x" * 50},
    {"type": "output.matches", "regex": "(a+)+$"},
    {"type": "signal.count", "pattern": "*", "min": 5, "max": 1},
    *_RAW,
]


@dataclass
class Mutant:
    kind: str
    name: str  # file name inside the workspace
    content: bytes
    argv: list[str]  # CLI arguments; the mutant's file is at ``name``
    index: int = 0  # its place in the stream it was drawn from


@dataclass
class Outcome:
    mutant: Mutant
    exit_code: int | None  # None: killed for taking too long
    seconds: float
    max_rss: int  # bytes
    stderr: str
    cpu_seconds: float = 0.0  # user + system: far below ``seconds`` means waiting (or load)
    waited_for_cpu: float = 0.0  # seconds of ``seconds`` the machine was too busy to run it

    @property
    def failure(self) -> str | None:
        """Why this outcome breaks the contract, or None."""
        if self.exit_code is None:
            busy = (
                f" (+{self.waited_for_cpu:.1f} s waiting for a CPU)"
                if self.waited_for_cpu >= 0.1
                else ""
            )
            return f"took longer than {TIME_BUDGET:.0f} s{busy}"
        if self.exit_code not in (0, 1, 2):
            return f"exit {self.exit_code}"
        if "Traceback (most recent call last)" in self.stderr:
            return "traceback"
        if self.max_rss > MEMORY_BUDGET:
            return f"used {self.max_rss >> 20} MB"
        return None


# -- the seed workspace --------------------------------------------------------------


def build_workspace(root: Path) -> dict[str, tuple[str, bytes]]:
    """Copy the examples into ``root``, record results and traces; return the seeds:
    kind -> (file name, original bytes)."""
    shutil.copytree(ROOT / "datasets", root, dirs_exist_ok=True)
    shutil.copy(ROOT / "scenarios" / "python-smoke.yaml", root / "scenario.yaml")
    for name in ("baseline.json", "current.json"):
        argv = ["run", "code-review.yaml", "-q", "--signals", "all", "-o", name]
        code = fork_cli(root, argv, None, timeout=120, prepare=_same_every_time).exit_code
        assert code in (0, 1), f"seed run exited {code}"
    results = json.loads((root / "baseline.json").read_text())
    (root / "traces").mkdir(exist_ok=True)
    for case in results["cases"]:
        lines = [json.dumps(s) for s in case.get("signals", [])]
        (root / "traces" / f"{case['caseId']}.jsonl").write_text("\n".join(lines) + "\n")
    first = results["cases"][0]["caseId"]
    dataset = yaml.safe_load((root / "code-review.yaml").read_text(encoding="utf-8"))
    (root / "code-review.json").write_text(json.dumps(dataset, indent=2), encoding="utf-8")
    (root / "imports").mkdir(exist_ok=True)  # not traces/: `run --traces` reads that one
    for name in FRAMEWORK_TRACES.values():
        shutil.copy(ROOT / "tests" / "fixtures" / "traces" / name, root / "imports" / name)
    seeds = {
        "dataset": "code-review.yaml",
        "scenario": "scenario.yaml",
        "matrix": "matrix-code-review.yaml",
        "agents": "agents/code-review.yaml",
        "cassette": "cassettes/code-review.yaml",
        "trace": f"traces/{first}.jsonl",
        "result": "current.json",
        "dataset-json": "code-review.json",
        **{kind: f"imports/{name}" for kind, name in FRAMEWORK_TRACES.items()},
    }
    return {kind: (name, (root / name).read_bytes()) for kind, name in seeds.items()}


def commands(kind: str, name: str, rng: random.Random) -> list[str]:
    """The CLI arguments that read a file of ``kind`` at ``name``."""
    if kind in FRAMEWORK_TRACES:
        draw = rng.random()
        if draw < 0.5:
            return ["import", name, "-o", "out/trace.jsonl"]
        if draw < 0.75:
            return ["import", name, "--case-into", "out/cases.yaml"]
        return ["validate", name]
    if kind in ("dataset", "dataset-json", "agents", "cassette") and rng.random() < 0.5:
        dataset = name if kind.startswith("dataset") else "code-review.yaml"
        return ["run", dataset, "-q", "-o", "out/result.json", "--junit", "out/junit.xml"]
    if kind == "matrix" and rng.random() < 0.2:
        return ["matrix", name, "-q", "-o", "out/matrix.json"]
    if kind == "trace" and rng.random() < 0.5:
        return ["run", "code-review.yaml", "--traces", "traces", "-q", "-o", "out/result.json"]
    if kind == "result":
        other = "baseline.json"
        pair = [other, name] if rng.random() < 0.5 else [name, other]
        return ["compare", *pair, "-o", "out/compare.json"]
    return ["validate", name]


# -- mutations -----------------------------------------------------------------------


def _nodes(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _nodes(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _nodes(value, (*path, i))


def _replace(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    parent = data
    for token in path[:-1]:
        parent = parent[token]
    parent[path[-1]] = value
    return data


def _structural(text: str, as_json: bool, rng: random.Random) -> str | None:
    try:
        data = json.loads(text) if as_json else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError):
        return None
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        paths = list(_nodes(data))
        path = rng.choice(paths)
        action = rng.random()
        if action < 0.6:
            # A copy: a later mutation must not change HOSTILE (nor make it contain itself).
            data = _replace(data, path, copy.deepcopy(rng.choice(HOSTILE)))
        elif action < 0.75 and path:  # delete a key or an item
            parent = data
            for token in path[:-1]:
                parent = parent[token]
            del parent[path[-1]]
        elif action < 0.9 and path and isinstance(path[-1], str):  # rename a key
            parent = data
            for token in path[:-1]:
                parent = parent[token]
            parent[rng.choice(HOSTILE[9:16])] = parent.pop(path[-1])
        else:  # duplicate a list many times
            target = data
            for token in path:
                target = target[token]
            if isinstance(target, list) and target:
                target.extend(target * rng.choice((2, 10, 50)))
    try:
        if as_json:
            out = json.dumps(data, allow_nan=True, default=str)
        else:
            out = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=10**9)
    except (ValueError, yaml.YAMLError, RecursionError):
        return None
    for token, raw in _RAW.items():
        out = out.replace(json.dumps(token) if as_json else token, raw)
        out = out.replace(f"'{token}'", raw)
    return out


def _textual(raw: bytes, rng: random.Random) -> bytes:
    data = bytearray(raw)
    for _ in range(rng.choice((1, 1, 2, 4, 16))):
        if not data:
            break
        at = rng.randrange(len(data))
        action = rng.random()
        if action < 0.3:
            data[at] = rng.randrange(256)
        elif action < 0.45:
            data[at : at + 1] = rng.choice((b"\x08", b"\x00", b"\x1b", b"\xff", b"\t", b"\r"))
        elif action < 0.6:
            del data[at : at + rng.randrange(1, 200)]
        elif action < 0.75:
            length = rng.randrange(1, 200)
            data[at:at] = data[at : at + length] * rng.choice((1, 2, 20))
        elif action < 0.85:
            data[at:at] = rng.choice(
                (b"&a ", b"*a", b"<<: *a\n", b"!!python/object:os.system ", b"{", b"[", b'"')
            )
        else:
            del data[at:]
    return bytes(data)


def _jsonl(raw: bytes, rng: random.Random) -> bytes:
    lines = raw.decode("utf-8").splitlines()
    i = rng.randrange(len(lines))
    mutated = _structural(lines[i], True, rng)
    if mutated is not None:
        lines[i] = mutated.replace("\n", " ")
    return ("\n".join(lines) + "\n").encode("utf-8")


def mutants(seeds: dict[str, tuple[str, bytes]], count: int, seed: int) -> Iterator[Mutant]:
    """``count`` mutants, round-robin over the kinds, reproducible from ``seed``."""
    rng = random.Random(seed)
    for i in range(count):
        kind = KINDS[i % len(KINDS)]
        name, raw = seeds[kind]
        choice = rng.random()
        content: bytes | None = None
        if choice < 0.65:
            if name.endswith(".jsonl"):
                content = _jsonl(raw, rng)
            else:
                text = _structural(raw.decode("utf-8"), name.endswith(".json"), rng)
                content = text.encode("utf-8") if text is not None else None
        if content is None:
            content = _textual(raw, rng)
        yield Mutant(kind, name, content, commands(kind, name, rng), i)


# -- running -------------------------------------------------------------------------


def _same_every_time() -> None:
    """In the child that records a seed result, fix what differs from one recording to
    the next: the clocks (durations and latencies from ``time.perf_counter``, timestamps
    from ``signals.now_iso``, which reads ``time.time_ns``; deadlines use
    ``time.monotonic`` and still pass) and the
    random part of signal ids (drawn once per process) and their counter (a forked child
    goes on from its parent's, which in the suite has run other tests). The seed files, and every mutant
    drawn from their bytes, are then the same in every process on every machine."""
    from signal_eval_cli import signals

    time.perf_counter = lambda: 1000.0
    time.time_ns = lambda: 1_767_225_600 * 10**9  # 2026-01-01T00:00:00Z
    signals._PROCESS = "5eed"
    signals._ids = itertools.count(1)


def _child(
    cwd: Path, argv: list[str], stderr_path: Path | None, prepare: Callable[[], None] | None
) -> None:
    code = 70
    try:
        os.chdir(cwd)
        if prepare is not None:
            prepare()
        fd = os.open(os.devnull, os.O_WRONLY)
        err = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC) if stderr_path else fd
        os.dup2(fd, 1)
        os.dup2(err, 2)
        soft = 4 * MEMORY_BUDGET  # a safety net; the budget itself is checked on max RSS
        resource.setrlimit(resource.RLIMIT_AS, (soft, soft))
        from signal_eval_cli.cli import main

        sys.argv = ["signal-eval", *argv]
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def fork_cli(
    cwd: Path,
    argv: list[str],
    stderr_path: Path | None,
    timeout: float,
    prepare: Callable[[], None] | None = None,
) -> _Ran:
    """Run the CLI in a forked child in ``cwd`` (after ``prepare``, in the child); the
    exit code is None when the child was killed past ``timeout``."""
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.setpgid(0, 0)
        _child(cwd, argv, stderr_path, prepare)
    delay, waited = 0.002, 0.0
    while True:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            waited = max(waited, _waited_for_cpu(pid))  # read before the zombie is reaped
            _, status, usage = os.wait4(pid, 0)
            code: int | None = os.waitstatus_to_exitcode(status)
            return _Ran(code, time.monotonic() - started, waited, usage)
        seconds = time.monotonic() - started
        if seconds > timeout:
            waited = max(waited, _waited_for_cpu(pid))
            if seconds - waited > timeout or seconds > LOADED_LIMIT * timeout:
                with _suppress():
                    os.killpg(pid, signal.SIGKILL)
                _, _, usage = os.wait4(pid, 0)
                return _Ran(None, time.monotonic() - started, waited, usage)
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _waited_for_cpu(pid: int) -> float:
    """Seconds a thread of process ``pid`` spent ready to run but waiting for a CPU (the
    most any live one did, from /proc/PID/task/*/schedstat): time a loaded machine took
    from it, which the time budget does not count. A mutant that computes or sleeps
    too long still passes its budget; one that was kept waiting by other work does not."""
    most = 0
    with _suppress():
        for task in os.listdir(f"/proc/{pid}/task"):
            with _suppress(), open(f"/proc/{pid}/task/{task}/schedstat") as stats:
                most = max(most, int(stats.read().split()[1]))  # nanoseconds on a run queue
    return most / 1e9


class _Ran:
    def __init__(
        self, exit_code: int | None, seconds: float, waited: float, usage: resource.struct_rusage
    ):
        self.exit_code, self.seconds, self.waited_for_cpu = exit_code, seconds, waited
        self.max_rss = int(usage.ru_maxrss) * 1024
        self.cpu_seconds = usage.ru_utime + usage.ru_stime


class _suppress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


def preload() -> None:
    """Import every command and everything it may import, once, before forking; then
    freeze the heap, so a child's garbage collector does not copy every page. A child
    that imported them itself spent most of its time there (0.4 s for typer's parameter
    adapters and pydantic, then 0.5 s for aiohttp in the run's model proxy: 2/3 of a run
    mutant's time), not on its mutant."""
    import contextlib
    import gc
    import io

    import signal_eval_cli.harness.reactive
    import signal_eval_cli.judges
    import signal_eval_cli.matrix
    import signal_eval_cli.providers.cassette
    import signal_eval_cli.providers.http
    import signal_eval_cli.proxy.config
    import signal_eval_cli.proxy.server
    import signal_eval_cli.proxy.serving  # the model proxy imports it in its own thread
    import signal_eval_cli.reports.junit
    import signal_eval_cli.scenarios
    import signal_eval_cli.traces.langgraph
    import signal_eval_cli.traces.openai_agents
    import signal_eval_cli.traces.otlp  # noqa: F401
    from signal_eval_cli.cli import COMMANDS, command_function, main

    argv = sys.argv
    for name in COMMANDS:  # the CLI imports a command's module when it is asked for
        command_function(name)
        sys.argv = ["signal-eval", name, "--help"]  # and typer its adapters on parsing
        with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
            main()
    sys.argv = argv
    gc.freeze()


def _tree(root: Path, leave_out: set[Path]) -> list[tuple[str, int, int]]:
    """Every entry under ``root`` but ``leave_out`` as (path, size, mtime): what a command
    changed, seen without reading the files."""
    entries = []
    for path in sorted(root.rglob("*")):
        if path in leave_out or any(parent in leave_out for parent in path.parents):
            continue
        status = path.lstat()
        entries.append((str(path.relative_to(root)), status.st_size, status.st_mtime_ns))
    return entries


class Workspace:
    """The copy of the seed workspace the mutants run in: each mutant is written over its
    seed there, and afterwards the seed is put back and ``out/`` emptied. A command that
    changed anything else gets a fresh copy, so every mutant starts from the seed."""

    def __init__(self, seed: Path) -> None:
        self.seed, self.where = seed, seed.parent / "mutant"
        self._copy()

    def _copy(self) -> None:
        shutil.rmtree(self.where, ignore_errors=True)
        shutil.copytree(self.seed, self.where, symlinks=True)
        (self.where / "out").mkdir()
        self.pristine = _tree(self.where, {self.where / "out"})

    def run(self, mutant: Mutant) -> Outcome:
        target = self.where / mutant.name
        target.write_bytes(mutant.content)
        stderr_path = self.seed.parent / "stderr.txt"
        ran = fork_cli(self.where, mutant.argv, stderr_path, timeout=TIME_BUDGET)
        stderr = stderr_path.read_text(encoding="utf-8", errors="replace")
        self._restore(target, (self.seed / mutant.name).read_bytes())
        return Outcome(
            mutant,
            ran.exit_code,
            ran.seconds,
            ran.max_rss,
            stderr,
            ran.cpu_seconds,
            ran.waited_for_cpu,
        )

    def _restore(self, target: Path, seed_bytes: bytes) -> None:
        out = self.where / "out"
        try:
            target.write_bytes(seed_bytes)
            os.utime(
                target, ns=(os.stat(self.seed / target.relative_to(self.where)).st_mtime_ns,) * 2
            )
            shutil.rmtree(out)
            out.mkdir()
            clean = _tree(self.where, {out}) == self.pristine
        except OSError:
            clean = False
        if not clean:
            self._copy()


def seed_workspace(tmp: Path) -> dict[str, tuple[str, bytes]]:
    """Build the seed workspace in ``tmp/seed`` (see :func:`build_workspace`) in this
    process, with every command imported and its schema caches warm for the children."""
    preload()
    workspace = tmp / "seed"
    workspace.mkdir(parents=True)
    seeds = build_workspace(workspace)
    from signal_eval_cli.validate import validate_path

    for name, _ in seeds.values():
        validate_path(workspace / name)
    return seeds


def run_all(
    tmp: Path, stream: Iterable[Mutant], on_outcome: Callable[[Outcome], None] | None = None
) -> list[Outcome]:
    """Run every mutant of ``stream`` in ``tmp`` (after :func:`seed_workspace`); the
    failing outcomes."""
    failures = []
    runner = Workspace(tmp / "seed")
    for mutant in stream:
        outcome = runner.run(mutant)
        if on_outcome is not None:
            on_outcome(outcome)
        if outcome.failure:
            failures.append(outcome)
    return failures


def fuzz(
    tmp: Path, count: int, seed: int, on_outcome: Callable[[Outcome], None] | None = None
) -> list[Outcome]:
    """Run ``count`` mutants drawn from ``seed`` in ``tmp``; the failing outcomes."""
    return run_all(tmp, mutants(seed_workspace(tmp), count, seed), on_outcome)


# -- keeping mutants -----------------------------------------------------------------


def save(outcome: Outcome, where: Path) -> None:
    """Keep a mutant and what it did in the directory ``where``: its file (under its own
    name), ``outcome.json`` (kind, name, argv, index, exit, seconds, RSS, failure) and
    ``stderr.txt``; :func:`load` reads it back for a replay or a regression test."""
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    mutant = outcome.mutant
    (where / Path(mutant.name).name).write_bytes(mutant.content)
    (where / "stderr.txt").write_text(outcome.stderr, encoding="utf-8")
    facts = {
        "kind": mutant.kind,
        "name": mutant.name,
        "argv": mutant.argv,
        "index": mutant.index,
        "exitCode": outcome.exit_code,
        "seconds": round(outcome.seconds, 3),
        "cpuSeconds": round(outcome.cpu_seconds, 3),
        "waitedForCpuSeconds": round(outcome.waited_for_cpu, 3),
        "maxRssBytes": outcome.max_rss,
        "failure": outcome.failure,
    }
    (where / "outcome.json").write_text(json.dumps(facts, indent=2) + "\n", encoding="utf-8")


def load(where: Path) -> Mutant:
    """The mutant :func:`save` kept in ``where``."""
    facts = json.loads((where / "outcome.json").read_text(encoding="utf-8"))
    content = (where / Path(facts["name"]).name).read_bytes()
    return Mutant(facts["kind"], facts["name"], content, facts["argv"], facts["index"])
