"""Time ``unified_diff`` against ``git diff --no-index`` on 10,000-line code-like files.

git's time includes starting the process, as it would when shelling out to it.
Last line: ``diff_vs_git: <worst our/git ratio>``.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from signal_eval_cli.diffing import unified_diff  # noqa: E402

LINES = 10_000
RUNS = 7
FRACTIONS = (0.01, 0.10, 0.50)
NAMES = ["value", "items", "result", "config", "path", "count", "index", "node", "buf", "key"]
GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}


def statement(rng: random.Random, depth: int) -> str:
    a, b = rng.sample(NAMES, 2)
    body = rng.choice(
        [
            f"{a} = {b}.get({rng.randint(0, 99)})",
            f"if {a} is None:",
            f"for {a} in {b}:",
            f"return {a} + {b}",
            f"{a}.append({b}[{rng.randint(0, 9)}])",
            f"# {a} depends on {b}",
            f"raise ValueError('{a} {rng.randint(0, 999)}')",
        ]
    )
    return "    " * depth + body + "\n"


def code_lines(rng: random.Random, count: int) -> list[str]:
    """Functions of indented statements separated by blank lines."""
    lines: list[str] = []
    while len(lines) < count:
        lines.append(f"def {rng.choice(NAMES)}_{len(lines)}({rng.choice(NAMES)}):\n")
        lines += [statement(rng, rng.randint(1, 3)) for _ in range(rng.randint(3, 15))]
        lines += ["\n", "\n"]
    return lines[:count]


def mutate(rng: random.Random, lines: list[str], fraction: float) -> list[str]:
    """Replace, delete or insert at ``fraction`` of the line positions."""
    out = list(lines)
    for pos in sorted(rng.sample(range(len(lines)), int(len(lines) * fraction)), reverse=True):
        kind = rng.random()
        if kind < 0.5:
            out[pos] = statement(rng, rng.randint(1, 3))
        elif kind < 0.75:
            del out[pos]
        else:
            out.insert(pos, statement(rng, rng.randint(1, 3)))
    return out


def best_ms(action: Callable[[], object]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def git_diff(workdir: Path) -> str:
    cmd = ["git", "diff", "--no-index", "--no-color", "--src-prefix=", "--dst-prefix="]
    result = subprocess.run(
        [*cmd, "a/file.txt", "b/file.txt"], cwd=workdir, env=GIT_ENV, capture_output=True
    )
    text = result.stdout.decode()
    return text[text.index("\n--- ") + 1 :]


def main() -> None:
    rng = random.Random(20240611)
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "a").mkdir()
        (workdir / "b").mkdir()
        for fraction in FRACTIONS:
            old_lines = code_lines(rng, LINES)
            old, new = "".join(old_lines), "".join(mutate(rng, old_lines, fraction))
            (workdir / "a" / "file.txt").write_text(old)
            (workdir / "b" / "file.txt").write_text(new)
            ours = unified_diff(old, new)
            if ours != git_diff(workdir):
                print(f"WARNING: {fraction:.0%} changed: output differs from git")
            our_ms = best_ms(lambda old=old, new=new: unified_diff(old, new))
            git_ms = best_ms(lambda: git_diff(workdir))
            worst = max(worst, our_ms / git_ms)
            print(
                f"{fraction:>4.0%} changed: our_ms={our_ms:.1f} git_ms={git_ms:.1f} "
                f"ratio={our_ms / git_ms:.2f}"
            )
    print(f"diff_vs_git: {worst:.2f}")


if __name__ == "__main__":
    main()
