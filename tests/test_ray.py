"""The Ray executor on a real local Ray instance (ray.init(num_cpus=2)): the same results
as the local executor (minus timings) for datasets, matrices and scenarios, and every case
exactly once when an actor dies mid-run, through the library and through the CLI
(--executor ray --ray-address): one run of the installed CLI in its own process joins the
cluster end to end (check_cases); the other checks run the CLI in this process, which is
already the cluster's driver (see :func:`cli`).

One test function uses the cluster, on purpose: under pytest-xdist a second one could
start a second Ray instance on the other worker (two clusters on two cores; ``xdist_group``
does not help: ``--dist loadgroup`` of pytest-xdist 3.8 ignores it under pytest 9.2). Its
parts are the ``check_*`` functions below."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from journal_helpers import load, scenario_essence, scenario_matrix_essence, without_timings
from mock_servers import Call, MockLLMServer, Reply
from typer.testing import CliRunner

from signal_eval_cli.cli import app
from signal_eval_cli.dataset import load_dataset
from signal_eval_cli.errors import InputError
from signal_eval_cli.harness.entrypoints import resolve_harness
from signal_eval_cli.harness.recorded import RecordedTraces
from signal_eval_cli.journal import journal_path
from signal_eval_cli.matrix import MatrixOptions, Variant, run_matrix
from signal_eval_cli.providers.cassette import Cassette
from signal_eval_cli.proxy.cassette import ProxyCassette
from signal_eval_cli.ray_executor import (
    DIED,
    RaySettings,
    VariantSpec,
    run_dataset_ray,
    run_matrix_ray,
)
from signal_eval_cli.runner import RunOptions, run_dataset
from signal_eval_cli.scenarios.on_ray import _ShippedFixture
from tests import test_matrix_proxy as matrix_proxy

ray = pytest.importorskip("ray")  # installed by `make setup` (extra [ray]); CI runs this

CLI = Path(sys.executable).parent / "signal-eval"
FIXTURES = Path(__file__).parent / "fixtures"

HARNESS = """\
import asyncio
import os
import signal
from pathlib import Path

HERE = Path(__file__).parent


def create(bonus=0):
    async def run(input, ctx):
        with open(HERE / "calls.log", "a") as log:
            log.write(f"{ctx.case_id} {os.getpid()}\\n")
        await asyncio.sleep(0.01 * (input["n"] % 4))
        if input["n"] == input.get("die_at", -1):
            marker = HERE / f"died-{ctx.case_id}"
            if not marker.exists():  # the first time only: the actor's process dies
                marker.write_text("")
                os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer ends it
        if input["n"] % 5 == 3:
            raise ValueError("an errored case")
        ctx.emit("harness:end", {"output": f"out {input['n'] + bonus}", "durationMs": input["n"]})
    return run
