"""The pytest plugin (signal_eval_cli.pytest_plugin): a dataset's cases as pytest items,
opt-in only, and the ``signal_eval`` fixture. Each run is pytest's own ``pytester`` in
process, the plugin named with ``-p`` (the suite's conftest turns plugin autoload off for
the pytest runs tests start); the entry point that autoloads it is checked on its own."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from signal_eval_cli import deadline

pytest_plugins = ["pytester"]

PLUGIN = ("-p", "signal_eval_cli.pytest_plugin")

HARNESS = """\
def create_harness():
    def run(input, ctx):
        ctx.emit("tool:call", {"name": input, "args": {}})
        ctx.emit("tool:result", {"name": input, "result": "ok"})
    return run
"""

DATASET = """\
name: demo
harness: h.py:create_harness
cases:
  - id: good
    input: search
    assertions:
      - type: tool.called
        name: search
  - id: bad
    input: search
    tags: [slow]
    assertions:
      - type: tool.called
        name: write_file
  - id: later
    input: search
    skip: true
    assertions: []
"""


@pytest.fixture
def evals(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with ``evals/x.yaml`` (one case passes, one fails, one is skipped), its
    harness beside it, and a stray YAML file nobody asked to collect."""
    pytester.makefile(".yaml", **{"evals/x": DATASET})
    pytester.makefile(".py", **{"evals/h": HARNESS})
    pytester.makefile(".yaml", stray="name: stray\ncases: []\n")
    return pytester


KEPT: dict[str, Any] = {}
"""The modules in-process runs imported (the project's own files left out), which
pytester drops from ``sys.modules`` after each run and again at its teardown: the next
import would make a second copy of each in this process (a second ``EvalError``, PyYAML
classes its C parser does not know), and the tests after these would see both."""


class KeptModules:
    """A plugin of the inner run that notes its modules at the end (into :data:`KEPT`)."""

    def __init__(self, project: Path) -> None:
        self.project = str(project)

    def pytest_unconfigure(self) -> None:
        for name, module in list(sys.modules.items()):
            if not (getattr(module, "__file__", None) or "").startswith(self.project):
                KEPT.setdefault(name, module)


def _restore() -> None:
    for name, module in KEPT.items():
        sys.modules.setdefault(name, module)


@pytest.fixture(autouse=True)
def keep_modules() -> Iterator[None]:
    """Autouse, so set up before pytester and torn down after it."""
    yield
    _restore()


def run(pytester: pytest.Pytester, *args: str, cache: bool = False) -> pytest.RunResult:
    off = () if cache else ("-p", "no:cacheprovider")
    try:
        return pytester.runpytest_inprocess(
            *PLUGIN, *off, *args, plugins=[KeptModules(pytester.path)]
        )
    finally:
        _restore()


def test_installing_signal_eval_registers_the_plugin_for_pytest() -> None:
    found = {e.name: e.value for e in entry_points(group="pytest11")}
    assert found.get("signal_eval") == "signal_eval_cli.pytest_plugin"


def test_each_case_is_an_item_that_passes_fails_or_skips_as_the_case_does(
    evals: pytest.Pytester,
) -> None:
    junit = evals.path / "junit.xml"
    result = run(evals, "--signal-eval", "evals/x.yaml", "-rfs", f"--junitxml={junit}")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*_ bad (x.yaml) _*",
            "tool.called: expected at least 1 calls of tool 'write_file', found 0*",
            '    expected: "at least 1"',
            "    actual: 0",
            "FAILED evals/x.yaml::bad - tool.called: expected at least 1 calls*",
            "SKIPPED [[]1[]] evals/x.yaml:15: skip: true in the dataset",  # where the case is
        ]
    )
    assert "pytest_plugin.py" not in result.stdout.str()  # no traceback of ours
    cases = {c.get("name"): c for c in ET.parse(junit).iter("testcase")}
    assert set(cases) == {"good", "bad", "later"}
    assert cases["bad"].find("failure") is not None and cases["good"].find("failure") is None


def test_a_lone_surrogate_in_a_failure_is_shown_escaped_line_by_line(
    evals: pytest.Pytester,
) -> None:
    """A model's stream cut inside an emoji's pair: pytest escaped the whole text."""
    evals.makefile(".py", **{"evals/h": HARNESS.replace('"name": input', '"name": "a \\ud83d"')})
    result = run(evals, "--signal-eval", "evals/x.yaml")
    result.assert_outcomes(failed=2, skipped=1)
    result.stdout.fnmatch_lines(["*first matches: a \\ud83d", '    expected: "at least 1"'])


