"""A tiny coding agent for scenario tests: edits its workspace like a CLI agent would.

Usage: coding_agent.py MODE [OUTSIDE [SECONDS]]. It works in its cwd (the workspace),
prints JSON signal lines (tool calls) and plain text, and exits 0. Modes:
fix (fix greet.py, add NOTES.md, delete old.txt), hang (spawn a child, both sleep; the
child's pid goes to OUTSIDE/child.pid), hang-setsid (``setsid sleep SECONDS &`` — a
child that leaves the agent's process group — then hang; its pid goes to
OUTSIDE/child.pid), escape-symlink (a link to OUTSIDE), escape-file (a file written
next to the workspace), escape-into (a file written into the directory OUTSIDE).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def tool(name: str, **args: object) -> None:
    print(json.dumps({"name": "tool:call", "payload": {"name": name, "args": args}}), flush=True)


def fix() -> None:
    source = Path("greet.py")
    tool("read_file", path="greet.py")
    text = source.read_text()
    tool("write_file", path="greet.py")
    source.write_text(text.replace('"hi " + name', 'f"hello {name}"'))
    Path("NOTES.md").write_text("Fixed greet().\n")
    tool("delete_file", path="old.txt")
    Path("old.txt").unlink()
    print("done: greet() fixed")
    print("a warning on stderr", file=sys.stderr)


def hang(outside: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    (outside / "child.pid").write_text(str(child.pid))
    print("thinking...", flush=True)
    time.sleep(600)


def hang_setsid(outside: Path, seconds: str) -> None:
    child = subprocess.Popen(["setsid", "sleep", seconds])
    (outside / "child.tmp").write_text(str(child.pid))
    (outside / "child.tmp").rename(outside / "child.pid")
    print("thinking...", flush=True)
    time.sleep(600)


def main() -> None:
    mode = sys.argv[1]
    outside = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    if mode == "fix":
        fix()
    elif mode == "hang":
        assert outside is not None
        hang(outside)
    elif mode == "hang-setsid":
        assert outside is not None
        hang_setsid(outside, sys.argv[3])
    elif mode == "escape-symlink":
        assert outside is not None
        os.symlink(outside, "sneaky")
    elif mode == "escape-file":
        Path("..", "escaped.txt").write_text("written outside\n")
    elif mode == "escape-into":
        assert outside is not None
        (outside / "escaped.txt").write_text("written outside\n")
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