"""


def write_eval(directory: Path, n: int, die_at: int = -1) -> Path:
    (directory / "h.py").write_text(HARNESS)
    cases = "".join(
        f"  - id: c{i}\n    input: {{n: {i}, die_at: {die_at}}}\n"
        f"    assertions: [{{type: signal.contains, pattern: harness:end}},"
        f" {{type: output.contains, text: '{i % 3}'}}]\n"
        for i in range(n)
    )
    path = directory / "eval.yaml"
    path.write_text(f"name: on-ray\nharness: h.py:create\ncases:\n{cases}")
    return path


@pytest.fixture
def cluster() -> Iterator[str]:
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        logging_level="warning",
        _node_ip_address="127.0.0.1",
    )
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


def as_dicts(result: object) -> object:
    return without_timings(result.to_dict("all"))  # type: ignore[attr-defined]


def cli(directory: Path, *args: str, env: Mapping[str, str] | None = None) -> tuple[int, str]:
    """``signal-eval *args`` run in this process from ``directory``, with ``env`` added to
    the environment: its exit code and output. The CLI's parsing and dispatch are the
    installed command's; what is saved is the same. A run on Ray joins the cluster this
    process drives (ray.init is already done), where a CLI process would import Ray and
    register a new driver and job each time: seconds of CPU per run, and tens of seconds
    on busy cores. An exception the CLI would have printed fails the check with its
    traceback."""
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        with contextlib.chdir(directory):
            done = CliRunner().invoke(app, list(args))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        raise done.exception
    return done.exit_code, done.output


@pytest.mark.long
def test_ray_equals_local_and_a_dead_actor_loses_no_case(cluster: str, tmp_path: Path) -> None:
    checks = (
        check_cases,
        check_scenarios,
        check_a_case_that_always_kills_its_worker,
        check_the_model_proxy_and_the_judge_are_served_on_the_actors,
        check_a_scenario_matrix,
        check_recorded_traces,
        check_a_matrix_serves_each_variants_proxy_on_the_actors,
        check_a_scenario_matrix_serves_each_agents_proxy_on_the_actors,
    )
    for check in checks:
        directory = tmp_path / check.__name__
        directory.mkdir()
        check(cluster, directory)


def check_cases(cluster: str, tmp_path: Path) -> None:
    # 1. library: the same results as the local executor
    lib = tmp_path / "lib"
    lib.mkdir()
    dataset = load_dataset(write_eval(lib, 30))
    spec = VariantSpec("h.py:create", {"bonus": 1}, base_dir=lib)
    options = RunOptions(concurrency=4, params={})
    local = asyncio.run(
        run_dataset(resolve_harness("h.py:create", {"bonus": 1}, base_dir=lib), dataset, options)
    )
    settings = RaySettings(address=cluster, actors=2, concurrency=4, batch=2)
    on_ray = asyncio.run(run_dataset_ray(dataset, spec, RunOptions(concurrency=4), settings))
    assert as_dicts(on_ray) == as_dicts(local)
    pids = {line.split()[1] for line in (lib / "calls.log").read_text().splitlines()[30:]}
    assert len(pids) == 2  # both actors ran cases
    variants = [
        Variant("one", "One", "h.py:create", {"bonus": 1}, base_dir=lib),
        Variant("two", "Two", "h.py:create", {"bonus": 2}, base_dir=lib),
    ]
    small = dataclasses.replace(dataset, cases=dataset.cases[:12])
    local_matrix = asyncio.run(run_matrix(variants, small, MatrixOptions(concurrency=4)))
    ray_matrix = asyncio.run(
        run_matrix_ray(variants, small, MatrixOptions(concurrency=4), settings)
    )
    # every variant's cases are equal; the ranking may break a latency tie either way
    assert as_dicts(ray_matrix)["variants"] == as_dicts(local_matrix)["variants"]

    # 2. CLI: an actor dies mid-run (case c7 kills its process the first time): every case
    #    exactly once in the results and in the journal, equal to the local run
    cli_dir = tmp_path / "cli"
    cli_dir.mkdir()
    write_eval(cli_dir, 40, die_at=7)
    (cli_dir / "died-c7").write_text("")  # the local run must not die
    local_run = subprocess.run(
        [str(CLI), "run", "eval.yaml", "-o", "local.json", "-q"],
        cwd=cli_dir,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert local_run.returncode == 1, local_run.stderr
    (cli_dir / "died-c7").unlink()
    (cli_dir / "calls.log").unlink()
    args = [
        "run",
        "eval.yaml",
        "-o",
        "ray.json",
        "-q",
        "--executor",
        "ray",
        "--ray-address",
        cluster,
    ]
    args += ["--ray-actors", "2", "--concurrency", "3"]
    done = subprocess.run(
        [str(CLI), *args], cwd=cli_dir, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1, done.stderr  # the errored cases fail, as locally
    assert "Traceback" not in done.stderr
    assert (cli_dir / "died-c7").exists()  # an actor really died
    calls = [line.split() for line in (cli_dir / "calls.log").read_text().splitlines()]
    assert [c for c, _ in calls].count("c7") == 2  # run again elsewhere
    assert len({pid for _, pid in calls}) >= 3  # two actors, then a fresh one
    saved = json.loads((cli_dir / "ray.json").read_text())["cases"]
    assert [c["caseId"] for c in saved] == [f"c{i}" for i in range(40)]
    lines = journal_path(cli_dir / "ray.json").read_text().splitlines()[1:]
    assert sorted(json.loads(x)["case"] for x in lines) == sorted(f"c{i}" for i in range(40))
    on_ray_cases, local_cases = load(cli_dir / "ray.json"), load(cli_dir / "local.json")
    for mine, theirs in zip(on_ray_cases["cases"], local_cases["cases"], strict=True):
        assert mine == theirs
    assert on_ray_cases == local_cases


ASK = (
    "import json, urllib.request as u; u.urlopen(u.Request("
    "os.environ['OPENAI_BASE_URL'] + '/chat/completions', json.dumps({'model': 'm', "
    "'messages': [{'role': 'user', 'content': 's%d'}]}).encode(), "
    "{'content-type': 'application/json', 'authorization': 'Bearer k'})).read()"
)


def write_scenarios(directory: Path, count: int) -> None:
    """``count`` scenarios over one fixture; s1 fails its goal. Each goal logs the pid of
    the process that runs it (the CLI locally, an actor on Ray) and asks a model, through
    the run's proxy, for its answer."""
    (directory / "fx").mkdir()
    (directory / "fx" / "README").write_text("fixture\n")
    (directory / "scenarios").mkdir()
    log = directory / "logs" / "goal-parents.log"
    log.parent.mkdir()  # not the project's top level: see check_a_scenario_matrix
    for i in range(count):
        script = (
            f"import os; open({str(log)!r}, 'a').write(f'{{os.getppid()}}\\n'); {ASK % i}; "
            f"raise SystemExit({int(i == 1)})"
        )
        scenario = {
            "id": f"s{i}",
            "adapterId": "python-pytest",
            "goals": [{"goal": "check", "command": "{python}", "args": ["-c", script]}],
            "fixture": {"path": "fx"},
            "agentTask": {"instruction": f"WRITE|s{i}.txt|hello s{i}\n"},
            "patternAssertions": [{"type": "file-exists", "path": f"s{i}.txt"}],
            "assertions": [{"type": "signal.count", "pattern": "goal:end", "exact": 1}],
        }
        (directory / "scenarios" / f"s{i}.json").write_text(json.dumps(scenario))


