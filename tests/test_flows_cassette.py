"""Issue 10 items 1-2: a cassette path resolves once, against the dataset, from any directory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from flows_helpers import cli, project_copy
from mock_servers import MockLLMServer, code_review_responder

from signal_eval_cli.paths import default_cassette, resolve_from

KEY = "sk-test-flows-0a1b2c3d4e5f"


@pytest.fixture
def server() -> Iterator[MockLLMServer]:
    with MockLLMServer(code_review_responder) as mock:
        yield mock


def _env(server: MockLLMServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": KEY}


def _where(project: Path, place: str) -> tuple[Path, str]:
    """The cwd and the dataset argument a user would type from ``place``."""
    if place == "root":
        return project, "datasets/code-review.yaml"
    if place == "dataset-folder":
        return project / "datasets", "code-review.yaml"
    elsewhere = project.parent / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    return elsewhere, str(project / "datasets" / "code-review.yaml")


@pytest.mark.parametrize("place", ["root", "dataset-folder", "outside"])
def test_record_then_replay_uses_the_one_cassette_beside_the_dataset(
    server: MockLLMServer, tmp_path: Path, place: str
) -> None:
    project = project_copy(tmp_path)
    cassette = project / "datasets" / "cassettes" / "code-review.yaml"
    cassette.unlink()
    cwd, dataset = _where(project, place)
    record = cli(
        "run", dataset, "--provider", "openai:gpt-4o-mini", "--record", "-q",
        cwd=cwd, env=_env(server),
    )  # fmt: skip
    assert record.returncode in (0, 1), record.stderr
    assert f"to {cassette}" in record.stderr, record.stderr
    assert cassette.is_file()
    assert not list(project.rglob("datasets/datasets")), "the dataset folder was joined twice"
    recorded = len(server.calls)
    assert recorded > 0
    # the next plain run replays what was just recorded: offline, no key, no new call
    replay = cli("run", dataset, "-q", "-o", str(tmp_path / "r.json"), cwd=cwd)
    assert replay.returncode in (0, 1), replay.stderr
    assert json.loads((tmp_path / "r.json").read_text())["totalCases"] == 11
    # --record-missing sees the existing cassette: no call for what it has
    missing = cli(
        "run", dataset, "--provider", "openai:gpt-4o-mini", "--record-missing", "-q",
        cwd=cwd, env=_env(server),
    )  # fmt: skip
    assert missing.returncode in (0, 1), missing.stderr
    assert len(server.calls) == recorded


@pytest.mark.parametrize("place", ["root", "outside"])
def test_default_cassette_is_named_after_the_dataset(
    server: MockLLMServer, tmp_path: Path, place: str
) -> None:
    project = project_copy(tmp_path)
    data = yaml.safe_load((project / "datasets" / "code-review.yaml").read_text())
    data["harness"]["params"] = {"agents": "agents/code-review.yaml"}  # no cassette named
    (project / "datasets" / "my-eval.yaml").write_text(yaml.safe_dump(data))
    cwd = project if place == "root" else tmp_path
    dataset = "datasets/my-eval.yaml" if place == "root" else str(project / "datasets/my-eval.yaml")
    expected = project / "datasets" / "cassettes" / "my-eval.yaml"
    plain = cli("run", dataset, "-q", cwd=cwd)
    assert plain.returncode == 2 and f"{expected}: cassette not found" in plain.stderr, plain.stderr
    record = cli(
        "run", dataset, "--provider", "openai:gpt-4o-mini", "--record", "-q",
        cwd=cwd, env=_env(server),
    )  # fmt: skip
    assert f"to {expected}" in record.stderr and expected.is_file(), record.stderr
    assert cli("run", dataset, "-q", cwd=cwd).returncode in (0, 1)


def test_the_path_rule() -> None:
    assert resolve_from("/abs/c.yaml", "/base") == Path("/abs/c.yaml")
    assert resolve_from("c/x.yaml", "/base/d") == Path("/base/d/c/x.yaml")
    once = resolve_from("cassettes/x.yaml", "datasets")
    assert once.is_absolute() and resolve_from(once, "datasets") == once  # joining twice is a no-op
    assert default_cassette("datasets/code-review.yaml") == resolve_from(
        "datasets/cassettes/code-review.yaml", None
    )
