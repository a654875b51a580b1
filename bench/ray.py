"""Ray executor throughput: 2,000 cases each awaiting 50 ms, 2 actors x concurrency 100,
on a local Ray instance (ray.init(num_cpus=2)); the local executor at the same total
concurrency (200) is the baseline, measured in the same run.

What the ideal includes: nothing but the waiting. Ideal wall time = ceil(2000 / (2 x 100))
x 50 ms = 500 ms, i.e. every slot of every actor busy awaiting from start to end, with no
cost per case at all. The Ray wall time is measured from the moment the actors are up to
the last result on the driver, so it counts everything a case costs: the batches sent to
the actors, the runner and the assertions in the actors, the results pickled back, and
``CaseResult`` rebuilt on the driver. It leaves out two one-offs, printed apart:
``ray.init`` (seconds on a busy machine; a cluster is started once, not per run) and
starting the actors (each imports signal-eval and builds the harness). No journal is
written (the library run has no ``on_case_complete``): ``signal-eval run -o`` adds a journal
line per case on the driver (fsync'd on a thread), the same cost under either executor. The local baseline runs the
same runner in this process, so ``ray_overhead_per_case_ms`` is what Ray adds per case.
Where the rest goes: ``actor_share_wall_vs_ideal`` runs one actor's share (1,000 cases at
concurrency 100) with the runner in this process, no Ray at all: the floor the Ray figure
can reach on this machine at its current load (each case costs the runner about 0.2 ms
of CPU, and on a loaded machine an actor does not get a core of its own).
Prints, last, ``ray_wall_vs_ideal: <ratio>`` (target <= 1.3).
"""

from __future__ import annotations

import asyncio
import math
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# This file is named ray.py: keep its folder off sys.path so `import ray` finds Ray.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

from signal_eval_cli.dataset import EvalCase, EvalDataset  # noqa: E402
from signal_eval_cli.harness.entrypoints import resolve_harness  # noqa: E402
from signal_eval_cli.ray_executor import RaySettings, VariantSpec, run_dataset_ray  # noqa: E402
from signal_eval_cli.runner import RunOptions, run_dataset  # noqa: E402

CASES, ACTORS, CONCURRENCY, SLEEP_MS = 2000, 2, 100, 50.0
HARNESS = VariantSpec(f"{HERE / 'fixtures' / 'sleep_harness.py'}:create")


def dataset(cases: int = CASES) -> EvalDataset:
    checks = [{"type": "signal.contains", "pattern": "harness:end"}]
    return EvalDataset("ray-bench", [EvalCase(f"c{i}", checks, input=i) for i in range(cases)])


def main() -> None:
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    data = dataset()
    local_options = RunOptions(concurrency=ACTORS * CONCURRENCY)
    harness = resolve_harness(HARNESS.factory, {})
    started = time.perf_counter()
    local = asyncio.run(run_dataset(harness, data, local_options))
    local_s = time.perf_counter() - started
    assert local.passed_cases == CASES
    share = dataset(CASES // ACTORS)
    started = time.perf_counter()
    alone = asyncio.run(run_dataset(harness, share, RunOptions(concurrency=CONCURRENCY)))
    share_s = time.perf_counter() - started
    assert alone.passed_cases == CASES // ACTORS

    begun = time.perf_counter()
    ray.init(
        num_cpus=ACTORS,
        include_dashboard=False,
        logging_level="warning",
        _node_ip_address="127.0.0.1",
    )
    init_s = time.perf_counter() - begun
    try:
        up: list[float] = []
        settings = RaySettings(
            actors=ACTORS,
            concurrency=CONCURRENCY,
            on_actors=lambda _: up.append(time.perf_counter()),
        )
        begun = time.perf_counter()
        result = asyncio.run(run_dataset_ray(data, HARNESS, RunOptions(), settings))
        ended = time.perf_counter()
    finally:
        ray.shutdown()
    assert result.passed_cases == CASES, result
    assert [c.case_id for c in result.cases] == [c.id for c in data.cases]
    ray_s = ended - up[0]
    ideal_s = math.ceil(CASES / (ACTORS * CONCURRENCY)) * SLEEP_MS / 1000
    print(f"cases: {CASES}, actors: {ACTORS} x concurrency {CONCURRENCY}, sleep {SLEEP_MS:g} ms")
    print(f"ideal_wall_s: {ideal_s:.3f}")
    print(f"local_wall_s: {local_s:.3f} (one process, concurrency {ACTORS * CONCURRENCY})")
    print(f"ray_init_s: {init_s:.3f}")
    print(f"ray_actor_startup_s: {up[0] - begun:.3f}")
    print(f"ray_wall_s: {ray_s:.3f}")
    print(f"local_wall_vs_ideal: {local_s / ideal_s:.2f}")
    print(f"actor_share_wall_vs_ideal: {share_s / ideal_s:.2f} (one actor's share, no Ray)")
    print(f"ray_overhead_per_case_ms: {(ray_s - local_s) * 1000 / CASES:.3f} (vs local)")
    print(f"ray_wall_vs_ideal: {ray_s / ideal_s:.2f}")


if __name__ == "__main__":
    main()
