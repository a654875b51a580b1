"""Prepare scenario workspaces of a large fixture: our ``prepare_workspace`` vs ``cp -a``.

Generates a fixture of FILES files (about MB megabytes in all, in nested directories,
like a repository checkout), then prepares WORKSPACES workspaces from it with
``prepare_workspace`` and copies it WORKSPACES times with ``cp -a``, alternating the
two so that a busy machine slows both alike. Every workspace is removed right after
it is made (its removal is not timed). The figure is our total time ÷ ``cp -a``'s.

Usage: python bench/workspace.py [--files 10000] [--mb 200] [--workspaces 20]
Last line: ``workspace_vs_cp: <ratio>`` (target ≤ 0.2).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# The repository instead of bench/ first on the path: bench/html.py would shadow stdlib html.
sys.path.remove(str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from signal_eval_cli.scenarios.workspace import copy_strategy, prepare_workspace


def generate(root: Path, files: int, total_bytes: int, seed: int = 7) -> None:
    """``files`` files spread over 3 levels of directories, sizes around the mean."""
    rng = random.Random(seed)
    mean = max(1, total_bytes // files)
    chunk = os.urandom(1 << 20)
    for i in range(files):
        directory = root / f"pkg{i % 20}" / f"mod{i % 97}"
        directory.mkdir(parents=True, exist_ok=True)
        size = max(1, int(rng.uniform(0.5, 1.5) * mean))
        start = rng.randrange(0, len(chunk) - min(size, len(chunk) - 1))
        data = (chunk[start:] + chunk)[:size]
        (directory / f"file{i}.py").write_bytes(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--mb", type=float, default=200)
    parser.add_argument("--workspaces", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-workspace-") as tmp:
        fixture = Path(tmp) / "fixture"
        fixture.mkdir()
        generate(fixture, args.files, int(args.mb * 1_000_000))
        print(f"fixture: {args.files:,} files, {args.mb:g} MB", flush=True)
        ours = cp = 0.0
        strategies = set()
        for i in range(args.workspaces):
            started = time.perf_counter()
            workspace = prepare_workspace(fixture, label=f"bench-{i}")
            ours += time.perf_counter() - started
            strategies.add(workspace.strategy)
            workspace.cleanup()
            target = Path(tmp) / f"cp-{i}"
            started = time.perf_counter()
            subprocess.run(["cp", "-a", str(fixture), str(target)], check=True)
            cp += time.perf_counter() - started
            shutil.rmtree(target)
            print(f"  {i + 1}/{args.workspaces}: ours {ours:.2f} s, cp -a {cp:.2f} s", flush=True)
        used = ", ".join(sorted(strategies))
        print(
            f"prepare_workspace x{args.workspaces} ({used}; a copy would be {copy_strategy(fixture)}): {ours:.2f} s"
        )
        print(f"cp -a x{args.workspaces}: {cp:.2f} s")
        print(f"workspace_vs_cp: {ours / cp:.3f}")


if __name__ == "__main__":
    main()
