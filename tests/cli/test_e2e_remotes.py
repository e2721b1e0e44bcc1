"""``localllm remote`` against real daemons: a front daemon with an empty store, a second
daemon with the tiny model as its remote, and a URL where nothing listens. The remote's model
appears in ``list``, answers ``run`` through the front daemon, and shows in ``ps`` while a
request streams; the key goes in on stdin and never comes back out; the daemon's refusals
(a name taken, a bad URL, an unknown remote) are one clear line each."""

from __future__ import annotations

import io
import json

import httpx
import pytest

from localllm.app.cli.main import main
from tests.support.cli_e2e import cli_env
from tests.support.daemon import Daemon, free_port, make_store

pytestmark = pytest.mark.slow
ISOLATED = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}


@pytest.fixture(scope="module")
def daemons(tmp_path_factory, tiny_model_path):
    from localllm.model_registry.importer import ModelExtras

    root = tmp_path_factory.mktemp("cli-remotes")
    back_store = make_store(root / "back", {"tiny": (tiny_model_path, ModelExtras(
        parameters={"num_predict": 6}))})  # fmt: skip
    front_env = {**ISOLATED, "LOCALLLM_CONFIG": str(root / "front-config")}
    back_env = {**ISOLATED, "LOCALLLM_CONFIG": str(root / "back-config")}
    with (
        Daemon(back_store, root / "back-logs", env=back_env) as back,
        Daemon(make_store(root / "front", {}), root / "front-logs", env=front_env) as front,
    ):
        yield front, back


@pytest.fixture
def cli(daemons, tmp_path, capsys, monkeypatch):
    front, _back = daemons
    # the CLI shares the daemon's config folder, as on one computer: its admin token is there
    env = cli_env(tmp_path, front.port, LOCALLLM_DEBUG="1", LOCALLLM_CONFIG=str(front.config_dir))

    def run(*argv: str, stdin: str = "") -> tuple[int, str, str]:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        status = main(list(argv), env)
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


def test_remotes_end_to_end(cli, daemons):
    front, back = daemons
    gone = f"http://127.0.0.1:{free_port()}"
    assert cli("remote", "add", "back", back.url)[:2] == (
        0,
        "added remote 'back' (1 replica, openai API)\n"
        "its models are named back/<model id>; see `localllm remote ls`\n",
    )
    status, _, err = cli("remote", "add", "gone", gone, "--api-key-stdin", stdin="sk-hush\n")
    assert status == 0, err
    try:
        status, out, _ = cli("remote", "ls")
        rows = {line.split()[0]: line for line in out.splitlines()[1:]}
        assert status == 0 and rows["back"].split()[1] == "healthy"
        assert rows["back"].split()[-2:] == ["1", "0"]  # one model, nothing in flight
        assert rows["gone"].split()[1] == "unhealthy:"  # with the reason after it
        status, out, _ = cli("remote", "ls", "--json")
        listed = {r["name"]: r for r in json.loads(out)}
        assert listed["gone"]["has_api_key"] and "sk-hush" not in out
        assert [m["name"] for m in listed["back"]["models"]] == ["back/tiny"]

        _, out, _ = cli("list")
        header, row = out.splitlines()
        assert header.split() == ["NAME", "ID", "SIZE", "MODIFIED", "REMOTE"]
        assert row.split() == ["back/tiny", "-", "-", "-", "back"]

        status, out, err = cli("run", "back/tiny", "Hello")
        assert status == 0 and out.strip(), err

        with httpx.stream(
            "POST",
            front.url + "/api/chat",
            json={
                "model": "back/tiny",
                "messages": [{"role": "user", "content": "Hi"}],
                "options": {"num_predict": 100_000, "temperature": 0},  # greedy: never stops
            },
            timeout=60,
        ) as reply:
            lines = reply.iter_lines()
            next(lines)  # the first token is here: the request is in flight
            _, out, _ = cli("ps")
            last = json.loads(list(lines)[-1])  # and it ends, at the remote's context
        assert out.splitlines()[1].split() == [
            "back/tiny", "-", "-", "remote", "back", "-", "-", "-", "1", "in", "flight",
        ]  # fmt: skip
        assert last["done"] and last["done_reason"] == "length"
        assert cli("ps")[1].splitlines()[1:] == []
    finally:
        cli("remote", "rm", "gone")
    status, _, err = cli("remote", "rm", "gone")
    assert status == 1 and err == "Error: no remote named 'gone' (see `localllm remote ls`)\n"
    status, _, err = cli("remote", "add", "back", back.url)
    assert status == 1 and "already exists" in err
    status, _, err = cli("remote", "add", "bad", "ftp://x")
    assert status == 1 and err.startswith("Error: ") and "ftp://x" in err
    assert cli("remote", "rm", "back")[:2] == (0, "removed remote 'back'\n")
    assert "back/tiny" not in cli("list")[1]