def test_selection_by_keyword_tag_and_node_id_runs_only_those_cases(
    evals: pytest.Pytester,
) -> None:
    run(evals, "--signal-eval", "evals/x.yaml", "-k", "slow").assert_outcomes(failed=1)
    result = run(evals, "--signal-eval", "evals/x.yaml", "evals/x.yaml::good")
    result.assert_outcomes(passed=1)


def test_last_failed_reruns_a_failed_case_whatever_its_id_holds(evals: pytest.Pytester) -> None:
    """pytest parses the ids it cached: a case id with "[" or "::" must match its item."""
    odd = DATASET.replace("id: good", "id: 'a::b'").replace("id: bad", "id: 'sql [1]'")
    evals.makefile(".yaml", **{"evals/x": odd})
    args = ("--signal-eval", "evals/x.yaml")
    run(evals, *args, cache=True).assert_outcomes(passed=1, failed=1, skipped=1)
    result = run(evals, *args, "--lf", "-v", cache=True)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["evals/x.yaml::sql [[]1[]] FAILED*"])


COUNTING = """\
from pathlib import Path
from typing import Any

def create_harness():
    def run(input, ctx):
        with (Path(__file__).parent / "runs.log").open("a") as log:
            log.write(input + "\\n")
        ctx.emit("tool:call", {"name": input, "args": {}})
    return run
"""


def test_each_case_runs_once_whether_pytest_xdist_spreads_them_or_not(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # workers load only these
    cases = "".join(
        f"  - id: c{i}\n    input: c{i}\n    assertions: [{{type: tool.called, name: c{i}}}]\n"
        for i in range(4)
    )
    pytester.makefile(
        ".yaml", **{"evals/x": f"name: x\nharness: h.py:create_harness\ncases:\n{cases}"}
    )
    pytester.makefile(".py", **{"evals/h": COUNTING})
    log = pytester.path / "evals" / "runs.log"
    for workers in ([], ["-p", "xdist", "-n", "2"]):
        run(pytester, *workers, "--signal-eval", "evals/x.yaml").assert_outcomes(passed=4)
        assert sorted(log.read_text().split()) == ["c0", "c1", "c2", "c3"], workers
        log.unlink()


def test_only_cases_alone_are_collected_when_any_has_it(evals: pytest.Pytester) -> None:
    evals.makefile(".yaml", **{"evals/x": DATASET.replace("tags: [slow]", "only: true")})
    result = run(evals, "--signal-eval", "evals/x.yaml", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["evals/x.yaml::bad", "", "1 test collected*"])


def test_nothing_is_collected_unless_asked(evals: pytest.Pytester) -> None:
    result = run(evals)
    result.assert_outcomes()
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert run(evals, "evals").ret == pytest.ExitCode.NO_TESTS_COLLECTED  # a folder: walked


def test_a_dataset_named_as_pytest_s_argument_is_collected_without_configuration(
    evals: pytest.Pytester,
) -> None:
    """``pytest evals/x.yaml`` said "ERROR: not found" unless an ini file listed it."""
    run(evals, "evals/x.yaml").assert_outcomes(passed=1, failed=1, skipped=1)
    run(evals, "evals/x.yaml::bad").assert_outcomes(failed=1)
    result = run(evals, "stray.yaml")  # named, so collected: refused as `run` refuses it
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*stray.yaml:*no cases*"])
    evals.makefile(".yaml", **{"test_x.tavern": "test_name: t\nstages: []\n"})
    result = run(evals, "test_x.tavern.yaml")  # another plugin's YAML: not ours to collect
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()


def test_the_ini_option_collects_its_globs_without_a_command_line_option(
    evals: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    evals.makeini("[pytest]\nsignal_eval_datasets = evals/*.yaml\n")
    run(evals).assert_outcomes(passed=1, failed=1, skipped=1)
    run(evals, "evals/x.yaml::bad").assert_outcomes(failed=1)
    (evals.path / "docs").mkdir()
    monkeypatch.chdir(evals.path / "docs")  # as testpaths: from elsewhere, what is there
    assert run(evals).ret == pytest.ExitCode.NO_TESTS_COLLECTED
    monkeypatch.chdir(evals.path / "evals")
    run(evals).assert_outcomes(passed=1, failed=1, skipped=1)
    monkeypatch.chdir(evals.path)
    evals.makeini("[pytest]\nsignal_eval_datasets = evals/none-*.yaml\n")
    result = run(evals)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*signal_eval_datasets: 'evals/none-*.yaml' matches no file*"])


def test_a_missing_dataset_is_a_usage_error(evals: pytest.Pytester) -> None:
    result = run(evals, "--signal-eval", "evals/nope.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--signal-eval evals/nope.yaml: no such file*"])


def test_an_invalid_dataset_fails_its_collection_at_file_line_col(
    evals: pytest.Pytester,
) -> None:
    evals.makefile(".yaml", **{"evals/bad": DATASET.replace("tool.called", "tool.calld", 1)})
    result = run(evals, "--signal-eval", "evals/bad.yaml")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting evals/bad.yaml*",
            "evals/bad.yaml:7:15: unknown assertion type 'tool.calld'*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_dataset_with_no_cases_fails_its_collection_as_run_refuses_it(
    evals: pytest.Pytester,
) -> None:
    """It was collected as no tests at all: ``pytest`` went green (0 items), with a
    listed dataset whose cases were all gone."""
    result = run(evals, "--signal-eval", "stray.yaml")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting stray.yaml*",
            "stray.yaml:2:8: the dataset has no cases: nothing to run*",
        ]
    )


