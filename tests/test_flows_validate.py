"""Issue 10 item 7: ``validate`` checks what ``run`` will need (the harness file, the
agents file, the cassette a replay reads), located at the node that names it, exit 2;
``run`` says the same before any case runs. Driven from the repository's root and from
an unrelated directory, with the dataset outside the repository.

Each broken reference names a file that exists relative to the repository's root (the
current directory) but not beside the dataset: resolving against the current directory
would call it valid."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from flows_helpers import ROOT, cli

PLACES = ["repo-root", "unrelated"]

# (what is broken, the dataset's harness, the node a problem is located at, the message's tail)
BROKEN = {
    "harness file": (
        "bench/mock_llm.py:create",
        "harness:",
        "harness 'bench/mock_llm.py:create': file not found: {project}/bench/mock_llm.py",
    ),
    "agents file": (
        {"factory": "reactive", "params": {"agents": "datasets/agents/code-review.yaml"}},
        "agents:",
        "{project}/datasets/agents/code-review.yaml: cannot read file",
    ),
    "cassette": (
        {
            "factory": "reactive",
            "params": {
                "agents": "agents/code-review.yaml",
                "cassette": "datasets/cassettes/code-review.yaml",
            },
        },
        "cassette:",
        "{project}/datasets/cassettes/code-review.yaml: cassette not found (record one with --record",
    ),
    # Found by bench/fuzz.py: a param of the wrong type gave a traceback (TypeError in Path).
    "cassette of the wrong type": (
        {"factory": "reactive", "params": {"agents": "agents/code-review.yaml", "cassette": 1.5}},
        "cassette:",
        "'cassette': expected a cassette file path, got a number",
    ),
    "agents of the wrong type": (
        {"factory": "reactive", "params": {"agents": 1.5}},
        "agents:",
        "'agents': expected an agents file path, a list of agents or a mapping, got a number",
    ),
    "provider of the wrong type": (
        {"factory": "reactive", "params": {"agents": "agents/code-review.yaml", "provider": True}},
        "provider:",
        "'provider': expected a provider such as 'cassette' or 'openai:gpt-4o-mini', got a boolean",
    ),
    "default cassette": (
        {"factory": "reactive", "params": {"agents": "agents/code-review.yaml"}},
        "factory:",
        "{project}/cassettes/broken.yaml: cassette not found",
    ),
}


def _project(tmp_path: Path) -> Path:
    """A user's project outside the repository: the example dataset, its agents and cassette."""
    project = tmp_path / "project"
    for sub in ("agents", "cassettes"):
        (project / sub).mkdir(parents=True)
        shutil.copy(ROOT / "datasets" / sub / "code-review.yaml", project / sub)
    shutil.copy(ROOT / "datasets" / "code-review.yaml", project / "code-review.yaml")
    return project


def _cwd(tmp_path: Path, place: str) -> Path:
    if place == "repo-root":
        return ROOT
    unrelated = tmp_path / "unrelated"
    unrelated.mkdir()
    return unrelated


@pytest.mark.parametrize("place", PLACES)
def test_the_project_the_broken_datasets_come_from_is_sound(tmp_path: Path, place: str) -> None:
    """Each broken dataset below is this one with one reference broken (checked once per
    place, not again beside each of them)."""
    intact = _project(tmp_path) / "code-review.yaml"
    assert cli("validate", str(intact), cwd=_cwd(tmp_path, place)).returncode == 0


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_validate_and_run_locate_a_missing_reference(
    tmp_path: Path, place: str, broken: str
) -> None:
    project = _project(tmp_path)
    cwd = _cwd(tmp_path, place)
    intact = project / "code-review.yaml"
    harness, node, tail = BROKEN[broken]
    data = yaml.safe_load(intact.read_text())
    data["harness"] = harness
    dataset = project / "broken.yaml"
    dataset.write_text(yaml.safe_dump(data, sort_keys=False))
    lines = dataset.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.strip().startswith(node))
    column = lines[line - 1].index(node) + len(node) + 2
    expected = f"{dataset}:{line}:{column}: {tail.format(project=project)}"
    checked = cli("validate", str(dataset), cwd=cwd)
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert expected in " ".join(checked.stderr.split()), checked.stderr
    out = tmp_path / "r.json"
    ran = cli("run", str(dataset), "-q", "-o", str(out), cwd=cwd)
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert expected in " ".join(ran.stderr.split()), ran.stderr
    assert not out.exists() and "Traceback" not in ran.stderr + checked.stderr


def test_a_cassette_that_a_real_provider_records_is_not_required(tmp_path: Path) -> None:
    """``provider: openai:…`` records or calls live what is not recorded, and ``run
    --provider`` does the same for a dataset that names none: neither needs the file."""
    project = _project(tmp_path)
    (project / "cassettes" / "code-review.yaml").unlink()
    data = yaml.safe_load((project / "code-review.yaml").read_text())
    data["harness"]["params"]["provider"] = "openai:gpt-4o-mini"
    (project / "live.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    assert cli("validate", "live.yaml", cwd=project).returncode == 0
    # checked before any call: no key, so the run stops at the provider, not the cassette
    ran = cli("run", "code-review.yaml", "--provider", "openai:gpt-4o-mini", "-q", cwd=project)
    assert "cassette not found" not in ran.stderr, ran.stderr
    assert "OPENAI_API_KEY" in ran.stderr + ran.stdout, ran.stdout + ran.stderr


@pytest.mark.parametrize(
    ("written", "says"),
    [(b"", "1:1: file is empty"), (b"version: 1\nentries:\n  - case: [", "4:1: invalid YAML")],
    ids=["empty", "cut-off"],
)
def test_validate_refuses_a_replay_cassette_run_refuses(
    tmp_path: Path, written: bytes, says: str
) -> None:
    """``validate`` checked that the cassette a replay reads exists, not what it holds:
    it said "ok" of a dataset whose cassette was empty or cut off, and ``run`` refused it."""
    from signal_eval_cli.validate import validate_path

    project = _project(tmp_path)
    cassette = project / "cassettes" / "code-review.yaml"
    cassette.write_bytes(written)
    kind, problems = validate_path(project / "code-review.yaml")
    assert kind == "invalid"
    assert str(problems[0]).startswith(f"{cassette}:{says}"), problems
