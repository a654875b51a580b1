"""Time ``unified_diff`` against ``git diff --no-index`` on 10,000-line code-like files.

git's time includes starting the process, as it would when shelling out to it.  Both are
timed alternately (best of RUNS) so that a busy machine slows both alike.
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

# bench/ itself must not be on the path: bench/html.py would shadow the stdlib's html
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from signal_eval_cli.diffing import unified_diff  # noqa: E402

LINES = 10_000
RUNS = 9
FRACTIONS = (0.01, 0.10, 0.50)
NAMES = """value items result config path count index node buf key name data options parser
token line offset size width height parent child stream handler request response session cache
entry record field column row table query limit timeout retries logger""".split()  # noqa: SIM905
COMMON = ["", "else:", "return None", "pass", "try:", "except Exception:", "return result", "break"]


def statement(rng: random.Random, depth: int) -> str:
    """One line of plausible Python: mostly distinct lines, a few that repeat a lot."""
    a, b = rng.sample(NAMES, 2)
    n = rng.randint(0, 99)
    body = rng.choice(
        [
            f"{a} = {b}.get({n})",
            f"{a} = self.{b}[{n % 10}]",
            f"if {a} is None:",
            f"if len({a}) > {n}:",
            f"for {a} in {b}:",
            f"return {a} + {b}",
            f"{a}.append({b})",
            f"self.{a} = {b}",
            f"# {a} depends on {b}",
            f"raise ValueError('bad {a}: %r' % {b})",
            rng.choice(COMMON),
        ]
    )
    return ("    " * depth + body).rstrip() + "\n"


def code_lines(rng: random.Random, count: int) -> list[str]:
    """Functions of indented statements separated by blank lines."""
    lines: list[str] = []
    while len(lines) < count:
        lines.append(f"def {rng.choice(NAMES)}_{len(lines)}(self, {rng.choice(NAMES)}):\n")
        lines += [statement(rng, rng.randint(1, 3)) for _ in range(rng.randint(3, 15))]
        lines.append("\n")
    return lines[:count]


def mutate(rng: random.Random, lines: list[str], fraction: float) -> list[str]:
    """Edit, delete or insert at ``fraction`` of the line positions, as a developer would."""
    out = list(lines)
    for pos in sorted(rng.sample(range(len(lines)), int(len(lines) * fraction)), reverse=True):
        kind = rng.random()
        if kind < 0.5:  # rename or retune something on the line
            name = rng.choice([n for n in NAMES if n in out[pos]] or ["None"])
            out[pos] = out[pos].replace(name, f"{name}_{rng.randint(2, 9)}", 1)
        elif kind < 0.75:
            del out[pos]
        else:
            out.insert(pos, statement(rng, rng.randint(1, 3)))
    return out


def best_ms(*actions: Callable[[], object]) -> list[float]:
    """Best wall time of each action over RUNS rounds, running them in turn."""
    best = [float("inf")] * len(actions)
    for _ in range(RUNS):
        for i, action in enumerate(actions):
            start = time.perf_counter()
            action()
            best[i] = min(best[i], (time.perf_counter() - start) * 1000)
    return best


def git_diff(workdir: Path) -> str:
    """git's output from the ``---`` line on, isolated from any user or system config."""
    env = {**os.environ, "HOME": str(workdir), "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CEILING_DIRECTORIES": str(workdir.parent)}
    cmd = ["git", "diff", "--no-index", "--no-color", "--src-prefix=", "--dst-prefix="]
    result = subprocess.run(
        [*cmd, "a/file.txt", "b/file.txt"], cwd=workdir, env=env, capture_output=True
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
            (workdir / "a" / "file.txt").write_bytes(old.encode())
            (workdir / "b" / "file.txt").write_bytes(new.encode())
            if unified_diff(old, new) != git_diff(workdir):
                print(f"WARNING: {fraction:.0%} changed: output differs from git")
            our_ms, git_ms = best_ms(
                lambda old=old, new=new: unified_diff(old, new), lambda: git_diff(workdir)
            )
            worst = max(worst, our_ms / git_ms)
            print(
                f"{fraction:>4.0%} changed: our_ms={our_ms:.1f} git_ms={git_ms:.1f} "
                f"ratio={our_ms / git_ms:.2f}"
            )
    print(f"diff_vs_git: {worst:.2f}")


if __name__ == "__main__":
    main()
