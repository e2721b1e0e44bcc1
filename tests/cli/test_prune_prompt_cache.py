"""``localllm prune`` against a real daemon also clears the prompt cache on disk, and says so
only when it removed something. ``localllm`` runs in-process (``main(argv, env)``); it still
talks to the daemon over HTTP as the installed command does."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from localllm.app.cli.formatting import format_size
from localllm.app.cli.main import main
from localllm.daemon.runners.prompt_store import PromptState, PromptStore, namespace
from tests.support.cli_e2e import cli_env
from tests.support.daemon import Daemon, make_store

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-prune")
    with Daemon(make_store(root / "store", {}), root / "logs") as running:
        running.data_dir = root / "logs" / "data"
        yield running


@pytest.fixture
def cli(daemon, tmp_path, capsys, monkeypatch):
    env = cli_env(tmp_path, daemon.port)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))

    def run(*argv: str) -> tuple[int, str, str]:
        status = main(list(argv), env)
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


def place_prompts(daemon, count: int) -> int:
    """``count`` prompt states of 1,000 bytes each, written as a runner writes them; the bytes of
    every file the cache holds then."""
    folder = daemon.data_dir / "prompt-cache"
    store = PromptStore(folder, namespace({"model": "m"}), 1 << 30, 4, print, reserve_bytes=0)
    for n in range(count):
        tokens = np.arange(8, dtype=np.int32) + 100 * n
        assert store.write(PromptState(tokens, bytes(1000), 0, 0, ()))
    return sum(path.stat().st_size for path in folder.glob("*/*.kv"))


def test_prune_says_it_cleared_the_prompt_cache(daemon, cli):
    size = place_prompts(daemon, 3)  # 3 KB of states and their headers
    status, out, err = cli("prune")
    assert status == 0 and err == ""
    assert out.splitlines()[-1] == f"cleared the prompt cache: 3 files, {format_size(size)}"
    assert 3000 < size < 10_000
    assert list((daemon.data_dir / "prompt-cache").glob("*/*.kv")) == []
    status, out, _ = cli("prune")  # nothing left: no word of it
    assert status == 0 and "prompt cache" not in out


def test_prune_json_carries_the_prompt_cache(daemon, cli):
    size = place_prompts(daemon, 1)
    status, out, _ = cli("prune", "--json")
    answer = json.loads(out)
    assert status == 0
    assert (answer["prompt_cache_files"], answer["prompt_cache_freed"]) == (1, size)