def check_scenarios(cluster: str, tmp_path: Path) -> None:
    write_scenarios(tmp_path, 4)
    common = ["scenario", "--all", "--dir", "scenarios", "--root", "."]

    def scenario(*args: str, upstream: str) -> list[str]:
        env = {"OPENAI_BASE_URL": upstream, "OPENAI_API_KEY": "sk-test"}
        code, output = cli(tmp_path, *common, *args, env=env)
        assert code == 1, output  # s1 fails, as intended
        log = tmp_path / "logs" / "goal-parents.log"
        parents = log.read_text().split()
        log.unlink()
        return parents

    # the goals' model calls recorded on Ray, then replayed here with no upstream at all
    ray_args = ["--executor", "ray", "--ray-address", cluster, "--ray-actors", "2"]
    with MockLLMServer(answer) as mock:
        args = ["-o", "ray.json", *ray_args, "--repeat", "2", "--record"]
        there = scenario(*args, upstream=mock.openai_base_url)
    assert len(mock.calls) == 8
    recorded = ProxyCassette(tmp_path / "scenarios" / "cassettes" / "s0.proxy.yaml").load()
    assert [(i.case, i.run) for i in recorded] == [("s0", 0), ("s0", 1)]
    here = scenario("-o", "local.json", upstream="http://127.0.0.1:9/v1")
    assert len(there) == 8 and len(set(there)) == 2  # two actors ran the goals
    assert not set(there) & set(here)
    local, on_ray = (
        scenario_essence(tmp_path / "local.json"),
        scenario_essence(tmp_path / "ray.json"),
    )
    saved = json.loads((tmp_path / "ray.json").read_text())["scenarios"]
    assert [(s["id"], s["run"]) for s in saved] == [(f"s{i}", r) for i in range(4) for r in (0, 1)]
    assert on_ray["scenarios"][::2] == local["scenarios"]  # run 0 of each
    assert [c["passed"] for c in on_ray["cases"]] == [True, False, True, True]
    journal = journal_path(tmp_path / "ray.json").read_text().splitlines()[1:]
    assert len(journal) == 8


def test_a_fixture_ships_to_a_worker_without_it(tmp_path: Path) -> None:
    fixture = tmp_path / "fx"
    (fixture / "src").mkdir(parents=True)
    (fixture / "src" / "app.py").write_text("print('shipped')\n")
    shipped = _ShippedFixture.of(fixture)
    assert shipped.materialize() == str(fixture)  # the same content here: used in place
    (fixture / "src" / "app.py").write_text("changed on this node\n")
    copy = Path(shipped.materialize())
    assert copy != fixture and copy.name == "fx"
    assert (copy / "src" / "app.py").read_text() == "print('shipped')\n"
    (fixture / "src" / "app.py").unlink()
    (fixture / "src").rmdir()
    fixture.rmdir()  # a node that has no such directory at all
    assert (Path(shipped.materialize()) / "src" / "app.py").read_text() == "print('shipped')\n"


