"""The CLI starts without importing what the command does not use."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import signal_eval_cli
from signal_eval_cli.cli import COMMANDS, command_function

ROOT = Path(__file__).resolve().parent.parent
HEAVY = (
    "jsonschema",
    "aiohttp",
    "openai",
    "anthropic",
    "yaml",
    "rich",
    "signal_eval_cli.scenarios",
    "signal_eval_cli.compare",
    "pydantic",
    "signal_eval_cli.proxy.server",
)
UNUSED_BY_A_RUN = (
    "signal_eval_cli.traces",
    "signal_eval_cli.diffing",
    "signal_eval_cli.proxy.route",
)
"""What a reactive run without file assertions never calls: trace readers, the diff of
scenario files, the proxy's routes for SDK clients (2-7 ms of every start each, when
they were imported anyway)."""


def imported_after(code: str, tmp_path: Path, names: tuple[str, ...] = HEAVY) -> list[str]:
    """The modules of ``names`` a fresh interpreter has imported after ``code``."""
    probe = (
        f"import sys\n{code}\nprint(*(m for m in {names!r} if m in sys.modules), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    return done.stderr.split()


def test_help_imports_none_of_the_library(tmp_path: Path) -> None:
    code = "from signal_eval_cli.cli import app\ntry:\n    app(['--help'])\nexcept SystemExit:\n    pass"
    assert imported_after(code, tmp_path) == []


def test_validate_imports_no_jsonschema_for_a_valid_dataset(tmp_path: Path) -> None:
    code = (
        "from signal_eval_cli.validate import validate_path\n"
        f"assert validate_path({str(ROOT / 'datasets/code-review.yaml')!r}) == ('dataset', [])"
    )
    assert "jsonschema" not in imported_after(code, tmp_path)


def test_the_cli_validates_without_pydantic_jsonschema_or_aiohttp(tmp_path: Path) -> None:
    """Typer 0.29 builds a pydantic adapter per option (pyproject pins it below that)."""
    path = str(ROOT / "datasets/code-review.yaml")
    code = f"from signal_eval_cli.cli import app\ntry:\n    app(['validate', {path!r}])\nexcept SystemExit as exit:\n    assert exit.code == 0"
    assert not {"pydantic", "jsonschema", "aiohttp", "openai"} & set(imported_after(code, tmp_path))


def test_a_reactive_run_starts_no_model_proxy_and_imports_no_aiohttp(tmp_path: Path) -> None:
    """The reactive harness replays its cassette itself (``model_proxy = False``)."""
    path = str(ROOT / "datasets/code-review.yaml")
    code = (
        "from signal_eval_cli.cli import app\n"
        f"try:\n    app(['run', {path!r}, '--case', 'sql-injection', '-q'])\n"
        "except SystemExit as exit:\n    assert exit.code in (0, 1), exit.code"
    )
    imported = set(imported_after(code, tmp_path, HEAVY + UNUSED_BY_A_RUN))
    assert not {"aiohttp", "openai", "signal_eval_cli.proxy.server", "jsonschema"} & imported
    assert not set(UNUSED_BY_A_RUN) & imported


def test_a_live_provider_imports_no_recording_machinery(tmp_path: Path) -> None:
    """Record and replay are imported by a run with a cassette (or a judge's), and
    streamed events' parser by a streamed call: a live run's start paid for all three.
    The price table is read through the package's loader, not ``importlib.resources``
    (whose readers import ``zipfile``: 3 ms)."""
    recording = (
        "signal_eval_cli.providers.recording",
        "signal_eval_cli.providers.cassette",
        "signal_eval_cli.proxy.recorder",
        "signal_eval_cli.proxy.apis",
    )
    code = (
        "import signal_eval_cli.cli.run, signal_eval_cli.judges, signal_eval_cli.harness.reactive\n"
        "from signal_eval_cli.providers.registry import make_provider\n"
        "make_provider('openai:m', api_key='k'), make_provider('anthropic:m', api_key='k')"
    )
    assert imported_after(code, tmp_path, (*recording, "importlib.readers")) == []
    replay = f"{code}\nmake_provider('cassette:{ROOT / 'datasets/cassettes/code-gen.yaml'}')"
    assert imported_after(replay, tmp_path, recording)[:2] == list(recording[:2])


@pytest.mark.parametrize(
    ("file", "kind"),
    [
        ("datasets/matrix-code-review.yaml", "matrix"),
        ("datasets/agents/code-review.yaml", "agents"),
    ],
)
def test_every_kind_is_recognised_in_a_fresh_process(tmp_path: Path, file: str, kind: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "signal_eval_cli.cli", "validate", str(ROOT / file)],
        capture_output=True, text=True, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and f"({kind})" in done.stdout, done.stdout + done.stderr


def test_the_compare_submodule_never_shadows_the_compare_function(tmp_path: Path) -> None:
    """``compare`` is imported on first use, yet importing its submodule first (as the
    CLI's compare command does) leaves ``signal_eval_cli.compare`` the function."""
    code = (
        "import types\n"
        "import signal_eval_cli.compare\n"
        "import signal_eval_cli\n"
        "from signal_eval_cli import compare\n"
        "assert compare is signal_eval_cli.compare is signal_eval_cli.compare.__globals__['compare']\n"
        "assert not isinstance(compare, types.ModuleType)\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True)


def test_every_export_is_the_defining_modules_object() -> None:
    importlib.import_module("signal_eval_cli.compare")  # the submodule must not shadow the function
    for name in signal_eval_cli.__all__:
        value = getattr(signal_eval_cli, name)
        assert not inspect.ismodule(value), name
        assert getattr(importlib.import_module(value.__module__), name) is value


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_commands_summary_is_its_docstring(name: str) -> None:
    doc = " ".join((inspect.getdoc(command_function(name)) or "").split())
    assert doc.startswith(COMMANDS[name][1])


def test_ctrl_c_while_the_cli_imports_exits_130_without_a_traceback(tmp_path: Path) -> None:
    """The console script guards the CLI's import (a Ctrl-C in the first half second)."""
    probe = (
        "import builtins\n"
        "real = builtins.__import__\n"
        "def interrupted(name, *args, **kwargs):\n"
        "    if name == 'signal_eval_cli.cli':\n"
        "        raise KeyboardInterrupt\n"
        "    return real(name, *args, **kwargs)\n"
        "builtins.__import__ = interrupted\n"
        "from signal_eval_entry import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path
    )
    assert (done.returncode, done.stderr) == (130, "interrupted\n")


@pytest.mark.parametrize(
    ("command", "loader"),
    [
        ("run", "signal_eval_cli.cli.run.load_datasets"),
        ("validate", "signal_eval_cli.cli.validate.validate_path"),
        ("scenario", "signal_eval_cli.cli.scenario.find_scenarios"),
    ],
)
def test_ctrl_c_while_a_command_loads_its_input_says_so_and_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, loader: str
) -> None:
    """A 100,000-case dataset loads for seconds: a Ctrl-C then is told, not a silent 130."""
    from typer.testing import CliRunner

    from signal_eval_cli.cli import app

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    module, name = loader.rsplit(".", 1)
    monkeypatch.setattr(importlib.import_module(module), name, interrupted)
    (tmp_path / "big.yaml").write_text("cases: []\n")
    done = CliRunner().invoke(app, [command, str(tmp_path / "big.yaml")])
    assert (done.exit_code, done.stderr.strip()) == (130, "interrupted")


EXITING = """\
import atexit, io, os, sys, threading
import signal_eval_cli.cli as cli

class Teardown:
    def __del__(self, write=os.write):
        write(2, b"torn down")

kept = Teardown()  # freed only by the interpreter's teardown
left_open = open("left-open.txt", "w")  # a harness's log, never flushed nor closed
left_open.write("buffered")

class OwnLog(io.IOBase):  # a harness's own file object: the teardown would close (flush) it
    def flush(self):
        if not self.closed:
            with open("own-log.txt", "w") as out:
                out.write("flushed")

own_log = OwnLog()
finished = threading.Event()

def late_thread():
    finished.wait()
    print("thread joined")

threading.Thread(target=late_thread).start()
atexit.register(print, "atexit ran")

def command():
    print("x" * 100_000)  # still in stdout's buffer when the command returns
    finished.set()
    sys.exit(3)

cli.main = command
cli.main_and_exit()
"""


def test_the_process_ends_without_teardown_after_threads_atexit_and_flushing(
    tmp_path: Path,
) -> None:
    """The console script skips the interpreter's teardown (0.2-0.4 s after a large run)
    but keeps what a normal exit does: the exit code, joined threads, atexit, flushed
    output, files left open flushed."""
    done = subprocess.run(
        [sys.executable, "-c", EXITING], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 3
    assert done.stdout == "x" * 100_000 + "\nthread joined\natexit ran\n"
    assert done.stderr == ""  # no teardown ran
    assert (tmp_path / "left-open.txt").read_text() == "buffered"
    assert (tmp_path / "own-log.txt").read_text() == "flushed"


@pytest.mark.parametrize("code", ["a message", None, 0, 1, 2, 130])
def test_an_exit_message_or_an_exception_takes_the_normal_exit(
    monkeypatch: pytest.MonkeyPatch, code: object
) -> None:
    import signal_eval_cli.cli as cli

    ended: list[int] = []

    def fast(status: int) -> None:
        ended.append(status)
        raise RuntimeError("ended")

    def command() -> None:
        sys.exit(code)

    monkeypatch.setattr(cli, "main", command)
    monkeypatch.setattr(cli.os, "_exit", fast)
    monkeypatch.setattr(cli.atexit, "_run_exitfuncs", lambda: None)  # pytest's own stay
    # This worker's threads and processes are other tests' (an executor thread left
    # idle, a fixture's server): the exit must neither wait for them nor kill them.
    monkeypatch.setattr(cli.threading, "enumerate", lambda: [threading.current_thread()])
    monkeypatch.delitem(sys.modules, "signal_eval_cli.process_scope", raising=False)
    if isinstance(code, str):
        with pytest.raises(SystemExit) as exited:
            cli.main_and_exit()
        assert (exited.value.code, ended) == ("a message", [])
    else:
        with pytest.raises(RuntimeError, match="ended"):
            cli.main_and_exit()
        assert ended == [code or 0]
    monkeypatch.setattr(cli, "main", lambda: int("not a number"))
    with pytest.raises(ValueError):
        cli.main_and_exit()


def test_the_console_script_is_the_guarded_entry() -> None:
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"signal-eval": "signal_eval_entry:main"}


def test_the_built_in_harnesses_are_the_registered_entry_points() -> None:
    """``BUILT_IN`` resolves the names pyproject.toml registers without reading metadata."""
    from signal_eval_cli.harness.entrypoints import BUILT_IN, ENTRY_POINT_GROUP, load_factory

    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"][ENTRY_POINT_GROUP] == BUILT_IN
    assert load_factory("reactive") is load_factory(BUILT_IN["reactive"])


def test_a_ctrl_c_while_the_process_ends_is_no_traceback(tmp_path: Path) -> None:
    """A Ctrl-C after the command was done (its results written) raised wherever the
    ending was: a KeyboardInterrupt traceback from killing a harness's processes, or from
    waiting on a thread it left, and atexit's work (saving cassettes) cut short. It now
    stops only the wait for threads; the rest of the ending runs, with the command's code."""
    probe = """\
import atexit, os, signal, sys, threading
import signal_eval_cli.cli as cli

stuck = threading.Event()
threading.Thread(target=stuck.wait).start()  # a harness's thread that never ends
atexit.register(print, "atexit ran")

def command():
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
    sys.exit(1)

cli.main = command
cli.main_and_exit()
"""
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert (done.returncode, done.stdout, done.stderr) == (1, "atexit ran\n", "")