def test_a_case_that_checks_nothing_passes_with_a_warning_that_w_error_refuses(
    evals: pytest.Pytester,
) -> None:
    """``assertions: []`` and no ``defaultAssertions``: the case passes, as ``run`` passes
    it, and pytest's warnings summary says so at its line; ``-W error::…`` refuses it at
    file:line:col, with no traceback (the skipped ``later`` is no such case: it runs not)."""
    bare = DATASET.replace(
        "    assertions:\n      - type: tool.called\n        name: search\n", "    assertions: []\n"
    )
    evals.makefile(".yaml", **{"evals/bare": bare})
    result = run(evals, "--signal-eval", "evals/bare.yaml")
    result.assert_outcomes(passed=1, failed=1, skipped=1, warnings=1)
    result.stdout.fnmatch_lines(
        ["*evals/bare.yaml:4: SignalEvalWarning: case 'good' has 'assertions: []' and *"]
    )
    refused = run(
        evals,
        "--signal-eval",
        "evals/bare.yaml",
        "-W",
        "error::signal_eval_cli.pytest_plugin.SignalEvalWarning",
    )
    assert refused.ret == pytest.ExitCode.INTERRUPTED
    refused.stdout.fnmatch_lines(
        ["*ERROR collecting evals/bare.yaml*", "evals/bare.yaml:4:5: warning: case 'good' has *"]
    )
    assert "Traceback" not in refused.stdout.str()


def test_a_harness_that_cannot_be_loaded_fails_every_case_with_its_message(
    evals: pytest.Pytester,
) -> None:
    evals.makefile(".yaml", **{"evals/y": DATASET.replace("h.py:", "missing.py:")})
    result = run(evals, "--signal-eval", "evals/y.yaml")
    result.assert_outcomes(failed=3)  # the run could not start: no case ran, none skipped
    result.stdout.fnmatch_lines(
        ["FAILED evals/y.yaml::later - harness 'missing.py:create_harness'*"]
    )
    assert "Traceback" not in result.stdout.str()


def test_the_fixture_runs_a_dataset_for_a_test_to_assert_on(evals: pytest.Pytester) -> None:
    evals.makepyfile(
        test_quality="""
        def test_pass_rate(signal_eval):
            result = signal_eval.run("evals/x.yaml")
            assert [c.case_id for c in result.cases] == ["good", "bad", "later"]
            assert result.pass_rate == 0.5
        """
    )
    run(evals, "test_quality.py").assert_outcomes(passed=1)


def test_the_plugin_module_imports_no_signal_eval_module_at_its_top() -> None:
    """pytest imports it in every session of every user: it must stay cheap (asyncio
    alone costs 25 ms, which pytest does not import)."""
    code = (
        "import sys, pytest, signal_eval_cli.pytest_plugin\n"
        "print(sorted(m for m in sys.modules if m.startswith('signal_eval_cli')))\n"
        "print('asyncio' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[:2] == [
        "['signal_eval_cli', 'signal_eval_cli.pytest_plugin']",
        "False",
    ]


