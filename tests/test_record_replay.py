"""Record against the loopback mock, replay offline: same results, no network, no key leaks."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from mock_servers import Call, Fault, MockLLMServer, Reply, code_review_responder
from typer.testing import CliRunner

from signal_eval_cli.cli import app
from signal_eval_cli.journal import journal_path, read_journal
from signal_eval_cli.providers import ProviderError, ProviderRequest
from signal_eval_cli.providers.cassette import Cassette
from signal_eval_cli.providers.recording import RecordingProvider
from signal_eval_cli.providers.registry import make_provider

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-test-record-replay-0a1b2c3d4e5f"
FAST = {"timeout": 1.0, "max_retries": 2, "retry_base_delay": 0.01, "retry_max_delay": 0.02}


@pytest.fixture(scope="module")
def mock() -> Iterator[MockLLMServer]:
    with MockLLMServer(code_review_responder) as server:
        yield server


@pytest.fixture
def server(mock: MockLLMServer) -> Iterator[MockLLMServer]:
    mock.reset()
    mock.responder = code_review_responder
    yield mock
    mock.reset()


@pytest.fixture
def env(server: MockLLMServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": KEY}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("SIGNAL_EVAL_JUDGE_MODEL", raising=False)
    return values


def request(case: str, text: str, call: int = 0) -> ProviderRequest:
    return ProviderRequest(case, "agent", [{"role": "user", "content": text}], call=call)


def recorder(server: MockLLMServer, path: Path, mode: str) -> Any:
    return make_provider(
        "openai:test-model",
        api_key=KEY,
        base_url=server.openai_base_url,
        cassette=str(path),
        mode=mode,
        **FAST,
    )


# -- the recording provider ------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_recorded_cassette_replays_identically(
    server: MockLLMServer, tmp_path: Path, stream: bool
) -> None:
    server.responder = lambda c: Reply("ANSWER " + c.last_user_text)
    path = tmp_path / "c.yaml"
    live = make_provider(
        "openai:test-model",
        api_key=KEY,
        base_url=server.openai_base_url,
        cassette=str(path),
        mode="record",
        stream=stream,
    )
    deltas: list[str] = []
    recorded = asyncio.run(live.complete(request("one", "alpha beta"), deltas.append))
    assert isinstance(live, RecordingProvider) and live.save() == [path]
    data = yaml.safe_load(path.read_text())
    assert data["version"] == 1
    (entry,) = data["entries"]
    assert entry["case"] == "one" and entry["agent"] == "agent" and entry["call"] == 0
    assert entry["request"] == request("one", "alpha beta").key
    assert entry["response"]["text"] == "ANSWER alpha beta"
    assert ("deltas" in entry["response"]) is stream
    assert KEY not in path.read_text()
    calls = len(server.calls)
    for replayer in (
        make_provider(f"cassette:{path}"),
        make_provider("openai:test-model", cassette=str(path)),
    ):
        replayed_deltas: list[str] = []
        replayed = asyncio.run(
            replayer.complete(request("one", "alpha beta"), replayed_deltas.append)
        )
        assert replayed.text == recorded.text and replayed_deltas == deltas
        assert (replayed.input_tokens, replayed.output_tokens) == (
            recorded.input_tokens,
            recorded.output_tokens,
        )
    assert len(server.calls) == calls  # replay never touched the server


def test_replay_fails_loudly_on_a_miss_and_on_a_changed_prompt(
    server: MockLLMServer, tmp_path: Path
) -> None:
    path = tmp_path / "c.yaml"
    live = recorder(server, path, "record")
    asyncio.run(live.complete(request("one", "alpha")))
    live.save()
    replay = make_provider("openai:test-model", cassette=str(path), mode="replay")
    with pytest.raises(ProviderError, match="no recorded answer for case 'two'") as miss:
        asyncio.run(replay.complete(request("two", "alpha")))
    assert miss.value.code == "cassette_miss"
    with pytest.raises(ProviderError, match="changed since call #0 was recorded") as stale:
        asyncio.run(replay.complete(request("one", "a different prompt")))
    assert stale.value.code == "cassette_miss"


def test_record_missing_records_only_what_is_missing(server: MockLLMServer, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    first = recorder(server, path, "record")
    asyncio.run(first.complete(request("one", "alpha")))
    asyncio.run(first.complete(request("two", "beta")))
    first.save()
    server.reset()
    missing = recorder(server, path, "record-missing")
    asyncio.run(missing.complete(request("one", "alpha")))  # recorded: replayed
    asyncio.run(missing.complete(request("two", "beta changed")))  # stale: re-recorded
    asyncio.run(missing.complete(request("three", "gamma")))  # missing: recorded
    missing.save()
    assert [c.last_user_text for c in server.calls] == ["beta changed", "gamma"]
    cassette = Cassette.load(path)
    assert sorted(e.case for e in cassette) == ["one", "three", "two"]


def test_record_replaces_a_case_wholesale_and_keeps_the_others(
    server: MockLLMServer, tmp_path: Path
) -> None:
    path = tmp_path / "c.yaml"
    first = recorder(server, path, "record")
    for case, text, call in (("one", "a", 0), ("one", "b", 1), ("two", "c", 0)):
        asyncio.run(first.complete(request(case, text, call)))
    first.save()
    again = recorder(server, path, "record")
    asyncio.run(again.complete(request("one", "a2")))
    again.save()
    entries = {(e.case, e.call): e.response.text for e in Cassette.load(path)}
    assert set(entries) == {("one", 0), ("two", 0)}  # call 1 of the old "one" is gone


# -- the CLI: record, then replay offline ----------------------------------------------------


def copy_dataset(tmp_path: Path) -> Path:
    work = tmp_path / "datasets"
    (work / "agents").mkdir(parents=True)
    shutil.copy(ROOT / "datasets" / "code-review.yaml", work / "code-review.yaml")
    shutil.copy(
        ROOT / "datasets" / "agents" / "code-review.yaml", work / "agents" / "code-review.yaml"
    )
    return work / "code-review.yaml"


def outcome(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    cases = data.get("cases") or data["results"]
    return {
        c["caseId"]: (c["passed"], [(a["assertion"]["type"], a["passed"]) for a in c["assertions"]])
        for c in cases
    }


def no_key_anywhere(root: Path, *texts: str) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), f"API key found in {path}"
    for text in texts:
        assert KEY not in text


def test_cli_record_then_replay_offline_gives_identical_results(
    server: MockLLMServer, env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = copy_dataset(tmp_path)
    cassette = dataset.parent / "cassettes" / "code-review.yaml"
    runner = CliRunner()
    recorded = runner.invoke(
        app,
        [
            "run", str(dataset), "--provider", "openai:test-model", "--record",
            "-o", str(tmp_path / "recorded.json"), "--junit", str(tmp_path / "recorded.xml"),
            "--markdown", str(tmp_path / "recorded.md"), "--signals", "all", "--quiet",
        ],
    )  # fmt: skip
    assert recorded.exit_code == 0, recorded.output
    assert "recorded 19 call(s)" in recorded.output
    assert len(server.calls) == 19 and cassette.is_file()
    assert len(Cassette.load(cassette)) == 19

    # offline: no server address, no key
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("OPENAI_API_KEY")
    for extra in ([], ["--replay"]):
        replayed = runner.invoke(
            app,
            ["run", str(dataset), "--provider", "openai:test-model", "-o", str(tmp_path / "replayed.json"),
             "--signals", "all", "--quiet", *extra],
        )  # fmt: skip
        assert replayed.exit_code == 0, replayed.output
        assert outcome(tmp_path / "replayed.json") == outcome(tmp_path / "recorded.json")
    assert len(server.calls) == 19
    results = outcome(tmp_path / "recorded.json")
    assert len(results) == 11 and all(passed for passed, _ in results.values())
    no_key_anywhere(tmp_path, recorded.output, replayed.output)


def test_cli_replay_without_a_cassette_and_record_without_a_provider_are_input_errors(
    env: dict[str, str], tmp_path: Path
) -> None:
    dataset = copy_dataset(tmp_path)
    runner = CliRunner()
    missing = runner.invoke(app, ["run", str(dataset), "--provider", "openai:m", "--replay"])
    assert missing.exit_code == 2 and "cassette not found" in missing.output
    no_provider = runner.invoke(app, ["run", str(dataset), "--record"])
    assert no_provider.exit_code == 2 and "--record needs a real provider" in no_provider.output
    both = runner.invoke(
        app, ["run", str(dataset), "--provider", "openai:m", "--record", "--replay"]
    )
    assert both.exit_code == 2 and "choose one of" in both.output


ECHO_AGENTS = {
    "agents": [
        {
            "id": "echo",
            "activate_on": ["harness:start"],
            "prompt": "{input.text}",
            "emits": ["echo:done"],
        }
    ]
}


def echo_dataset(tmp_path: Path, cases: list[str]) -> Path:
    (tmp_path / "agents.yaml").write_text(yaml.safe_dump(ECHO_AGENTS))
    data = {
        "name": "faults",
        "harness": {
            "factory": "reactive",
            "params": {
                "agents": "agents.yaml",
                "provider_options": {"timeout": 0.3, "max_retries": 2, "retry_base_delay": 0.01},
            },
        },
        "cases": [
            {
                "id": case,
                "input": {"text": f"{case} please"},
                "assertions": [{"type": "output.contains", "text": f"ANSWER: {case}"}],
            }
            for case in cases
        ],
    }
    path = tmp_path / "faults.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def for_case(case: str) -> Callable[[Call], bool]:
    return lambda call: call.last_user_text.startswith(case)


def test_cli_faults_recover_or_fail_their_case_and_the_others_continue(
    server: MockLLMServer, env: dict[str, str], tmp_path: Path
) -> None:
    server.responder = lambda c: Reply("ANSWER: " + c.last_user_text)
    faults = {
        "rate-limited": [Fault.rate_limited("0.02")],
        "server-error": [Fault.server_error(502)],
        "dropped": [Fault.drop()],
        "slow": [Fault.slow(1.0)],
        "truncated": [Fault.truncated()],
        "malformed": [Fault.malformed()],
        "always-500": [Fault.server_error(500) for _ in range(3)],
        "unauthorized": [Fault.status_code(401, "bad key {key}")],
    }
    cases = [*faults, "healthy-1", "healthy-2"]
    for case, injected in faults.items():
        server.fail_next(*injected, match=for_case(case))
    dataset = echo_dataset(tmp_path, cases)
    out = tmp_path / "results.json"
    result = CliRunner().invoke(
        app,
        ["run", str(dataset), "--provider", "openai:test-model", "-o", str(out), "--signals", "all",
         "--concurrency", "10", "--quiet", "--junit", str(tmp_path / "junit.xml")],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    data = json.loads(out.read_text())
    by_id = {c["caseId"]: c for c in data.get("cases") or data["results"]}
    passed = {case for case, c in by_id.items() if c["passed"]}
    assert passed == {
        "rate-limited",
        "server-error",
        "dropped",
        "slow",
        "truncated",
        "healthy-1",
        "healthy-2",
    }
    for case, code in (("malformed", "malformed_response"), ("always-500", "server_error"),
                       ("unauthorized", "auth_error")):  # fmt: skip
        errors = [s for s in by_id[case]["signals"] if s["name"] == "provider:error"]
        assert errors and errors[0]["payload"]["code"] == code, by_id[case]
        assert by_id[case]["error"], by_id[case]
    assert "gave up after 3 attempts" in json.dumps(by_id["always-500"])
    assert server.pending_faults == 0
    no_key_anywhere(tmp_path, result.output)


# -- a failing --record keeps the recording; an explicit --provider that replays says so ----


def refused_url() -> str:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_record_keeps_a_case_whose_calls_fail(server: MockLLMServer, tmp_path: Path) -> None:
    """A failed recording never overwrites a good one: a case with a failed call keeps
    what it had recorded, even when a later call of it succeeds; the others are replaced."""
    path = tmp_path / "c.yaml"
    first = recorder(server, path, "record")
    for case, text, call in (("one", "a", 0), ("one", "b", 1), ("two", "c", 0)):
        asyncio.run(first.complete(request(case, text, call)))
    first.save()
    before = path.read_bytes()
    server.fail_next(*(Fault.server_error(500) for _ in range(3)))
    failing = recorder(server, path, "record")
    with pytest.raises(ProviderError):
        asyncio.run(failing.complete(request("one", "a2")))
    assert not failing.save()  # nothing new: the file is not rewritten
    assert path.read_bytes() == before
    server.fail_next(*(Fault.server_error(500) for _ in range(3)))
    again = recorder(server, path, "record")
    with pytest.raises(ProviderError):
        asyncio.run(again.complete(request("one", "a2")))
    asyncio.run(again.complete(request("one", "a3", 1)))  # the case still has a failed call
    asyncio.run(again.complete(request("two", "c2")))
    again.save()
    entries = {(e.case, e.call): e.request for e in Cassette.load(path)}
    assert entries == {
        ("one", 0): request("one", "a").key,
        ("one", 1): request("one", "b", 1).key,
        ("two", 0): request("two", "c2").key,
    }


def copy_dataset_with_cassette(tmp_path: Path) -> tuple[Path, Path]:
    dataset = copy_dataset(tmp_path)
    cassette = dataset.parent / "cassettes" / "code-review.yaml"
    cassette.parent.mkdir()
    shutil.copy(ROOT / "datasets" / "cassettes" / "code-review.yaml", cassette)
    return dataset, cassette


FAST_PARAM = "provider_options={max_retries: 1, retry_base_delay: 0.01, retry_max_delay: 0.02}"


def test_cli_record_against_a_failing_provider_keeps_the_recording(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset, cassette = copy_dataset_with_cassette(tmp_path)
    before = cassette.read_bytes()
    count = len(Cassette.load(cassette))
    monkeypatch.setenv("OPENAI_BASE_URL", refused_url())
    result = CliRunner().invoke(
        app,
        ["run", str(dataset), "--provider", "openai:x", "--record", "--case", "sql-injection",
         "--param", FAST_PARAM, "-o", str(tmp_path / "out.json"), "--signals", "all", "--quiet"],
    )  # fmt: skip
    assert result.exit_code != 0, result.output
    assert cassette.read_bytes() == before
    assert len(Cassette.load(cassette)) == count
    assert "recorded" not in result.output
    text = (tmp_path / "out.json").read_text()
    assert "connection failed" in text and "timed out" not in text
    no_key_anywhere(tmp_path, result.output)


def test_cli_explicit_provider_that_replays_says_so(env: dict[str, str], tmp_path: Path) -> None:
    dataset, cassette = copy_dataset_with_cassette(tmp_path)
    runner = CliRunner()
    out = str(tmp_path / "o.json")
    args = ["run", str(dataset), "--case", "sql-injection", "--quiet", "-o", out]
    note = f"replaying {cassette} (recorded calls; use --record to call openai:x)"
    explicit = runner.invoke(app, [*args, "--provider", "openai:x"])
    assert explicit.exit_code == 0, explicit.output
    assert explicit.stderr.count(note) == 1 and note not in explicit.stdout
    implicit = runner.invoke(app, args)  # the dataset's own cassette: nothing to say
    assert implicit.exit_code == 0, implicit.output
    assert "replaying" not in implicit.output


# -- a killed recording run ---------------------------------------------------------------------

CLI = Path(sys.executable).parent / "signal-eval"


def test_cli_kill_9_mid_record_keeps_every_finished_case_and_resume_records_the_rest(
    server: MockLLMServer, env: dict[str, str], tmp_path: Path
) -> None:
    """Issue 16: a kill -9 loses at most the cases in flight, recordings included."""
    dataset = copy_dataset(tmp_path)
    cassette = dataset.parent / "cassettes" / "code-review.yaml"
    output = tmp_path / "out.json"
    held = "[200 lines of code here]"  # very-long-file: its first call is still running
    server.fail_next(Fault.slow(300), match=lambda c: held in json.dumps(c.body))
    argv = [str(CLI), "run", str(dataset), "--provider", "openai:test-model", "--record",
            "-o", str(output), "-q", "--concurrency", "4"]  # fmt: skip
    process = subprocess.Popen(argv, env={**os.environ, **env}, start_new_session=True)
    journal = journal_path(output)
    deadline = time.monotonic() + 240
    try:
        while process.poll() is None and time.monotonic() < deadline:
            if journal.is_file() and journal.read_bytes().count(b"\n") - 1 >= 10:
                break
            time.sleep(0.05)
        assert process.poll() is None, "the run ended before the kill"
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert len(read_journal(journal).entries) == 10  # every case but the held one

    finished = {e.case for e in Cassette.load(cassette).entries} if cassette.is_file() else set()
    assert cassette.is_file()  # the next run finds it (and completes it from its backlog)
    calls_before = len(server.calls)
    resumed = subprocess.run(
        [*argv, "--resume"], env={**os.environ, **env}, capture_output=True, text=True,
        timeout=240, check=False,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert len(server.calls) - calls_before == 1  # only the held case ran again
    entries = Cassette.load(cassette).entries
    assert len(entries) == 19 and {e.case for e in entries} >= finished
    assert not (cassette.parent / "code-review.yaml.unsaved").exists()

    offline = {**env, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": ""}
    replayed = subprocess.run(
        [str(CLI), "run", str(dataset), "--provider", "openai:test-model", "--replay",
         "-o", str(tmp_path / "replayed.json"), "-q"],
        env={**os.environ, **offline}, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    results = outcome(tmp_path / "replayed.json")
    assert len(results) == 11 and all(passed for passed, _ in results.values())
