"""signal-eval's pytest plugin: each case of a dataset is a pytest item, and the
``signal_eval`` fixture runs a dataset inside a test of your own.

Registered by installing signal-eval (entry point ``pytest11``), it does nothing until
asked: only the datasets named by ``--signal-eval PATH``, the ``signal_eval_datasets``
ini option or a YAML or JSON file's path among pytest's arguments are collected, never
YAML files at large (not those in a folder given). pytest imports this module in every
session of every user, so it imports only pytest and cheap standard modules at its top;
signal-eval (and asyncio, 25 ms) in the hooks that need them.
"""

from __future__ import annotations

import glob
import re
import warnings
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr

    from signal_eval_cli.dataset import EvalCase, EvalDataset
    from signal_eval_cli.errors import Problem
    from signal_eval_cli.results import CaseResult, DatasetResult

__all__ = ["DatasetCase", "DatasetFile", "SignalEval", "SignalEvalWarning"]

DETAIL_LIMIT = 2000
"""An expected or actual value longer than this (in JSON) is cut in a failure's text."""


class SignalEvalWarning(UserWarning):
    """A dataset that is valid but worth a second look (cases that check nothing), in
    pytest's warnings summary at its line; ``-W error::signal_eval_cli.pytest_plugin.
    SignalEvalWarning`` (or ``filterwarnings``) fails its collection instead."""

    def __init__(self, notice: Problem) -> None:
        super().__init__(notice.message.removeprefix("warning: "))
        self.problem = notice


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("signal-eval", "signal-eval datasets as tests")
    group.addoption(
        "--signal-eval",
        action="append",
        default=[],
        metavar="PATH",
        dest="signal_eval",
        help="collect the cases of this signal-eval dataset as tests (repeatable)",
    )
    parser.addini(
        "signal_eval_datasets",
        "signal-eval datasets (globs, relative to the ini file) whose cases are tests",
        type="args",
        default=[],
    )


def pytest_configure(config: pytest.Config) -> None:
    """Find the datasets asked for and add them to what pytest collects: ``--signal-eval``
    ones always, the ini option's as pytest's own ``testpaths`` (when pytest is run from
    the rootdir and given no path; else those the paths it walks hold). A path already
    among the arguments is not added again, so ``pytest evals/x.yaml::case`` runs just
    that case."""
    given = [_given(config, p) for p in config.getoption("signal_eval")]
    listed = _listed(config)
    named = {Path(config.invocation_params.dir, a.split("::")[0]).resolve() for a in config.args}
    config.stash[_DATASETS] = {p.resolve() for p in [*given, *listed, *_named_datasets(named)]}
    named_any = config.args_source == pytest.Config.ArgsSource.ARGS
    if named_any or config.invocation_params.dir != config.rootpath:
        listed = []
    config.args.extend(str(p) for p in [*given, *listed] if p.resolve() not in named)


_CASES_KEY = re.compile(r"""^["']?cases["']?[ \t]*:|"cases"\s*:""", re.MULTILINE)
"""A dataset's ``cases:`` key: at the start of a line in YAML, quoted in JSON."""


def _named_datasets(named: set[Path]) -> list[Path]:
    """The datasets named on the command line (``pytest evals/x.yaml``, with or without
    ``::case``): naming one asks for its cases as --signal-eval does, where pytest alone
    said "not found". Only a YAML or JSON file with a ``cases`` key: another plugin's YAML
    tests (Tavern's ``test_x.tavern.yaml``) stay its own; and a folder given is walked as
    pytest walks it, its YAML left alone."""
    found = []
    for path in named:
        if path.suffix.lower() in (".yaml", ".yml", ".json") and path.is_file():
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue  # pytest says it is not found, as it would
            if _CASES_KEY.search(text):
                found.append(path)
    return found


def _given(config: pytest.Config, path: str) -> Path:
    found = Path(config.invocation_params.dir, path)
    if not found.is_file():
        raise pytest.UsageError(f"--signal-eval {path}: no such file")
    return found


def _listed(config: pytest.Config) -> list[Path]:
    """The ini option's datasets: each glob relative to the ini file's directory (the
    rootdir without one); one that matches no file is an error, not a silent pass."""
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    paths: list[Path] = []
    for pattern in config.getini("signal_eval_datasets"):
        found = glob.glob(pattern, root_dir=base, recursive=True)
        matched = [base / m for m in sorted(found)]
        files = [m for m in matched if m.is_file()]
        if not files:
            raise pytest.UsageError(f"signal_eval_datasets: {pattern!r} matches no file")
        paths += files
    return paths


