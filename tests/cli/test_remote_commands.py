"""``localllm remote add|ls|rm``, and remote models in ``list`` and ``ps``, against the
stand-in client. (The same against real daemons: ``test_e2e_remotes.py``.)"""

from __future__ import annotations

import json

import pytest

from localllm.daemon.api.remotes import ReplicaInfo
from tests.support.cli import MODEL, running_model
from tests.support.fake_remotes import remote_info


def test_add_sends_the_whole_request(run_cli, fake):
    status, out, _ = run_cli(
        "remote", "add", "gpu", "http://a:8000", "http://b:8000",
        "--kind", "ollama", "--alias", "llama=meta/llama-3", "--timeout", "30",
        "--max-concurrency", "4", "--api-key-env", "GPU_KEY",
    )  # fmt: skip
    assert status == 0
    assert out.splitlines()[0] == "added remote 'gpu' (2 replicas, ollama API)"
    request = fake.calls[-1][1]
    assert request.urls == ["http://a:8000", "http://b:8000"]
    assert (request.kind, request.aliases) == ("ollama", {"llama": "meta/llama-3"})
    assert (request.timeout_seconds, request.max_concurrency) == (30.0, 4)
    assert (request.api_key_env, request.api_key) == ("GPU_KEY", None)


def test_the_api_key_comes_from_stdin_never_the_command_line(run_cli, fake):
    status, _, _ = run_cli(
        "remote", "add", "gpu", "http://a:8000", "--api-key-stdin", stdin="sk-secret\n"
    )
    assert status == 0
    assert fake.calls[-1][1].api_key == "sk-secret"
    status, _, err = run_cli("remote", "add", "gpu", "http://a:8000", "--api-key", "sk-x")
    assert status == 2 and "not taken on the command line" in err and "sk-x" not in err
    status, _, err = run_cli("remote", "add", "other", "http://a:8000", "--api-key-stdin", stdin="")
    assert status == 2 and err == "Error: no API key came on stdin\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--alias", "nope"], "Error: --alias wants ALIAS=ID, not 'nope'\n"),
        (["--timeout", "0"], "Error: timeout_seconds: Input should be greater than 0\n"),
        (["--max-concurrency", "0"], "Error: max_concurrency: Input should be greater than"),
    ],
)
def test_bad_options_are_usage_errors_before_the_daemon(run_cli, fake, argv, message):
    status, _, err = run_cli("remote", "add", "gpu", "http://a:8000", *argv)
    assert status == 2 and err.startswith(message)
    assert not any(call[0] == "add_remote" for call in fake.calls)


def test_a_taken_name_is_the_daemons_error(run_cli, fake):
    fake.remote_infos = [remote_info("gpu", ["http://a:8000"])]
    status, _, err = run_cli("remote", "add", "gpu", "http://b:8000")
    assert status == 1 and err == "Error: a remote named 'gpu' exists already\n"


def test_ls_shows_health_latency_models_and_in_flight(run_cli, fake):
    down = ReplicaInfo(url="http://c:1", healthy=False, error="connection refused")
    fake.remote_infos = [
        remote_info("gpu", ["http://a:8000", "http://b:8000"], ["m1", "m2"], in_flight=3),
        remote_info(
            "half",
            ["http://x:1"],
            ["m"],
            replicas=[
                ReplicaInfo(url="http://x:1", healthy=True, latency_ms=12.25),
                down,
            ],
        ),
        remote_info("dead", ["http://c:1"], healthy=False, replicas=[down]),
    ]
    status, out, _ = run_cli("remote", "ls")
    assert status == 0
    lines = [line.split(maxsplit=1)[1] for line in out.splitlines()]
    assert out.splitlines()[0].split() == ["NAME", "HEALTH", "LATENCY", "MODELS", "IN-FLIGHT"]
    assert lines[1].split() == ["healthy", "1.5", "ms", "2", "3"]
    assert lines[2].split() == ["healthy", "(1/2)", "12", "ms", "1", "0"]
    assert lines[3].split() == ["unhealthy:", "connection", "refused", "-", "0", "0"]
    _, out, _ = run_cli("remote", "ls", "-v")
    verbose = out.splitlines()
    assert verbose[1].split()[4:6] == ["gpu/m1,", "gpu/m2"]
    assert verbose[2].split() == ["http://a:8000", "healthy", "1.5", "ms", "0"]
    assert verbose[-1].split() == ["http://c:1", "unhealthy:", "connection", "refused", "-", "0"]
    _, out, _ = run_cli("remote", "ls", "--json")
    assert [r["name"] for r in json.loads(out)] == ["gpu", "half", "dead"]


def test_ls_with_no_remotes_says_how_to_add_one(run_cli):
    status, out, err = run_cli("remote", "ls")
    assert (status, out) == (0, "")
    assert "localllm remote add NAME URL" in err


def test_rm_and_an_unknown_remote(run_cli, fake):
    fake.remote_infos = [remote_info("gpu", ["http://a:8000"])]
    assert run_cli("remote", "rm", "gpu")[:2] == (0, "removed remote 'gpu'\n")
    assert fake.remote_infos == []
    status, _, err = run_cli("remote", "rm", "gpu")
    assert status == 1 and err == "Error: no remote named 'gpu' (see `localllm remote ls`)\n"


def test_remote_alone_is_a_usage_error(run_cli):
    status, _, err = run_cli("remote")
    assert status == 2 and "localllm remote add|ls|rm" in err


def test_list_marks_remote_models(run_cli, fake):
    remote = MODEL.model_copy(update={"name": "gpu/qwen3-8b", "size": 0, "remote": "gpu"})
    fake.models = [MODEL, remote]
    _, out, _ = run_cli("list")
    header, local, far = out.splitlines()
    assert header.split() == ["NAME", "ID", "SIZE", "MODIFIED", "REMOTE"]
    assert "4.7 GB" in local and not local.endswith("gpu")
    assert far.split()[:3] == ["gpu/qwen3-8b", "-", "-"] and far.endswith("    gpu")
    fake.models = [MODEL]
    assert "REMOTE" not in run_cli("list")[1]  # only local models: Ollama's columns


def test_ps_shows_remote_models_in_use(run_cli, fake):
    fake.loaded = [running_model("gpu/qwen3-8b", remote="gpu", active_requests=2)]
    _, out, _ = run_cli("ps")
    row = ["gpu/qwen3-8b", "-", "-", "remote", "gpu", "-", "-", "-", "2", "in", "flight"]
    assert out.splitlines()[1].split() == row


def test_no_daemon_is_one_clear_line(run_cli, fake, monkeypatch):
    from localllm.daemon.client import DaemonUnavailable

    def unreachable():
        raise DaemonUnavailable("cannot reach the daemon at http://127.0.0.1:11435: refused")

    monkeypatch.setattr(fake, "remotes", unreachable)
    status, out, err = run_cli("remote", "ls")
    assert (status, out) == (1, "")
    assert err == "Error: cannot reach the daemon at http://127.0.0.1:11435: refused\n"
