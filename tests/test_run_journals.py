"""Each kind of run's journal, from the library (``run_journals``): the header a command
writes, the line of each unit, and what a resumed journal keeps — read back through
``resume.open_journal`` as ``--resume`` does. In process: no CLI needed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from results_helpers import case

from signal_eval_cli.dataset import load_dataset
from signal_eval_cli.matrix import MatrixFile, MatrixOptions, Variant
from signal_eval_cli.resume import JournalPlan, matrix_slot, open_journal
from signal_eval_cli.run_config import ProviderPolicy
from signal_eval_cli.run_journals import (
    case_entry,
    dataset_header,
    kept_cases,
    kept_matrix_cases,
    kept_scenario_matrix,
    kept_scenarios,
    matrix_header,
    scenario_entry,
    scenario_matrix_entry,
    scenarios_header,
)
from signal_eval_cli.runner import RunOptions, not_run
from signal_eval_cli.scenarios import ScenarioResult, parse_scenario
from signal_eval_cli.sharding import parse_shard

DATASET = """\
name: three
harness: h.py:create
cases:
  - {id: a, input: 1, tags: [x], assertions: [{type: signal.contains, pattern: 'harness:end'}]}
  - {id: b, input: 2, assertions: [{type: signal.contains, pattern: 'harness:end'}]}
  - {id: c, input: 3, tags: [x], assertions: [{type: signal.contains, pattern: 'harness:end'}]}
