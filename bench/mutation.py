"""Mutation score of the engine: do its tests catch a wrong verdict?

Draws a seeded sample of mutants from every mutation site of the engine
(``patterns.py``, ``signals.py``, ``jsjson.py``, ``assertions/*.py``): comparison and
boolean swaps, constants ±1, return values negated, statements deleted, off-by-one
slices, in f-strings' expressions too (a message's preview cap is code). Each mutant
runs against the engine's own tests, only those that execute the mutated statement (a
line map is traced once, first), fastest first, stopping at the first failure, in a
child forked from a warm pytest (third-party imports done once; the unmutated tests
must pass in it first). A mutant whose tests all pass survived.

Mutants listed in ``bench/equivalent_mutants.txt`` (reviewed: equivalent by
construction, each with its reason) are left out of the score, never whole categories.

Prints the survivors (``file:line:column original → mutant``), the score with its 95% (Wilson)
interval and sample size, and ``mutation_score: <percent>`` last.

Run: .venv/bin/python bench/mutation.py [--sample N] [--seed S] [--workers W]
(``make mutation``). A copy of this file is the pytest plugin the runs load.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import itertools
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
PACKAGE = "signal_eval_cli"
TARGETS = [  # listed, not globbed: the plugin runs from a copy of this file elsewhere
    f"{PACKAGE}/patterns.py",
    f"{PACKAGE}/signals.py",
    f"{PACKAGE}/jsjson.py",
    *(
        f"{PACKAGE}/assertions/{name}.py"
        for name in (
            "helpers",
            "outcome",
            "judging",
            "context",
            "registry",
            "evaluate",
            "problems",
            "documents",
            "options",
            "fields",
            "schema",
            "agent",
            "compose",
            "files",
            "grading",
            "judge",
            "metric",
            "output",
            "signal",
            "snapshot",
            "tool",
        )
    ),
]
TESTS = [
    "tests/test_engine_verdicts.py",
    "tests/test_engine_semantics.py",
    "tests/test_assertions_agent.py",
    "tests/test_assertions_compose_judge.py",
    "tests/test_assertions_imported.py",
    "tests/test_assertions_metric_output_tool.py",
    "tests/test_assertions_signal.py",
    "tests/test_assertions_state.py",
    "tests/test_grading.py",
    "tests/test_signals.py",
    "tests/test_patterns.py",
    "tests/test_loading.py",
    "tests/test_assertion_types.py",
]
EQUIVALENT = BENCH / "equivalent_mutants.txt"
CACHE = ROOT / ".mutation-cache"


# -- mutants ---------------------------------------------------------------------------

_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_DELETABLE = (
    ast.Assign,
    ast.AugAssign,
    ast.Expr,
    ast.Return,
    ast.Raise,
    ast.If,
    ast.Continue,
    ast.Break,
)


class Source:
    """A module's bytes and where each of its nodes is in them."""

    def __init__(self, path: str, data: bytes) -> None:
        self.path, self.data, self.starts = path, data, _offsets(data)

    def span(self, node: Any) -> tuple[int, int]:
        """Byte offsets (``col_offset`` counts UTF-8 bytes)."""
        start = self.starts[node.lineno - 1] + node.col_offset
        return start, self.starts[node.end_lineno - 1] + node.end_col_offset

    def text(self, node: Any) -> str:
        start, end = self.span(node)
        return self.data[start:end].decode()


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to the repository
    line: int
    column: int  # 1-based, in characters: one line may hold two alike mutants
    start: int  # byte offsets of the replaced source
    end: int
    replacement: str
    original: str
    in_function: bool
    statement_lines: tuple[int, int]

    @property
    def label(self) -> str:
        where = f"{self.path}:{self.line}:{self.column}"
        return f"{where} {_one_line(self.original)} → {_one_line(self.replacement)}"

    def apply(self, source: bytes) -> bytes:
        return source[: self.start] + self.replacement.encode() + source[self.end :]