_DATASETS = pytest.StashKey[set[Path]]()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> DatasetFile | None:
    datasets = parent.config.stash.get(_DATASETS, set())
    if datasets and file_path.resolve() in datasets:  # no cost to a session that asks none
        return DatasetFile.from_parent(parent, path=file_path)
    return None


class DatasetFile(pytest.File):
    """A dataset: one item per case its run would select (``only``), run all at once (at
    its first item) with the cases the session kept (``-k``, ``--lf``)."""

    dataset: EvalDataset
    _failure: BaseException | None = None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._results: dict[str, CaseResult] = {}

    def collect(self) -> Iterator[DatasetCase]:
        from signal_eval_cli.dataset import dataset_document
        from signal_eval_cli.runner import RunOptions, select_cases
        from signal_eval_cli.validate import runnable_dataset

        doc = dataset_document(self.path)  # also where each case starts, for a skip's location
        self.dataset = runnable_dataset(doc)  # none: refused as `run` refuses it, not 0 tests
        for notice in self.dataset.notices:
            warnings.warn_explicit(
                SignalEvalWarning(notice), SignalEvalWarning, notice.file, notice.line
            )
        selected = select_cases(self.dataset, RunOptions())
        indexes = {c.id: i for i, c in enumerate(self.dataset.cases)}
        doc.locate([("cases", indexes[c.id]) for c in selected])
        for case in selected:
            line = doc.at(("cases", indexes[case.id])).line
            # the id as a string, parsed as pytest parses one from its cache (--lf) or the
            # command line: a case id may hold "[" or "::"
            nodeid = f"{self.nodeid}::{case.id}"
            yield DatasetCase.from_parent(self, name=case.id, nodeid=nodeid, case=case, line=line)

    def result_of(self, case_id: str) -> CaseResult:
        """The case's result; the first call runs every case of this file the session kept,
        as ``signal-eval run`` does (its harness, cassettes, judge, concurrency). A worker
        of pytest-xdist runs only its own items, one case at a time: which of the session's
        items it will be given, it cannot know."""
        if self._failure is not None:
            raise self._failure
        if case_id not in self._results:
            from signal_eval_cli.runner import RunOptions

            kept = [i.name for i in self.session.items if i.parent is self]
            wanted = [case_id] if hasattr(self.config, "workerinput") else kept
            options = RunOptions(case_ids=[glob.escape(i) for i in wanted])
            try:  # the file's first run imports the harness file anew; a worker's next ones
                # (a case at a time) share that import, as the cases of one CLI run do
                result = run_watched(self.dataset, fresh=not self._results, options=options)
            except Exception as exc:
                self._failure = exc
                raise
            self._results.update((c.case_id, c) for c in result.cases)
        return self._results[case_id]

    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | TerminalRepr:
        return _input_error(self.config, excinfo) or super().repr_failure(excinfo)