def check_a_case_that_always_kills_its_worker(cluster: str, tmp_path: Path) -> None:
    (tmp_path / "h.py").write_text(
        "import os, signal\n\n"
        "def create():\n"
        "    async def run(input, ctx):\n"
        "        with open(os.path.join(os.path.dirname(__file__), 'calls.log'), 'a') as log:\n"
        "            log.write(f'{ctx.case_id}\\n')\n"
        "        if input == 'poison':\n"
        "            os.kill(os.getpid(), signal.SIGKILL)\n"
        "        ctx.emit('harness:end', {'output': input})\n"
        "    return run\n"
    )
    (tmp_path / "eval.yaml").write_text(
        "name: poison\nharness: h.py:create\ncases:\n"
        + "".join(
            f"  - {{id: {c}, input: {c}, assertions: [{{type: signal.contains, pattern: harness:end}}]}}\n"
            for c in ("fine", "poison")
        )
    )
    dataset = load_dataset(tmp_path / "eval.yaml")
    spec = VariantSpec("h.py:create", base_dir=tmp_path)
    settings = RaySettings(address=cluster, actors=1, concurrency=1, max_attempts=2)
    result = asyncio.run(run_dataset_ray(dataset, spec, RunOptions(concurrency=1), settings))
    assert [(c.case_id, c.passed, c.error) for c in result.cases] == [
        ("fine", True, None),
        ("poison", False, DIED),
    ]
    # once beside "fine" (in flight on the same actor), then alone twice: max_attempts
    assert (tmp_path / "calls.log").read_text().split().count("poison") == 3


