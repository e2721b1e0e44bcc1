"""Claude Code's recorded first request on Gemma 3 270M, through the real daemon: after
``localllm stop`` and after a daemon restart, its 11,684-token prompt is read back from the
prompt cache on disk instead of read again (48 s cold on 2 cores; times in bench/RESULTS.md),
and in the deterministic mode the answer is token for token the cold read's.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from localllm.model_registry.importer import ModelExtras
from tests.support.agent_answers import Answer, read_answer
from tests.support.daemon import Daemon, make_store
from tests.support.model_writers.gemma3 import GEMMA_TEMPLATE
from tests.support.polling import wait_for
from tests.support.real_model import gemma_path

# a cold read of the whole prompt: a minute or more on two busy cores
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

FIXTURE = Path(__file__).parent / "agents" / "fixtures" / "claude.json"
BATCH = 512  # the runner's batch: a deterministic read resumes after whole ones


def _first_request() -> dict:
    (request,) = [r for r in json.loads(FIXTURE.read_text())["requests"] if r["kind"] == "first"]
    return request


def _ask(daemon: Daemon, request: dict) -> Answer:
    # greedy and short: the recorded body asks for up to 32,000 tokens at Claude Code's default
    body = {**request["body"], "model": "gemma", "max_tokens": 8, "temperature": 0}
    answer = httpx.post(
        f"{daemon.url}{request['path']}?{request['query']}",
        json=body,
        headers=request["headers"],
        timeout=1200,
    )
    assert answer.status_code == 200, answer.text
    return read_answer(request["path"], answer.text)


def _stop(daemon: Daemon) -> None:
    """``localllm stop gemma``: unloaded, and its runner gone."""
    stopped = httpx.post(f"{daemon.url}/api/generate", json={"model": "gemma", "keep_alive": 0})
    assert stopped.status_code == 200, stopped.text
    assert wait_for(lambda: not httpx.get(f"{daemon.url}/api/ps").json()["models"], 60)
    assert wait_for(lambda: not daemon.runner_pids(), 60)


def test_claude_codes_first_turn_is_read_from_disk_after_a_stop_and_a_restart(tmp_path):
    extras = ModelExtras(template=GEMMA_TEMPLATE, parameters={"deterministic": True})
    store = make_store(tmp_path / "models", {"gemma": (gemma_path(), extras)})
    env = {
        "LOCALLLM_DATA": str(tmp_path / "data"),  # both daemons' prompt cache
        "LOCALLLM_CONTEXT_LENGTH": "16384",
        "LOCALLLM_NUM_THREADS": "2",
    }
    request = _first_request()
    with Daemon(store, tmp_path / "first", env=env) as daemon:
        cold = _ask(daemon, request)
        _stop(daemon)
        after_stop = _ask(daemon, request)
    with Daemon(store, tmp_path / "second", env=env) as daemon:
        after_restart = _ask(daemon, request)
        running = httpx.get(f"{daemon.url}/api/ps").json()["models"]

    assert cold.prompt_tokens > 11_000 and cold.cached_tokens == 0
    for warm in (after_stop, after_restart):
        assert warm.prompt_tokens == cold.prompt_tokens
        # all but the last part batch, from a runner that had read nothing
        assert warm.cached_tokens >= cold.prompt_tokens - BATCH
        assert warm.cached_tokens % BATCH == 0
        assert (warm.text, warm.calls, warm.finish) == (cold.text, cold.calls, cold.finish)
    assert running[0]["prompt_cache"]["hits"] == 1
