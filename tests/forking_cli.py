"""A single-threaded server that forks ``signal-eval`` runs on demand, for tests that
start (and kill -9) many runs: a fork of an already-imported CLI starts in
milliseconds where a fresh interpreter takes a second.

Protocol on stdin/stdout, one JSON line each way:
``{"run": [argv...], "cwd": DIR, "stderr": FILE}`` → ``{"pid": PID}``;
``{"wait": PID}`` → ``{"rc": CODE}`` (a killed child reports ``-SIGNAL``).

Before serving, one run of a tiny dataset imports what the CLI imports lazily (so each
fork does not), and the server checks it is still single-threaded (fork-safe).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import threading
from pathlib import Path

from signal_eval_cli.cli import main


def _child(argv: list[str], cwd: str, stderr: str | None = None) -> None:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC) if stderr else null, 2)
    os.chdir(cwd)
    sys.argv = ["signal-eval", *argv]
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        code = 99
    os._exit(code)


WARM_HARNESS = "async def run(input, ctx):\n    ctx.emit('harness:end')\n"
WARM_DATASET = """\
name: warm
harness: w.py:run
cases:
  - id: a
    assertions: [{type: signal.contains, pattern: harness:end}]
"""


def _warm_up() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "w.py").write_text(WARM_HARNESS)
        Path(tmp, "eval.yaml").write_text(WARM_DATASET)
        pid = os.fork()
        if pid == 0:  # the child proves the CLI runs; the parent imports below
            _child(["run", "eval.yaml", "-o", "o.json", "-q"], tmp)
        os.waitpid(pid, 0)
        from signal_eval_cli.cli.run import run_command
        from signal_eval_cli.dataset import load_dataset

        load_dataset(Path(tmp, "eval.yaml"))
        with contextlib.suppress(ImportError):  # typer >= 0.29 imports it at parse time
            import typer._adapters  # noqa: F401

        del run_command
    if threading.active_count() != 1:
        raise RuntimeError("the forking server must stay single-threaded")


def serve() -> None:
    _warm_up()
    for line in sys.stdin:
        request = json.loads(line)
        if "run" in request:
            pid = os.fork()
            if pid == 0:
                _child(request["run"], request["cwd"], request.get("stderr"))
            reply = {"pid": pid}
        else:
            _, status = os.waitpid(request["wait"], 0)
            reply = {"rc": os.waitstatus_to_exitcode(status)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    serve()