def _one_line(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _offsets(source: bytes) -> list[int]:
    starts, total = [0], 0
    for line in source.splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


_SOURCES: dict[str, bytes] = {}


def mutants_of(path: str) -> list[Mutant]:
    source = Source(path, _SOURCES.setdefault(path, (ROOT / path).read_bytes()))
    tree = ast.parse(source.data)
    found: list[Mutant] = []
    skip: set[int] = set()  # ids of nodes never mutated: annotations, docstrings, __all__
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for arg in (*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs):
                if arg.annotation is not None:
                    skip.update(map(id, ast.walk(arg.annotation)))
            if node.returns is not None:
                skip.update(map(id, ast.walk(node.returns)))
        if isinstance(node, ast.AnnAssign):
            skip.update(map(id, ast.walk(node.annotation)))
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(map(id, ast.walk(node)))
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            skip.update(map(id, ast.walk(node)))
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and _is_docstring(body[0]):
            skip.update(map(id, ast.walk(body[0])))

    def visit(node: ast.AST, in_function: bool, statement: ast.stmt | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for default in (*node.args.defaults, *node.args.kw_defaults):
                if default is not None:
                    visit(default, in_function, statement)
            if not isinstance(node, ast.Lambda):
                for decorator in node.decorator_list:
                    visit(decorator, in_function, statement)
            inner = node.body if isinstance(node.body, list) else [node.body]
            for child in inner:
                visit(child, True, child if isinstance(child, ast.stmt) else statement)
            return
        if isinstance(node, ast.stmt):
            statement = node
        if id(node) not in skip:
            for replacement, target in _replacements(node, source):
                found.append(_mutant(source, target, replacement, in_function, statement))
        for child in ast.iter_child_nodes(node):
            visit(child, in_function, statement)

    visit(tree, False, None)
    return found


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


_OPERATORS: dict[type[ast.AST], str] = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
    ast.And: "and", ast.Or: "or",
}  # fmt: skip
_OPERATOR = re.compile(r"==|!=|<=|>=|<|>|\bnot\s+in\b|\bis\s+not\b|\bin\b|\bis\b|\band\b|\bor\b")


def _swap(source: Source, whole: ast.AST, operands: list[ast.expr], swaps: dict[int, Any]) -> str:
    """``whole``'s source with the operator before ``operands[i]`` made ``swaps[i]``: it
    keeps its quotes, brackets and layout, so a mutant inside an f-string still parses."""
    cuts = [source.span(whole)[0], *(x for o in operands for x in source.span(o))]
    cuts.append(source.span(whole)[1])
    # even pieces: before the first operand, the gaps holding the operators, after the last
    pieces = [source.data[a:b].decode() for a, b in itertools.pairwise(cuts)]
    for i, operator in swaps.items():
        gap = pieces[2 * i]
        if len(_OPERATOR.findall(gap)) != 1:  # a comment made it ambiguous
            raise SystemExit(f"no single operator in {gap!r}: extend bench/mutation.py")
        pieces[2 * i] = _OPERATOR.sub(_OPERATORS[type(operator)], gap)
    return "(" + "".join(pieces) + ")"


def _replacements(node: ast.AST, source: Source) -> Iterator[tuple[str, ast.AST]]:
    """``(new source, node it replaces)`` for every mutation of ``node``, written from
    the original's own text (an f-string's quotes stay valid)."""
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            if type(op) in _SWAPS:
                yield _swap(source, node, operands, {i + 1: _SWAPS[type(op)]()}), node
    elif isinstance(node, ast.BoolOp):
        other: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        swaps = {i: other for i in range(1, len(node.values))}
        yield _swap(source, node, node.values, swaps), node
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield f"({source.text(node.operand)})", node
    elif isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            yield repr(not value), node
        elif isinstance(value, int):
            yield f"({value + 1})", node
            yield f"({value - 1})", node
        elif isinstance(value, float):
            yield f"({value + 1})", node
    elif isinstance(node, ast.Slice):
        for bound in (node.lower, node.upper):
            if bound is not None:
                yield f"({source.text(bound)} + 1)", bound
    value = node.value if isinstance(node, ast.Return) else None
    if value is not None and not (isinstance(value, ast.Constant) and value.value is None):
        yield f"(not ({source.text(value)}))", value
    if isinstance(node, _DELETABLE) and not _is_docstring(node):  # type: ignore[arg-type]
        yield "pass", node


def _mutant(
    source: Source, node: Any, replacement: str, in_function: bool, statement: ast.stmt | None
) -> Mutant:
    start, end = source.span(node)
    lines = (statement.lineno, statement.end_lineno or statement.lineno) if statement else (0, 0)
    original = source.data[start:end].decode()
    column = len(source.data[source.starts[node.lineno - 1] : start].decode()) + 1
    return Mutant(
        source.path, node.lineno, column, start, end, replacement, original, in_function, lines
    )


def reviewed_equivalents() -> dict[str, str]:
    """``label → reason`` from ``bench/equivalent_mutants.txt`` (``label  # reason``)."""
    out: dict[str, str] = {}
    if EQUIVALENT.exists():
        for line in EQUIVALENT.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                label, _, reason = line.partition("  # ")
                out[label.strip()] = reason.strip()
    return out


def unlisted_targets() -> list[str]:
    """Modules of ``assertions/`` with mutation sites that TARGETS does not list."""
    paths = (str(p.relative_to(ROOT)) for p in sorted((ROOT / PACKAGE / "assertions").glob("*.py")))
    return [path for path in paths if path not in TARGETS and mutants_of(path)]


def stale_equivalents(population: list[Mutant], equivalents: dict[str, str]) -> list[str]:
    """Reviewed labels that name no mutant of ``population`` any more (moved or gone)."""
    labels = {m.label for m in population}
    return [label for label in equivalents if label not in labels]


# -- running tests against a mutant -------------------------------------------------------------


class Workspace:
    """A private copy of the package that one worker mutates, one mutant at a time, and
    a warm pytest (:func:`serve`) that forks a child for each mutant's tests."""

    def __init__(self, base: Path) -> None:
        self.dir = base
        shutil.copytree(
            ROOT / PACKAGE, base / PACKAGE, ignore=shutil.ignore_patterns("__pycache__")
        )
        # The plugin, on its own: bench/ itself must not be importable (bench/html.py
        # would shadow the standard library's html).
        shutil.copy(Path(__file__), base / "mutation_plugin.py")
        self.hypothesis = base / "hypothesis"
        self.server: subprocess.Popen[str] | None = None

    def env(self, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "PYTHONPATH": str(self.dir),
            "HYPOTHESIS_STORAGE_DIRECTORY": str(self.hypothesis),
            "PYTHONDONTWRITEBYTECODE": "1",
            **extra,
        }

    def start(self, preload: list[str]) -> None:
        """Start the warm pytest, ``preload`` (the third-party modules the tests import)
        imported once."""
        modules = self.dir / "preload.json"
        modules.write_text(json.dumps(preload))
        command = [sys.executable, "-P", "-c", "import mutation_plugin; mutation_plugin.serve()"]
        self.server = subprocess.Popen(
            command,
            cwd=ROOT,
            env=self.env(MUTATION_PRELOAD=str(modules)),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def stop(self) -> None:
        if self.server is not None:
            assert self.server.stdin is not None
            self.server.stdin.close()
            self.server.wait()

    def pytest(self, select: list[str] | None, timeout: float, **env: str) -> tuple[int, float]:
        """Run the engine tests (``select``: only these node ids, in this order; only their
        files are collected): in a child of the warm pytest once it runs. Exit code -1: the
        timeout passed."""
        extra = dict(env)
        files = TESTS
        if select is not None:
            chosen = self.dir / "select.json"
            chosen.write_text(json.dumps(select))
            extra["MUTATION_SELECT"] = str(chosen)
            files = sorted({t.split("::", 1)[0] for t in select}, key=TESTS.index)
        args = ["-x", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                "-p", "mutation_plugin", *files]  # fmt: skip
        started = time.perf_counter()
        if self.server is not None:
            assert self.server.stdin is not None and self.server.stdout is not None
            request = {"args": args, "env": extra, "timeout": timeout}
            self.server.stdin.write(json.dumps(request) + "\n")
            self.server.stdin.flush()
            return int(self.server.stdout.readline()), time.perf_counter() - started
        try:
            done = subprocess.run(
                [sys.executable, "-P", "-m", "pytest", *args],
                cwd=ROOT,
                env=self.env(**extra),
                capture_output=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return -1, time.perf_counter() - started
        return done.returncode, time.perf_counter() - started

    def run(self, mutant: Mutant, select: list[str], timeout: float) -> tuple[str, float]:
        target = self.dir / mutant.path
        original = _SOURCES[mutant.path]  # as read when the mutants were made
        target.write_bytes(mutant.apply(original))
        try:
            code, seconds = self.pytest(select, timeout)
        finally:
            target.write_bytes(original)
        verdict = {0: "survived", -1: "killed (timeout)", 5: "not run"}.get(code, "killed")
        return verdict, seconds


@dataclass
class LineMap:
    durations: dict[str, float]  # node id -> seconds
    lines: dict[tuple[str, int], list[str]]  # (target, line) -> the node ids that run it
    preload: list[str]  # third-party modules the tests imported


def line_map(workspace: Workspace) -> LineMap:
    """Trace the unmutated tests once: each test's duration and the target lines it runs.

    Cached under ``.mutation-cache/`` by a hash of the engine and its tests.
    """
    digest = hashlib.sha256()
    for name in [*TARGETS, *TESTS, "tests/conftest.py"]:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes())
    out = CACHE / f"map-{digest.hexdigest()[:16]}.json"
    seconds = 0.0
    if not out.exists():
        CACHE.mkdir(exist_ok=True)
        traced = workspace.dir / "lines.json"
        code, seconds = workspace.pytest(None, 3600, MUTATION_TRACE=str(traced))
        if code != 0:
            raise SystemExit(f"the engine tests fail without any mutant (exit {code}): fix them")
        shutil.move(traced, out)
    data = json.loads(out.read_text())
    tests = data["tests"]
    lines: dict[tuple[str, int], list[str]] = {}
    for nodeid, entry in tests.items():
        for path, line in entry["lines"]:
            lines.setdefault((path, line), []).append(nodeid)
    how = f"traced in {seconds:.0f} s" if seconds else f"cached in {out.relative_to(ROOT)}"
    print(f"line map: {len(tests)} tests, {how}", file=sys.stderr)
    return LineMap({t: e["s"] for t, e in tests.items()}, lines, data["modules"])


def tests_for(mutant: Mutant, traced: LineMap) -> list[str]:
    """The tests that run the mutated statement, fastest first (every test for a mutant
    of module-level code, which runs at import)."""
    if not mutant.in_function:
        chosen = set(traced.durations)
    else:
        first, last = mutant.statement_lines
        lines = traced.lines
        chosen = {t for n in range(first, last + 1) for t in lines.get((mutant.path, n), ())}
    return sorted(chosen, key=lambda t: (traced.durations[t], t))


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sample", type=int, default=200)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    started = time.perf_counter()
    unlisted = unlisted_targets()
    if unlisted:  # a new assertion module is engine too
        raise SystemExit(f"add to TARGETS: {', '.join(unlisted)}")
    population = [m for path in TARGETS for m in mutants_of(path)]
    sample = random.Random(args.seed).sample(population, min(args.sample, len(population)))
    for m in sample:  # a mutant that does not parse would be "killed" by a SyntaxError
        try:
            ast.parse(m.apply(_SOURCES[m.path]))
        except SyntaxError as exc:
            raise SystemExit(f"{m.label} does not parse ({exc}): fix bench/mutation.py") from None
    equivalents = reviewed_equivalents()
    for stale in stale_equivalents(population, equivalents):
        print(f"reviewed list: no such mutant now (review it again): {stale}", file=sys.stderr)
    excluded = [m for m in sample if m.label in equivalents]
    scored = [m for m in sample if m.label not in equivalents]
    print(
        f"mutation: {len(sample)} of {len(population)} mutants (seed {args.seed}) of "
        f"{len(TARGETS)} engine modules, {args.workers} workers",
        file=sys.stderr,
    )
    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        workspaces = [Workspace(Path(tmp) / f"w{i}") for i in range(args.workers)]
        traced = line_map(workspaces[0])
        for workspace in workspaces:
            workspace.start(traced.preload)
        # A kill must be the mutant's doing: the unmutated tests pass in the warm pytest too.
        code, seconds = workspaces[0].pytest(None, 3600)
        if code != 0:
            raise SystemExit(f"the engine tests fail in the warm pytest (exit {code}): fix it")
        print(f"baseline: the engine tests pass unmutated in {seconds:.0f} s", file=sys.stderr)
        free = list(workspaces)
        lock = threading.Lock()
        results: dict[Mutant, str] = {}

        def one(mutant: Mutant) -> None:
            select = tests_for(mutant, traced)
            if not select:
                results[mutant] = "survived (no test runs it)"
                return
            with lock:
                workspace = free.pop()
            try:
                # Generous: a loaded machine is slow, and a timeout counts as a kill.
                timeout = 300 + 10 * sum(traced.durations[t] for t in select)
                results[mutant], seconds = workspace.run(mutant, select, timeout)
            finally:
                with lock:
                    free.append(workspace)
            print(f"  {results[mutant]:<17} {seconds:5.1f} s  {mutant.label}", file=sys.stderr)

        try:
            with ThreadPoolExecutor(args.workers) as pool:
                list(pool.map(one, scored))
        finally:
            for workspace in workspaces:
                workspace.stop()
    survivors = [m for m in scored if results[m].startswith("survived")]
    not_run = [m for m in scored if results[m] == "not run"]
    judged = [m for m in scored if m not in not_run]
    killed = len(judged) - len(survivors)
    low, high = wilson(killed, len(judged))
    print(f"\nsurvivors ({len(survivors)}):")
    for m in sorted(survivors, key=lambda m: (m.path, m.line)):
        print(f"  {m.label}  [{results[m]}]")
    if not_run:
        print(
            f"not run ({len(not_run)}; selection found no test): "
            + "; ".join(m.label for m in not_run)
        )
    print(f"reviewed equivalent mutants in the sample, not scored ({len(excluded)}):")
    for m in excluded:
        print(f"  {m.label}  # {equivalents[m.label]}")
    print(f"reviewed list: {len(equivalents)} entries in {EQUIVALENT.relative_to(ROOT)}")
    score = 100 * killed / len(judged) if judged else 0.0
    print(
        f"killed {killed} of {len(judged)} sampled mutants: {score:.1f}% "
        f"(95% interval {100 * low:.1f}–{100 * high:.1f}%), sample size {len(judged)}, "
        f"{time.perf_counter() - started:.0f} s"
    )
    print(f"mutation_score: {score:.1f}")


# -- the pytest plugin the runs load (-p mutation_plugin), and the warm pytest ---------------------

_TRACE_OUT = os.environ.get("MUTATION_TRACE")
_traced: dict[str, dict[str, Any]] = {}
_hits: set[tuple[str, int]] = set()
_files: dict[str, str] = {}  # absolute path of a traced module -> its repository path


def _local(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "line":
        _hits.add((_files[frame.f_code.co_filename], frame.f_lineno))
    return _local


def _global(frame: FrameType, event: str, arg: Any) -> Any:
    return _local if frame.f_code.co_filename in _files else None


def pytest_configure(config: Any) -> None:
    from hypothesis import settings

    # Deterministic examples, no deadline (tracing is slow), no shared example database.
    settings.register_profile("mutation", deadline=None, derandomize=True, database=None)
    settings.load_profile("mutation")
    if _TRACE_OUT:
        base = Path(os.environ["PYTHONPATH"].split(os.pathsep)[0])
        _files.update({str(base / t): t for t in TARGETS})


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    select = os.environ.get("MUTATION_SELECT")  # read per run: the warm pytest forks runs
    if select:
        order = {nodeid: i for i, nodeid in enumerate(json.loads(Path(select).read_text()))}
        items[:] = sorted((i for i in items if i.nodeid in order), key=lambda i: order[i.nodeid])


def _trace_protocol(item: Any) -> Iterator[None]:
    _hits.clear()
    began = time.perf_counter()
    sys.settrace(_global)
    threading.settrace(_global)
    try:
        yield
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]
        _traced[item.nodeid] = {"s": time.perf_counter() - began, "lines": sorted(_hits)}


def _third_party() -> list[str]:
    """The modules imported so far that are neither ours nor the tests', in import order."""
    here = os.getcwd()  # the repository (ROOT is elsewhere in the plugin's copy)
    ours = (os.path.join(here, "tests"), os.path.join(here, PACKAGE), os.environ["PYTHONPATH"])
    return [
        name
        for name, module in list(sys.modules.items())
        if name.split(".")[0] not in ("__main__", "conftest", "mutation_plugin", PACKAGE)
        and isinstance(getattr(module, "__file__", None), str)
        and not module.__file__.startswith(ours)
    ]


if _TRACE_OUT:
    import pytest

    pytest_runtest_protocol = pytest.hookimpl(hookwrapper=True)(_trace_protocol)

    def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
        out = {"tests": _traced, "modules": _third_party()}
        Path(str(_TRACE_OUT)).write_text(json.dumps(out))


def serve() -> None:
    """The warm pytest: import the third-party modules once, then for each request on
    stdin (``{args, env, timeout}``) fork a child that imports the engine afresh (the
    mutant) and runs pytest; answer its exit code, -1 if the timeout passed."""
    import importlib
    import signal

    for name in json.loads(Path(os.environ["MUTATION_PRELOAD"]).read_text()):
        try:
            importlib.import_module(name)
        except BaseException:  # a module only some import path can load
            continue
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                os.setsid()  # the tests' own processes die with it on a timeout
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.environ.update(request["env"])
                import pytest

                code = int(pytest.main(request["args"]))
            finally:
                os._exit(code)
        deadline = time.monotonic() + request["timeout"]
        while not (done := os.waitpid(pid, os.WNOHANG))[0] and time.monotonic() < deadline:
            time.sleep(0.02)
        if done[0]:
            code = os.waitstatus_to_exitcode(done[1])
        else:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            code = -1
        print(code, flush=True)


if __name__ == "__main__":
    main()