def test_an_unreachable_ray_address_is_an_input_error_not_a_hang(tmp_path: Path) -> None:
    write_eval(tmp_path, 2)
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = ["run", "eval.yaml", "--executor", "ray", "--ray-address", f"127.0.0.1:{port}"]
    done = subprocess.run(
        [str(CLI), *args], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert f"--ray-address 127.0.0.1:{port}: cannot connect" in done.stderr
    assert "Traceback" not in done.stderr


MODEL_HARNESS = """\
import os
import signal
from pathlib import Path

import aiohttp

HERE = Path(__file__).parent


def create():
    async def run(input, ctx):
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": input}]}
        url = f"{ctx.proxy.openai_base_url}/chat/completions"
        async with aiohttp.ClientSession() as session:
            async with session.post(url, json=body, headers={"authorization": "Bearer k"}) as r:
                answer = (await r.json())["choices"][0]["message"]["content"]
        if input.endswith("die"):
            marker = HERE / f"died-{ctx.case_id}"
            if not marker.exists():  # after its model call, the first time only
                marker.write_text("")
                os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer ends it
        ctx.emit("harness:end", {"output": answer})
    return run
"""


def answer(call: Call) -> Reply:
    """The harness's calls get their prompt back; the judge passes even cases only."""
    if "impartial evaluator" in call.system:
        score = 0.2 if " odd" in call.prompt else 0.9
        return Reply(json.dumps({"scores": [{"criterion": 1, "score": score, "reason": "r"}]}))
    return Reply(f"reply to {call.last_user_text}")


def check_the_model_proxy_and_the_judge_are_served_on_the_actors(
    cluster: str, tmp_path: Path
) -> None:
    """Record the harness's model calls and the judge's on Ray (a case kills its actor
    after its call: run again, recorded once), replay here offline: the same results;
    replay on Ray: the same again, and the cassettes untouched."""
    (tmp_path / "h.py").write_text(MODEL_HARNESS)
    inputs = [f"case {i} {('odd', 'even')[i % 2 == 0]}{' die' * (i == 5)}" for i in range(8)]
    cases = "".join(
        f"  - id: c{i}\n    input: {text}\n"
        "    assertions: [{type: output.contains, text: reply}, "
        "{type: llm.judge, criteria: [is even], minScore: 0.5}]\n"
        for i, text in enumerate(inputs)
    )
    (tmp_path / "eval.yaml").write_text(
        f"name: proxied\nharness: h.py:create\njudge: {{model: openai:judge-model}}\ncases:\n{cases}"
    )
    on_ray = ["--executor", "ray", "--ray-address", cluster, "--ray-actors", "2"]

    def run(*args: str, upstream: str) -> None:
        env = {"OPENAI_BASE_URL": upstream, "OPENAI_API_KEY": "sk-test"}
        code, output = cli(tmp_path, "run", "eval.yaml", "-q", "--concurrency", "2", *args, env=env)
        assert code == 1, output  # the odd cases fail their judge

    with MockLLMServer(answer) as mock:
        run("--record", "-o", "recorded.json", *on_ray, upstream=mock.openai_base_url)
        harness_calls = [c.last_user_text for c in mock.calls if "impartial" not in c.system]
    assert (tmp_path / "died-c5").exists()  # an actor really died, after c5's call
    # c5 ran twice; a case in flight beside it on the actor that died may have made its
    # call too before it ran again elsewhere
    assert set(harness_calls) == set(inputs) and harness_calls.count(inputs[5]) == 2
    proxy_cassette = tmp_path / "cassettes" / "eval.proxy.yaml"
    judge_cassette = tmp_path / "cassettes" / "eval.judge.yaml"
    recorded = [(i.case, i.run, i.call) for i in ProxyCassette(proxy_cassette).load()]
    assert recorded == [(f"c{i}", 0, 0) for i in range(8)]  # c5 once, though called twice
    assert len(list(Cassette.load(judge_cassette))) == 8
    saved = proxy_cassette.read_text(), judge_cassette.read_text()

    offline = "http://127.0.0.1:9/v1"  # nothing listens: replays only
    run("-o", "local.json", upstream=offline)
    run("-o", "replayed.json", *on_ray, upstream=offline)
    local = load(tmp_path / "local.json")
    assert [c["passed"] for c in local["cases"]] == [i % 2 == 0 for i in range(8)]
    assert load(tmp_path / "recorded.json") == local
    assert load(tmp_path / "replayed.json") == local
    assert (proxy_cassette.read_text(), judge_cassette.read_text()) == saved


AGENT = (
    "import os, pathlib, sys; here = pathlib.Path({here!r}); "
    "pathlib.Path('answer.txt').write_text(sys.argv[1]); "
    "marker = here / 'died'; die = sys.argv[1] == '42' and not marker.exists(); "
    "die and (marker.write_text(''), os.kill(os.getppid(), 9))"
)
GOAL = (
    "import os, pathlib; open({log!r}, 'a').write(f'{{os.getppid()}}\\n'); "
    "raise SystemExit(pathlib.Path('answer.txt').read_text() != '42')"
)


def check_a_scenario_matrix(cluster: str, tmp_path: Path) -> None:
    """A matrix of agents over scenarios on Ray: the local executor's results (minus
    timings); the right agent kills its actor the first time: that run, and the runs in
    flight beside it, run again, each kept once."""
    (tmp_path / "fx").mkdir()
    (tmp_path / "fx" / "README").write_text("fixture\n")
    (tmp_path / "scenarios").mkdir()
    # Not at the project's top level, which is watched for new entries while an agent
    # runs: created there by one scenario's goal while another's agent ran, it failed that
    # scenario as an escape (a suite run at load 10-15, issue 19).
    log = tmp_path / "logs" / "goal-parents.log"
    log.parent.mkdir()
    for i in range(3):
        scenario = {
            "id": f"s{i}",
            "adapterId": "python-pytest",
            "goals": [
                {"goal": "check", "command": "{python}", "args": ["-c", GOAL.format(log=str(log))]}
            ],
            "fixture": {"path": "../fx"},
            "patternAssertions": [{"type": "file-exists", "path": "answer.txt"}],
        }
        (tmp_path / "scenarios" / f"s{i}.json").write_text(json.dumps(scenario))
    agent = AGENT.format(here=str(tmp_path))
    variants = [
        {"id": v, "name": v.title(), "agent": {"command": ["{python}", "-c", agent, n]}}
        for v, n in (("wrong", "41"), ("right", "42"))
    ]
    (tmp_path / "m.yaml").write_text(
        json.dumps({"name": "agents", "scenarios": ["scenarios/*.json"], "variants": variants})
    )

    def matrix(*args: str) -> list[str]:
        code, output = cli(
            tmp_path, "matrix", "m.yaml", "--repeat", "2", "--concurrency", "2", *args
        )
        assert code == 0, output
        parents = log.read_text().split()
        log.unlink()
        return parents

    (tmp_path / "died").write_text("")  # the local run must not die
    here = matrix("-o", "local.json")
    (tmp_path / "died").unlink()
    there = matrix(
        "-o", "ray.json", "--executor", "ray", "--ray-address", cluster, "--ray-actors", "2"
    )
    assert (tmp_path / "died").exists()  # an actor really died
    assert len(here) == 12 and len(set(here)) == 1
    assert len(there) >= 12 and len(set(there)) >= 2 and not set(there) & set(here)
    on_ray, local = load(tmp_path / "ray.json"), load(tmp_path / "local.json")
    assert [v["variantId"] for v in on_ray["variants"]] == ["wrong", "right"]
    for variant in on_ray["variants"]:
        assert [(c["caseId"], c["outcomes"]) for c in variant["result"]["cases"]] == [
            (f"s{i}", [variant["variantId"] == "right"] * 2) for i in range(3)
        ]
    # the ranking by pass rate is the same; latency tradeoffs are timings
    assert on_ray["recommendation"]["variantId"] == local["recommendation"]["variantId"] == "right"
    assert on_ray["comparison"]["byPassRate"] == local["comparison"]["byPassRate"]
    essence = scenario_matrix_essence
    assert essence(tmp_path / "ray.json") == essence(tmp_path / "local.json")
    journal = journal_path(tmp_path / "ray.json")
    lines = journal.read_text().splitlines(keepends=True)
    keys = sorted((json.loads(x)["variant"], json.loads(x)["case"]) for x in lines[1:])
    assert keys == sorted(
        (f"{v}#{r}", f"s{i}") for v in ("wrong", "right") for r in (0, 1) for i in range(3)
    )
    journal.write_text("".join(lines[:6]))  # a crash after 5 of the 12 runs: resume on Ray
    on_ray_args = ["--executor", "ray", "--ray-address", cluster, "--ray-actors", "2"]
    assert len(matrix("-o", "ray.json", "--resume", *on_ray_args)) == 7
    assert essence(tmp_path / "ray.json") == essence(tmp_path / "local.json")


def check_recorded_traces(cluster: str, tmp_path: Path) -> None:
    """``run --traces`` on Ray: the traces travel to the actors with the run (evaluated
    there with no traces directory at all), the local executor's results."""
    traces = tmp_path / "traces"
    traces.mkdir()
    for i in range(6):
        signals = [
            {"name": "harness:start", "payload": {"input": i}},
            {"name": "tool:call", "payload": {"name": "Edit" if i % 2 else "Read"}},
            {"name": "harness:end", "payload": {"output": f"answer {i}"}},
        ]
        (traces / f"t{i}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in signals))
    shutil.copy(FIXTURES / "traces" / "agents_simple.json", traces / "imported.json")
    cases = "".join(
        f"  - {{id: {c}, assertions: [{{type: tool.called, name: Edit}},"
        f" {{type: signal.count, pattern: 'tool:*', max: {n % 3}}}]}}\n"
        for n, c in enumerate([*(f"t{i}" for i in range(6)), "imported"])
    )
    (tmp_path / "eval.yaml").write_text(f"name: traced\ncases:\n{cases}")

    def run(*args: str) -> Any:
        code, output = cli(tmp_path, "run", "eval.yaml", "--traces", "traces", "-q", *args)
        assert code == 1, output  # some cases fail, as locally
        return load(tmp_path / args[1])

    local = run("-o", "local.json")
    on_ray = run(
        "-o", "ray.json", "--executor", "ray", "--ray-address", cluster, "--ray-actors", "2"
    )
    assert {c["passed"] for c in local["cases"]} == {True, False}
    assert on_ray == local

    dataset = load_dataset(tmp_path / "eval.yaml")
    recorded = RecordedTraces(traces, [c.id for c in dataset.cases])
    shutil.rmtree(traces)  # read once, here: the actors never look for it
    settings = RaySettings(address=cluster, actors=2, concurrency=2)
    spec = VariantSpec("", built=recorded)
    result = asyncio.run(run_dataset_ray(dataset, spec, RunOptions(concurrency=2), settings))
    here = asyncio.run(run_dataset(recorded, dataset, RunOptions(concurrency=2)))
    assert as_dicts(result) == as_dicts(here)


class LockedJudge:
    """A library judge holding what cannot be pickled (a lock, as clients do)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def judge(self, request: object) -> object:
        raise AssertionError("never called: the run stops before any case")


def test_a_judge_that_cannot_travel_is_an_input_error_before_ray_starts(tmp_path: Path) -> None:
    dataset = load_dataset(write_eval(tmp_path, 3))
    spec = VariantSpec("h.py:create", base_dir=tmp_path)
    options = RunOptions(concurrency=2, judge=LockedJudge())  # type: ignore[arg-type]
    settings = RaySettings(address="127.0.0.1:9", actors=1)  # never reached
    with pytest.raises(InputError) as caught:
        asyncio.run(run_dataset_ray(dataset, spec, options, settings))
    message = str(caught.value)
    assert message.startswith(
        "--executor ray: options.judge (test_ray.LockedJudge) cannot be sent to the actors: "
        "cannot pickle '_thread.lock' object."
    )
    assert "a __reduce__ that builds it again from its settings on the actor" in message
    assert not ray.is_initialized() and not (tmp_path / "calls.log").exists()


def matrix(project: Path, upstream: str, *args: str) -> tuple[int, str]:
    """test_matrix_proxy's run of ``pick.yaml`` (:func:`matrix_proxy.cli`), in this process."""
    env = {"OPENAI_BASE_URL": upstream, "OPENAI_API_KEY": matrix_proxy.SECRET}
    command = ["matrix", "pick.yaml", "-o", "out.json", "--signals", "all", *args]
    return cli(project, *command, env=env)


def check_a_matrix_serves_each_variants_proxy_on_the_actors(cluster: str, tmp_path: Path) -> None:
    """Record a matrix on Ray: each variant's calls go to its own cassette (the actors'
    copies of its proxy hand them back); replay on Ray and here, offline: the same."""
    matrix_proxy.matrix_file(tmp_path)
    on_ray = ["--executor", "ray", "--ray-address", cluster, "--ray-actors", "2"]
    with MockLLMServer(matrix_proxy.reply) as mock:
        code, output = matrix(tmp_path, mock.openai_base_url, "--record", *on_ray)
        assert code == 0, output
        assert len(mock.calls) == 6
    for variant, prompt in (("terse", "Be terse"), ("wordy", "Be wordy")):
        calls = ProxyCassette(tmp_path / "cassettes" / f"pick.{variant}.proxy.yaml").load()
        assert sorted(i.case for i in calls) == ["a", "b", "c"]
        assert all(i.body["messages"][0]["content"].startswith(prompt) for i in calls)
    first = matrix_proxy.comparable(tmp_path)
    assert [c[1] for c in first["wordy"]] == [True, True, False]
    for args in (on_ray, []):
        code, output = matrix(tmp_path, matrix_proxy.DEAD, *args)
        assert code == 0, output
        assert matrix_proxy.comparable(tmp_path) == first


def check_a_scenario_matrix_serves_each_agents_proxy_on_the_actors(
    cluster: str, tmp_path: Path
) -> None:
    """Two command agents over a scenario, recorded on Ray (each variant's calls to its
    own cassette), replayed on Ray offline: the same results."""
    from tests.test_scenario_proxy import responder

    matrix_proxy.scenario_matrix(tmp_path)
    on_ray = ["--executor", "ray", "--ray-address", cluster, "--ray-actors", "2"]
    with MockLLMServer(responder) as mock:
        code, output = matrix(tmp_path, mock.openai_base_url, "--record", *on_ray)
        assert code == 0, output
        assert len(mock.calls) == 6
    for variant in ("greeting", "farewell"):
        calls = ProxyCassette(tmp_path / "cassettes" / f"pick.{variant}.proxy.yaml").load()
        assert sum(f"fix the {variant}" in json.dumps(i.body) for i in calls) == 2
    first = matrix_proxy.comparable(tmp_path)
    assert [c[1] for v in first.values() for c in v] == [True, True]
    code, output = matrix(tmp_path, matrix_proxy.DEAD, *on_ray)
    assert code == 0, output
    assert matrix_proxy.comparable(tmp_path) == first