"""


GOALS = [{"goal": "g", "command": "true"}]


def _dataset(tmp_path: Path):  # type: ignore[no-untyped-def]
    (tmp_path / "h.py").write_text("def create():\n    return lambda input, ctx: []\n")
    (tmp_path / "eval.yaml").write_text(DATASET)
    return load_dataset(tmp_path / "eval.yaml")


def _resumed(tmp_path: Path, header, entries) -> JournalPlan:  # type: ignore[no-untyped-def]
    """Write ``entries`` under ``header``, then open the journal again as --resume does."""
    output = tmp_path / "out.json"
    plan = open_journal(output, header)
    for entry in entries:
        plan.record(*entry)
    plan.close()
    resumed = open_journal(output, header, resume=True)
    resumed.close()
    return resumed


def test_a_dataset_header_lists_every_shard_s_cases_and_fingerprints_what_changes_results(
    tmp_path: Path,
) -> None:
    dataset = _dataset(tmp_path)
    flags = ProviderPolicy()
    options = RunOptions(tags=["x"], shard=parse_shard("2/2"), timeout=5.0)
    header = dataset_header(dataset, options, flags, harness=None, params={}, traces=None)
    assert (header.kind, header.name, header.order) == ("dataset", "three", ["a", "c"])
    first = dataset_header(
        dataset,
        replace(options, shard=parse_shard("1/2")),
        flags,
        harness=None,
        params={},
        traces=None,
    )
    assert header.shard == (2, 2) and first.order == header.order  # every shard's cases
    assert sorted(header.own_ids() + first.own_ids()) == ["a", "c"]
    again = dataset_header(dataset, options, flags, harness=None, params={}, traces=None)
    assert again.fingerprint == header.fingerprint
    for changed in (
        dataset_header(dataset, options, flags, harness=None, params={"k": 1}, traces=None),
        dataset_header(
            dataset, options, ProviderPolicy(judge_model="m"), harness=None, params={}, traces=None
        ),
        dataset_header(
            dataset,
            RunOptions(tags=["x"], timeout=6.0),
            flags,
            harness=None,
            params={},
            traces=None,
        ),
    ):
        assert changed.fingerprint["params"] != header.fingerprint["params"]


def test_finished_cases_come_back_kept_and_a_case_fail_fast_never_started_does_not(
    tmp_path: Path,
) -> None:
    dataset = _dataset(tmp_path)
    header = dataset_header(
        dataset, RunOptions(), ProviderPolicy(), harness=None, params={}, traces=None
    )
    never = not_run(dataset.cases[2])
    assert case_entry(never) is None
    failed = case("b", False)
    entries = [case_entry(case("a")), case_entry(failed)]
    plan = _resumed(tmp_path, header, [e for e in entries if e is not None])
    kept = kept_cases(plan)
    assert list(kept) == ["a", "b"]
    assert kept["b"].to_dict("all") == failed.to_dict("all")


def test_a_matrix_keeps_each_variant_s_cases_of_this_shard_only(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path)
    matrix = MatrixFile(
        "m", dataset, [Variant("v1", "One"), Variant("v2", "Two", metadata={"k": 1})]
    )
    options = MatrixOptions(shard=parse_shard("1/2"))
    header = matrix_header(matrix, options, repeat=None)
    assert header.order == ["a", "b", "c"] and header.shard == (1, 2)
    assert [v["id"] for v in header.variants] == ["v1", "v2"]
    assert header.variants[1]["metadata"] == {"k": 1}
    mine = header.own_ids()
    other = next(i for i in header.order if i not in mine)
    entries = [case_entry(case(mine[0]), "v2"), case_entry(case(other), "v2")]
    plan = JournalPlan(None, kept={key: data for key, data in entries if key})  # type: ignore[misc]
    kept = kept_matrix_cases(plan, matrix, options)
    assert kept == {"v1": {}, "v2": {mine[0]: kept["v2"][mine[0]]}}


def test_scenario_runs_come_back_kept_by_id_and_run_with_their_tags(tmp_path: Path) -> None:
    (tmp_path / "fx").mkdir()
    scenarios = [
        parse_scenario(
            {"id": sid, "adapterId": "python-pytest", "goals": GOALS, "fixture": {"path": "fx"}},
            str(tmp_path / f"{sid}.json"),
        )
        for sid in ("s1", "s2", "s3")
    ]
    header = scenarios_header(scenarios, root=tmp_path, repeat=2, shard=parse_shard("1/3"))
    assert (header.kind, header.order, header.shard) == ("scenarios", ["s1", "s2", "s3"], (1, 3))
    assert [v["id"] for v in header.variants] == ["", "run1"]  # run 0 is a plain run's slot
    once = scenarios_header(scenarios, root=tmp_path, repeat=1, shard=None)
    assert once.fingerprint["params"] != header.fingerprint["params"]
    second = ScenarioResult("s2", False, tags=["slow"], run=1, error="boom")
    plan = _resumed(
        tmp_path, header, [scenario_entry(ScenarioResult("s1", True)), scenario_entry(second)]
    )
    kept = kept_scenarios(plan)
    assert list(kept) == [("s1", 0), ("s2", 1)]
    assert kept[("s2", 1)].tags == ["slow"] and kept[("s2", 1)].error == "boom"


def test_a_matrix_over_scenarios_keeps_runs_by_variant_scenario_and_run() -> None:
    entry = scenario_matrix_entry("v#2", ScenarioResult("s", True, tags=["t"], run=1))
    assert entry[0] == (matrix_slot("v#2", 1), "s")
    kept = kept_scenario_matrix(JournalPlan(None, kept=dict([entry])))
    assert list(kept) == [("v#2", "s", 1)] and kept[("v#2", "s", 1)].tags == ["t"]


def test_a_run_s_result_is_what_its_journal_holds_built_as_its_kind(tmp_path: Path) -> None:
    """``JournalPlan.result`` (what every command's results are): the journal's lines
    built as the header's kind of run, with the timings of the run that wrote them."""
    from results_helpers import dataset

    from signal_eval_cli.resume import build_result

    data = _dataset(tmp_path)
    header = dataset_header(
        data, RunOptions(), ProviderPolicy(), harness=None, params={}, traces=None
    )
    ran = dataset(case("a"), case("b", False))
    ran.duration_ms, ran.started_at = 1234.0, "2026-11-27T12:00:00Z"
    assert JournalPlan(None).result(header, ran) is ran  # no journal: the run's own result
    plan = open_journal(tmp_path / "out.json", header)
    plan.record(*case_entry(case("c")))  # type: ignore[misc]
    plan.record(*case_entry(case("a", False)))  # type: ignore[misc]
    built = plan.result(header, ran)
    assert [(c.case_id, c.passed) for c in built.cases] == [("a", False), ("b", False), ("c", True)]
    assert (built.duration_ms, built.started_at) == (1234.0, "2026-11-27T12:00:00Z")
    scenarios = scenarios_header([], root=tmp_path, repeat=1, shard=None)
    entries = dict([scenario_entry(ScenarioResult("s", True, tags=["t"]))])
    scenarios.order = ["s"]
    assert build_result(scenarios, entries).kind == "scenarios"
    assert build_result(scenarios, entries).scenarios[0].tags == ["t"]


def test_a_run_s_cases_are_built_with_their_signals_as_the_journal_holds_them(
    tmp_path: Path,
) -> None:
    """The cases a run recorded come back as their entries build them: the signals a
    harness emits (text ids and parents) are taken as they are, one of another form (a
    number as parent, a key of its own, a name that is not text) is built from its
    entry, and a case whose line holds a value as its text is read back from the line."""
    from results_helpers import dataset

    from signal_eval_cli.journaled import JournaledRun
    from signal_eval_cli.results import CaseResult
    from signal_eval_cli.signals import Signal

    data = _dataset(tmp_path)
    header = dataset_header(
        data, RunOptions(), ProviderPolicy(), harness=None, params={}, traces=None
    )
    plain = [Signal("harness:start", {"state": [1]}, "sig_1", "t", None, None)]
    plain.append(Signal("agent:activated", {"agent": "x"}, "sig_2", "t", "x", "sig_1"))
    odd = [*plain, Signal("custom", None, "sig_3", "t", 5, 7)]  # type: ignore[arg-type]
    odd.append(Signal("custom", 1, "sig_4", None, extra={"runId": "r"}))
    cases = [case("a"), case("b"), case("c")]
    cases[0].signals, cases[1].signals = plain, odd
    cases[2].signals = [Signal("custom", {"when": {1, 2}}, "sig_5", "t")]  # a set: as text
    run = JournaledRun(tmp_path / "out.json", header)
    for each in cases:
        run.record_case(each)
    built = run.result(dataset(*cases)).cases
    assert built[0].signals == plain and built[0].signals[1] is plain[1]
    assert built[1] == CaseResult.from_dict(cases[1].to_dict("all"))
    assert [s.parent for s in built[1].signals] == [None, "sig_1", "7", None]
    assert built[1].signals[3].extra == {"runId": "r"}
    assert built[2].signals[0].payload == {"when": "{1, 2}"}
    for each, again in zip(cases[:2], built[:2], strict=True):
        assert again.to_dict("all") == CaseResult.from_dict(each.to_dict("all")).to_dict("all")


def test_a_case_whose_result_lost_its_id_in_a_hand_edit_is_still_its_entry_s(
    tmp_path: Path,
) -> None:
    """A journal line whose result has no ``caseId`` ended ``--resume`` in a traceback
    (KeyError: 'caseId'); the entry names its case, so the case is kept as that one, and
    the results built from the journal hold it too."""
    from signal_eval_cli.resume import build_dataset

    dataset = _dataset(tmp_path)
    header = dataset_header(
        dataset, RunOptions(), ProviderPolicy(), harness=None, params={}, traces=None
    )
    entries = [case_entry(case("a")), case_entry(case("b", False))]
    without_id = [(key, {k: v for k, v in data.items() if k != "caseId"}) for key, data in entries]
    plan = _resumed(tmp_path, header, without_id)
    kept = kept_cases(plan)
    assert {i: (c.case_id, c.passed) for i, c in kept.items()} == {
        "a": ("a", True),
        "b": ("b", False),
    }
    built = build_dataset(header, plan.entries())
    assert [(c.case_id, c.passed) for c in built.cases] == [("a", True), ("b", False)]


def test_a_scenario_run_whose_result_lost_its_id_is_still_its_entry_s(tmp_path: Path) -> None:
    """The same for a scenario run (KeyError: 'id'), resumed and built as results."""
    from signal_eval_cli.resume import build_result

    header = scenarios_header([], root=tmp_path, repeat=1, shard=None)
    header.order = ["s"]
    key, data = scenario_entry(ScenarioResult("s", True, tags=["t"]))
    entries = {key: {k: v for k, v in data.items() if k != "id"}}
    assert [s.id for s in kept_scenarios(JournalPlan(None, kept=entries)).values()] == ["s"]
    assert [(s.id, s.tags) for s in build_result(header, entries).scenarios] == [("s", ["t"])]