def test_the_readme_example_runs_as_written(pytester: pytest.Pytester) -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## pytest: datasets as tests")[1].split("\n## ")[0]
    (ini,) = re.findall(r"```ini\n(.*?)```", section, re.S)
    (test,) = re.findall(r"```python\n(.*?)```", section, re.S)
    pytester.makeini(ini)
    passing = DATASET.split("  - id: bad")[0]  # good only
    pytester.makefile(".yaml", **{"evals/review": passing})
    pytester.makefile(".py", **{"evals/h": HARNESS})
    pytester.makefile(".py", **{"tests/test_review_quality": test})
    result = run(pytester)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["evals/review.yaml .*", "tests/test_review_quality.py .*"])


STUCK = """\
import time
from pathlib import Path

def create_harness():
    async def run(input, ctx):  # "stuck" blocks the loop until released (a minute at most)
        end, release = time.monotonic() + 60, Path(__file__).with_name("release")
        while input == "stuck" and time.monotonic() < end and not release.exists(): time.sleep(0.05)
        ctx.emit("tool:call", {"name": "search", "args": {}})
    return run
"""


def test_a_harness_blocking_the_event_loop_fails_its_case_instead_of_hanging_pytest(
    pytester: pytest.Pytester,
) -> None:
    """An async harness that blocks the loop for good cannot be interrupted: as ``run``
    does, the watchdog ends the dataset, the cases that finished keep their verdicts and
    the rest fail saying where the harness is stuck; pytest goes on (the items, then the
    fixture's run) while the harness is stuck."""
    cases = "\n".join(
        f"  - {{id: {i}, input: {i}, assertions: [{{type: tool.called, name: search}}]}}"
        for i in ("quick", "stuck")
    )
    dataset = f"name: stuck\nharness: h.py:create_harness\ndefaultTimeout: 300\ncases:\n{cases}\n"
    pytester.makefile(".yaml", **{"evals/s": dataset})
    pytester.makefile(".py", **{"evals/h": STUCK})
    pytester.makepyfile(
        test_fixture="""
        def test_run(signal_eval):
            result = signal_eval.run("evals/s.yaml")
            assert [c.passed for c in result.cases] == [True, False]
            assert "event loop was blocked at h.py:7 in run" in result.cases[1].error
        """
    )
    try:
        result = run(pytester, "--signal-eval", "evals/s.yaml", "test_fixture.py")
        result.assert_outcomes(passed=2, failed=1)
        result.stdout.fnmatch_lines(
            ["error: not finished: the event loop was blocked at h.py:7 in run for *"]
        )
        assert os._exit is deadline._real_exit  # the stuck harness's refusal does not outlive it
    finally:  # the stuck harnesses return: their runs, cancelled, unwind (as the session ends)
        (pytester.path / "evals" / "release").touch()
        stuck = [t for t in threading.enumerate() if t.name == "signal-eval-run"]
        for thread in stuck:
            thread.join(timeout=60)
    assert stuck and not any(t.is_alive() for t in stuck)


def test_each_run_imports_the_harness_file_anew_and_once(tmp_path: Path) -> None:
    """A harness file's globals carried from one test's run to the next (a list of calls
    the second run found holding the first's), where each CLI run starts afresh; within a
    run, the file is imported once (the check before the cases, then the run)."""
    from signal_eval_cli.pytest_plugin import run_watched

    (tmp_path / "h.py").write_text(
        "from pathlib import Path\n"
        "Path(__file__).with_name('imports.log').open('a').write('import\\n')\n"
        "RUNS = []\n\n"
        "async def harness(input, ctx):\n"
        "    RUNS.append(input)\n"
        "    ctx.emit('text:complete', {'content': f'run {len(RUNS)}'})\n\n"
        "def create():\n"
        "    return harness\n"
    )
    (tmp_path / "d.yaml").write_text(
        "name: d\nharness: h.py:create\ncases:\n"
        "  - {id: a, input: x, assertions: [{type: output.contains, text: run 1}]}\n"
    )
    first = run_watched(tmp_path / "d.yaml")
    assert first.passed and (tmp_path / "imports.log").read_text() == "import\n"
    assert run_watched(tmp_path / "d.yaml").passed, "the second run saw the first's RUNS"
    # a dataset file's later runs in one xdist worker (a case at a time) share the import
    assert not run_watched(tmp_path / "d.yaml", fresh=False).passed
    assert (tmp_path / "imports.log").read_text() == "import\n" * 2
