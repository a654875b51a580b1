"""The library owns run configuration: ``run_configured`` is ``signal-eval run`` in one call.

The same dataset run by the CLI (a real process) and by :func:`run_configured` gives the
same results JSON (timings and ids aside); a judge records into its cassette and replays
offline from Python alone; a matrix variant and ``run`` build a harness the one way.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import review_trace
from flows_helpers import cli, project_copy
from mock_servers import Call, MockLLMServer, Reply

from signal_eval_cli import load_dataset, save_result
from signal_eval_cli.configured_dataset import run_configured
from signal_eval_cli.dataset import HarnessSpec
from signal_eval_cli.errors import InputError
from signal_eval_cli.harness.protocol import wants_proxy
from signal_eval_cli.harness.reactive import ReactiveHarness
from signal_eval_cli.matrix import Variant, built_variants
from signal_eval_cli.paths import harness_cassette
from signal_eval_cli.reports.reporters import reports_per_dataset
from signal_eval_cli.run_config import (
    ProviderPolicy,
    build_harness,
    default_cassette,
    harness_spec,
    judge_cassette,
    load_datasets,
)
from signal_eval_cli.runner import RunOptions

KEY = "sk-test-run-config-5e5e5e"
TIMINGS = {"durationMs", "startedAt", "completedAt", "timestamp", "id", "parent", "evaluationMs"}
"""Fields whose values are clocks or generated ids, different in every run."""
LATENCY_RANKINGS = {"byLatency", "paretoFrontier", "tradeoffs"}


def without_timings(data: Any) -> Any:
    """The results JSON without what differs from run to run: clocks, generated ids,
    latencies (replayed calls wait their recorded time, give or take the machine's load)
    and what is computed from them (a latency assertion's message, the case index's hash,
    a matrix's ordering by latency, its Pareto frontier and the recommendation's
    trade-offs, whose "64% faster" moves with the machine's load as the latencies do)."""
    if isinstance(data, dict):
        if str((data.get("assertion") or {}).get("type", "")).startswith("metric.latency"):
            data = {k: v for k, v in data.items() if k not in ("message", "actual")}
        data = {k: v for k, v in data.items() if k not in LATENCY_RANKINGS}
        return {
            k: without_timings(v)
            for k, v in data.items()
            if k not in TIMINGS and not k.lower().endswith("latencyms") and k != "caseIndexSha256"
        }
    if isinstance(data, list):
        return [without_timings(v) for v in data]
    return data


def test_the_cli_and_one_library_call_give_the_same_results(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    done = cli("run", "datasets/code-review.yaml", "-q", "-o", "cli.json", cwd=project)
    assert done.returncode == 1, done.stderr  # the example has failing cases, by design
    result = asyncio.run(
        run_configured(project / "datasets/code-review.yaml", ProviderPolicy(replay=True))
    )
    save_result(result, project / "lib.json")
    from_cli = json.loads((project / "cli.json").read_text())
    from_library = json.loads((project / "lib.json").read_text())
    assert from_cli["totalCases"] == 11
    assert without_timings(from_library) == without_timings(from_cli)


def judged(tmp_path: Path) -> Path:
    path = tmp_path / "judged.yaml"
    criteria = {"type": "llm.judge", "criteria": ["names the vulnerability"], "minScore": 0.7}
    path.write_text(
        json.dumps({"name": "judged", "cases": [{"id": "good", "assertions": [criteria]}]})
    )
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "good.jsonl").write_text(
        "\n".join(json.dumps(s.to_dict()) for s in review_trace()) + "\n"
    )
    return path


def test_a_judge_records_then_replays_offline_in_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    verdict = json.dumps({"scores": [{"criterion": 1, "score": 0.9, "reason": "named"}]})
    dataset = judged(tmp_path)
    with MockLLMServer() as server:
        server.responder = lambda call: Reply(verdict)
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        policy = ProviderPolicy(record=True, judge_model="openai:judge-model")
        recorded = asyncio.run(run_configured(dataset, policy, traces=tmp_path / "traces"))
        calls: list[Call] = list(server.calls)
    assert len(calls) == 1 and recorded.cases[0].passed
    assert (tmp_path / "cassettes" / "judged.judge.yaml").is_file()
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens
    monkeypatch.delenv("OPENAI_API_KEY")
    policy = ProviderPolicy(replay=True, judge_model="openai:judge-model")
    replayed = asyncio.run(run_configured(dataset, policy, traces=tmp_path / "traces"))
    assert without_timings([a.to_dict() for a in replayed.cases[0].assertions]) == (
        without_timings([a.to_dict() for a in recorded.cases[0].assertions])
    )


def test_replaying_a_judge_without_its_cassette_is_bad_input(tmp_path: Path) -> None:
    policy = ProviderPolicy(replay=True, judge_model="openai:judge-model")
    with pytest.raises(InputError, match="judge cassette not found"):
        asyncio.run(run_configured(judged(tmp_path), policy, traces=tmp_path / "traces"))


def test_two_modes_at_once_are_bad_input() -> None:
    with pytest.raises(InputError, match="choose one of --record, --replay"):
        _ = ProviderPolicy(record=True, replay=True).mode


def test_a_variant_and_a_run_build_the_harness_the_one_way() -> None:
    dataset = load_dataset(Path("datasets/code-review.yaml"))
    built = build_harness(dataset)
    assert isinstance(built, ReactiveHarness) and not wants_proxy(built)
    variant = Variant("v", "v").build(dataset)
    assert isinstance(variant, ReactiveHarness)
    assert variant.spec.agents == built.spec.agents
    spec = harness_spec(dataset, "reactive", {"agents": "agents/code-review.yaml"})
    assert spec == HarnessSpec("reactive", {"agents": "agents/code-review.yaml"})
    ready = object()
    assert Variant("v", "v", harness=ready).build(dataset) is ready
    both = built_variants([Variant("v", "v"), Variant("r", "r", harness=ready)], dataset)
    assert isinstance(both[0].harness, ReactiveHarness) and both[1].harness is ready
    assert [v.id for v in both] == ["v", "r"]  # the variants as given, their harness built


def test_a_dataset_without_a_harness_says_how_to_name_one(tmp_path: Path) -> None:
    path = tmp_path / "bare.yaml"
    path.write_text(json.dumps({"name": "bare", "cases": [{"id": "a", "assertions": []}]}))
    with pytest.raises(InputError, match="the dataset names no harness"):
        build_harness(load_dataset(path))
    with pytest.raises(InputError, match="variant 'v' names no harness"):
        Variant("v", "v").build(load_dataset(path))
    with pytest.raises(InputError, match="variant 'w' names no harness"):
        built_variants([Variant("w", "w")], load_dataset(path))


def test_the_harness_cassette_follows_one_rule(tmp_path: Path) -> None:
    """The run's provider options and the reactive harness name the same cassette."""
    dataset = load_dataset(Path("datasets/code-review.yaml"))
    assert dataset.path is not None
    here = dataset.path.resolve().parent
    assert default_cassette(dataset, {}) == here / "cassettes" / "code-review.yaml"
    assert default_cassette(dataset, {"cassette": "c/x.yaml"}) == here / "c" / "x.yaml"
    assert harness_cassette(None, dataset.path) == default_cassette(dataset, {})
    assert harness_cassette("x.yaml", None, tmp_path) == tmp_path / "x.yaml"
    assert harness_cassette(None, None) is None
    assert judge_cassette(here / "c.yaml") == here / "c.judge.yaml"
    replayed = build_harness(dataset)
    assert isinstance(replayed, ReactiveHarness)
    assert Path(replayed.provider.path) == default_cassette(dataset, {})  # type: ignore[attr-defined]


# -- the datasets a run names, and their reports --------------------------------------------------

ONE = (
    "name: {name}\nharness: {harness}\ncases:\n  - {{id: a, tags: [{tag}], input: 1,"
    " assertions: [{{type: signal.contains, pattern: 'harness:end'}}]}}\n"
)


def _write(tmp_path: Path, stem: str, *, tag: str = "x", harness: str = "h.py:create") -> Path:
    (tmp_path / "h.py").write_text("def create():\n    return lambda input, ctx: []\n")
    path = tmp_path / f"{stem}.yaml"
    path.write_text(ONE.format(name=stem, tag=tag, harness=harness))
    return path


def test_datasets_the_filters_select_nothing_from_are_skipped_with_a_note(tmp_path: Path) -> None:
    paths = [_write(tmp_path, "one", tag="x"), _write(tmp_path, "two", tag="y")]
    notes: list[str] = []
    loaded = load_datasets(paths, RunOptions(tags=["y"]), note=notes.append)
    assert [d.name if d else None for d in loaded] == [None, "two"]
    assert notes == [f"{paths[0]}: no case selected by the filters: not run"]
    with pytest.raises(InputError, match="no case matches --tag z"):
        load_datasets(paths, RunOptions(tags=["z"]), note=notes.append)  # none selects any
    with pytest.raises(InputError, match="no case id matches --case 'b'"):
        load_datasets(paths[:1], RunOptions(case_ids=["b"]))


def test_every_dataset_s_problem_is_reported_at_once_and_traces_run_no_harness(
    tmp_path: Path,
) -> None:
    paths = [
        _write(tmp_path, "one", harness="missing.py:create"),
        _write(tmp_path, "two", harness="absent.py:create"),
    ]
    with pytest.raises(InputError) as caught:
        load_datasets(paths, RunOptions())
    assert len(caught.value.problems) == 2
    assert [d.name for d in load_datasets(paths, RunOptions(), traces=True) if d] == ["one", "two"]


def test_each_dataset_of_a_run_gets_its_own_report_files(tmp_path: Path) -> None:
    datasets = [Path("d/a.yaml"), Path("e/b.yaml")]
    paths = {"json": Path("out/{dataset}.json"), "markdown": Path("all.md"), "junit": None}
    assert reports_per_dataset(datasets, paths) == [
        {"json": Path("out/a.json"), "markdown": Path("all.md"), "junit": None},
        {"json": Path("out/b.json"), "markdown": Path("all.md"), "junit": None},
    ]
    with pytest.raises(InputError, match="--output: with several datasets each writes its own"):
        reports_per_dataset(datasets, {"json": Path("out.json")})
    with pytest.raises(InputError, match="two datasets are named a"):
        reports_per_dataset([Path("d/a.yaml"), Path("e/a.yaml")], paths)
    assert reports_per_dataset(datasets[:1], {"json": Path("out.json")}) == [
        {"json": Path("out.json")}
    ]


def test_live_calls_the_model_though_a_cassette_exists_and_records_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--live`` passes through, for the built-in harness's provider and the judge as for
    the model proxy: it replayed their cassettes when they existed (as the default does)."""
    from mock_servers import code_review_responder

    project = project_copy(tmp_path)
    dataset = project / "datasets/code-review.yaml"
    cassette = project / "datasets/cassettes/code-review.yaml"
    before = cassette.read_bytes()
    with MockLLMServer(code_review_responder) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        policy = ProviderPolicy(provider="openai:gpt-4o-mini", live=True, note=lambda _: None)
        load = RunOptions(case_ids=("sql-injection",))
        asyncio.run(run_configured(dataset, policy, options=load))
        assert server.calls, "no call reached the model"
    assert cassette.read_bytes() == before

    verdict = json.dumps({"scores": [{"criterion": 1, "score": 0.1, "reason": "live"}]})
    judged_dataset = judged(tmp_path)
    judge_cassette_path = tmp_path / "cassettes" / "judged.judge.yaml"
    with MockLLMServer() as server:
        server.responder = lambda call: Reply(verdict)
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        asyncio.run(
            run_configured(
                judged_dataset,
                ProviderPolicy(record=True, judge_model="openai:judge-model"),
                traces=tmp_path / "traces",
            )
        )
        recorded = judge_cassette_path.read_bytes()
        live = asyncio.run(
            run_configured(
                judged_dataset,
                ProviderPolicy(live=True, judge_model="openai:judge-model"),
                traces=tmp_path / "traces",
            )
        )
        assert len(server.calls) == 2  # the record run's call, and the live run's own
    assert not live.cases[0].passed and judge_cassette_path.read_bytes() == recorded


def test_validate_refuses_a_dataset_with_no_cases_as_every_run_does(tmp_path: Path) -> None:
    """``validate`` said ``cases: []`` was ok, and ``run`` then refused it (exit 2, with no
    line); ``matrix`` ran it and recommended a variant from 0/0 cases. Now each says the
    one located thing; ``import --case-into`` still starts from such a file."""
    from signal_eval_cli.matrix_files import load_matrix
    from signal_eval_cli.traces.cases import import_cases
    from signal_eval_cli.validate import validate_path

    empty = _write(tmp_path, "empty")
    empty.write_text("name: e\nharness: h.py:create\ncases: []\n")
    full = _write(tmp_path, "full")
    located = f"{empty}:3:8: the dataset has no cases: nothing to run ("
    assert [str(p)[: len(located)] for p in validate_path(empty)[1]] == [located]
    for harness, traces in ((None, False), ("h.py:create", False), (None, True)):
        with pytest.raises(InputError) as refused:  # alone or beside another dataset
            load_datasets([empty, full], RunOptions(), harness=harness, traces=traces)
        assert [str(p)[: len(located)] for p in refused.value.problems] == [located]
    matrix = tmp_path / "m.yaml"
    matrix.write_text("name: m\ndataset: empty.yaml\nvariants: [{id: a, name: A}]\n")
    message = f"{matrix}:2:10: empty.yaml: the dataset has no cases: nothing to run"
    assert [str(p) for p in validate_path(matrix)[1]] == [message]
    with pytest.raises(InputError) as refused:
        load_matrix(matrix)
    assert [str(p) for p in refused.value.problems] == [message]
    import_cases([Path(__file__).parent / "fixtures/traces/agents_simple.json"], empty)
    assert validate_path(empty) == ("dataset", [])
    bare = tmp_path / "bare.yaml"  # `run` refuses it without --harness or --traces: said
    bare.write_text("name: b\ncases: [{id: a, assertions: []}]\n")
    assert validate_path(bare) == (
        "dataset; it names no harness: run it with --harness or --traces",
        [],
    )


def test_validate_reads_a_results_file_as_compare_does(tmp_path: Path) -> None:
    """``validate`` checked a results file against the schema that writes it: a case
    without ``assertions`` (which compare and report read as none) was refused, and a
    file of another schemaVersion said "'schemaVersion': 1 was expected"."""
    from signal_eval_cli.validate import validate_path

    data = json.loads(Path(__file__).parent.joinpath("golden/code-review.json").read_text())
    del data["cases"][0]["assertions"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    assert validate_path(path) == ("result", [])
    path.write_text(json.dumps({**data, "schemaVersion": 99}))
    assert [str(p) for p in validate_path(path)[1]] == [
        f"{path}:1:1: result schemaVersion 99 is not supported (this version reads 1); "
        "re-run to regenerate it"
    ]


def test_every_variant_that_cannot_be_built_is_said_at_once(tmp_path: Path) -> None:
    """``matrix`` stopped at the first variant whose factory raised: a second one's wrong
    params were said only after the first was fixed (``validate``, which builds nothing,
    said the second only)."""
    (tmp_path / "h.py").write_text(
        "def create(mode='ok'):\n"
        "    if mode == 'crash':\n        raise RuntimeError('factory exploded')\n"
        "    return lambda input, ctx: []\n"
    )
    path = tmp_path / "d.yaml"
    path.write_text("name: d\nharness: h.py:create\ncases: [{id: a, assertions: []}]\n")
    variants = [
        Variant("crash", "c", params={"mode": "crash"}),
        Variant("ok", "o"),
        Variant("typo", "t", params={"mdoe": "x"}),
    ]
    with pytest.raises(InputError) as refused:
        built_variants(variants, load_dataset(path))
    assert [p.message.split(":")[0] for p in refused.value.problems] == [
        "variant 'crash'",
        "variant 'typo'",
    ]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"harness": "h.py:create"}, "--harness with --traces: recorded traces run no harness"),
        ({"params": {"model": "x"}}, "--param with --traces"),
        ({"harness": "h.py:create", "params": {"a": 1}}, "--harness and --param with --traces"),
    ],
)
def test_harness_options_beside_traces_are_refused_not_ignored(
    tmp_path: Path, given: dict[str, Any], said: str
) -> None:
    """``run --traces DIR --harness h.py:create`` evaluated the traces and dropped the
    harness without a word: the user meant one of the two."""
    with pytest.raises(InputError, match=said):
        load_datasets([_write(tmp_path, "one")], RunOptions(), traces=True, **given)