class _CaseFailed(Exception):
    """A case that failed: its result, for :meth:`DatasetCase.repr_failure`."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__(result.case_id)
        self.result = result


class DatasetCase(pytest.Item):
    """One case of a dataset: passes when it passes, skipped when skipped, else fails with
    its error and failed assertions."""

    def __init__(self, *, case: EvalCase, line: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.line = line
        self.extra_keyword_matches.update(case.tags)  # -k TAG selects by tag too

    def runtest(self) -> None:
        assert isinstance(self.parent, DatasetFile)
        result = self.parent.result_of(self.case.id)
        if result.skipped:
            reason = result.error or "skip: true in the dataset"
            raise pytest.skip.Exception(reason, _use_item_location=True)  # at the case, not here
        if not result.passed:
            raise _CaseFailed(result)

    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, _CaseFailed):
            return failure_text(excinfo.value.result)
        return _input_error(self.config, excinfo) or super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        # the domain (a failure's heading) is no suffix of the node id, which -v then
        # shows as it is (a suffix would have its dots shown as "::")
        return self.path, self.line - 1, f"{self.name} ({self.path.name})"


def failure_text(result: CaseResult) -> str:
    """Why a case failed, as pytest shows it: the error, then each failed assertion with
    what it expected and what it got (the first line is the short summary's). A lone
    surrogate (a model's stream cut inside an emoji's pair) is shown as its escape, as in
    the JUnit and Markdown reports: pytest would escape the whole text, line breaks too."""
    from signal_eval_cli.files import utf8

    lines = [f"error: {result.error}"] if result.error else []
    for a in result.failed_assertions:
        lines.append(f"{a.assertion.get('type', '?')}: {a.message}")
        lines += [
            f"    {label}: {_shown(value)}"
            for label, value in (("expected", a.expected), ("actual", a.actual))
            if value is not None
        ]
    if result.outcomes is not None:
        lines.append(f"passed {result.pass_count} of {result.run_count} runs")
    return utf8("\n".join(lines or [f"case {result.case_id!r} failed"])).decode()


def _shown(value: Any) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= DETAIL_LIMIT else text[:DETAIL_LIMIT] + "…"


def _input_error(config: pytest.Config, excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """An :class:`~signal_eval_cli.errors.InputError` (or a :class:`SignalEvalWarning`
    made an error) as the CLI prints it (each problem at file:line:col, the file relative
    to where pytest was started), no traceback; ``""`` for any other exception."""
    from signal_eval_cli.errors import InputError

    error = excinfo.value
    if isinstance(error, SignalEvalWarning):
        problems = [error.problem]
    elif isinstance(error, InputError):
        problems = error.problems
    else:
        return ""
    here = config.invocation_params.dir
    return "\n".join(
        str(replace(p, file=_relative(p.file, here)) if p.file else p) for p in problems
    )


def _relative(file: str, here: Path) -> str:
    try:
        return str(Path(file).relative_to(here))
    except ValueError:
        return file


class SignalEval:
    """The ``signal_eval`` fixture: runs a dataset as ``signal-eval run`` does and returns
    its :class:`~signal_eval_cli.results.DatasetResult`, to assert on in a test."""

    def __init__(self, rootpath: Path) -> None:
        self.rootpath = rootpath

    def run(self, dataset: str | Path | EvalDataset, **kwargs: Any) -> DatasetResult:
        """Run ``dataset`` (a path relative to the rootdir, or a loaded dataset);
        ``kwargs`` go to :func:`~signal_eval_cli.configured_dataset.run_configured`
        (``policy``, ``options``, ``harness``, ``params``, ...). A harness that blocks
        the event loop for good fails the cases it held up (:func:`run_watched`)."""
        if isinstance(dataset, (str, Path)):
            dataset = self.rootpath / dataset
        return run_watched(dataset, **kwargs)


def run_watched(
    dataset: str | Path | EvalDataset, *, fresh: bool = True, **kwargs: Any
) -> DatasetResult:
    """``run_configured(dataset, **kwargs)`` on an event loop in a thread of its own.

    An async harness that calls blocking code (``time.sleep``) stops the loop for good,
    and nothing can interrupt it. The CLI's watchdog then ends the process; pytest must
    go on: the watchdog's result (the cases that finished, the rest failed saying where
    the harness is stuck) is returned, and the stuck thread is left behind, its run
    cancelled should the harness ever return. So the harness runs off the main thread:
    what only the main thread may do (``signal.signal``, ``loop.add_signal_handler``)
    a harness cannot do here, as it could not in any threaded server either.

    A harness file (``h.py:create``) is imported anew for the run (unless not ``fresh``),
    as each CLI run imports it in a process of its own: its globals do not carry from
    test to test."""
    import asyncio
    import threading

    from signal_eval_cli.configured_dataset import run_configured
    from signal_eval_cli.deadline import refusals_ended
    from signal_eval_cli.harness.entrypoints import forget_harness_files

    if fresh:  # a run starts from the harness file's code, as the CLI's does
        forget_harness_files()
    ended = threading.Event()
    outcome: list[Any] = []  # the first of: the result, what the run raised, the stall's
    running: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = []

    def cancel() -> None:
        for loop, task in running:
            loop.call_soon_threadsafe(task.cancel)

    def stalled(result: DatasetResult, reason: str) -> None:
        refusals_ended()  # the stuck harness's refusal of os._exit must not outlive it
        outcome.append(result)
        ended.set()
        cancel()

    async def run() -> DatasetResult:
        task = asyncio.current_task()
        assert task is not None
        running.append((asyncio.get_running_loop(), task))
        return await run_configured(dataset, on_stall=stalled, **kwargs)

    def thread() -> None:
        try:
            outcome.append(asyncio.run(run()))
        except BaseException as exc:  # raised again in pytest's thread
            outcome.append(exc)
        finally:
            ended.set()

    threading.Thread(target=thread, name="signal-eval-run", daemon=True).start()
    try:
        ended.wait()
    except KeyboardInterrupt:  # Ctrl-C: the run ends as the CLI's would, then pytest
        cancel()
        ended.wait()
        raise
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return cast("DatasetResult", outcome[0])


@pytest.fixture
def signal_eval(pytestconfig: pytest.Config) -> SignalEval:
    """Run a signal-eval dataset in a test: ``signal_eval.run("evals/x.yaml").pass_rate``."""
    return SignalEval(pytestconfig.rootpath)
