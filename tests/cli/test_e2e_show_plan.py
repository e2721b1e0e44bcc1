"""``localllm show --plan`` against a real daemon and a generated Gemma-3-like model: the plan
before any load, then the same plan corrected by llama.cpp's own figures once a chat has
loaded the model with those settings (the parts it measured say so). ``localllm`` runs
in-process (``main(argv, env)``); it talks to the daemon over HTTP as the installed one does."""

from __future__ import annotations

import io
import json

import httpx
import pytest

from localllm.app.cli.main import main
from tests.support.cli_e2e import cli_env
from tests.support.daemon import Daemon, make_store
from tests.support.model_writers.gemma3 import write_tiny_gemma3

pytestmark = pytest.mark.slow

SETTINGS = ("--ctx", "2048", "--parallel", "2")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-plan")
    model = write_tiny_gemma3(root / "gemma.gguf")
    with Daemon(make_store(root / "store", {"gemma": model}), root / "logs") as running:
        yield running


@pytest.fixture
def cli(daemon, tmp_path, capsys, monkeypatch):
    env = cli_env(tmp_path, daemon.port, LOCALLLM_DEBUG="1")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))

    def run(*argv: str) -> tuple[int, str, str]:
        status = main(list(argv), env)
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


def test_the_plan_before_a_load_then_measured_after_it(cli, daemon):
    status, out, err = cli("show", "gemma", "--plan", *SETTINGS)
    assert (status, err) == (0, "")
    assert "    runs at       2,048 tokens x 2 slots\n" in out
    assert "    because       the request's num_ctx\n" in out
    rows = out.split("  Memory\n")[1].split("\n\n")[0].splitlines()[1:]
    assert {row.split()[0] for row in rows} >= {"weights", "kv", "window", "output", "compute"}
    assert all("  RAM  " in row for row in rows)  # no GPU here
    assert "(measured)" not in out
    assert "  Fits\n    it needs " in out
    assert daemon.runner_pids() == []  # a plan loads nothing

    before = json.loads(cli("show", "gemma", "--plan", *SETTINGS, "--json")[1])
    assert before["total"] == sum(p["bytes"] for p in before["parts"] if not p["later"])
    chat = {
        "model": "gemma",
        "messages": [{"role": "user", "content": "Hi"}],
        "options": {"num_ctx": 2048, "num_parallel": 2, "num_predict": 1},
        "stream": False,
    }
    assert httpx.post(daemon.url + "/api/chat", json=chat, timeout=120).status_code == 200

    status, out, _ = cli("show", "gemma", "--plan", *SETTINGS)
    assert status == 0 and "(measured)" in out
    after = json.loads(cli("show", "gemma", "--plan", *SETTINGS, "--json")[1])
    assert after["measured"] is True
    assert abs(after["total"] - before["total"]) <= 0.1 * before["total"]  # the plan held
