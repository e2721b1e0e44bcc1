"""The prompt cache on disk from the daemon's side: ``LOCALLLM_PROMPT_CACHE_GB``, the folder
and bound every generating runner is started with, what a request restored from disk in its
log line, ``/metrics`` and ``/api/ps``, and ``/api/prompt-cache`` and ``/api/prune`` clearing
files written as runners write them. Whether a real runner restores a prompt is tested where
the runner is."""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from localllm.daemon.client import Client
from localllm.daemon.inference.options import runner_options
from localllm.daemon.runners.prompt_store import PromptState, PromptStore, namespace
from localllm.daemon.runners.types import DoneEvent, RunnerInfo, TokenEvent
from localllm.daemon.scheduler import LoadTarget, ModelFootprint
from localllm.daemon.scheduler.memory import footprint_shape
from localllm.daemon.scheduler.memory_plan import plan_memory, plan_settings
from localllm.daemon.scheduler.reuse import runner_spec
from localllm.daemon.server import create_app
from localllm.daemon.server.metrics import Metrics
from localllm.daemon.settings import PROMPT_CACHE_CAP, Settings, prompt_cache_default
from tests.support.daemon import Daemon, make_store, metric_value

GIB = 1 << 30
KEY = "LOCALLLM_PROMPT_CACHE_GB"


def place_prompts(data_dir: Path, count: int, model: str = "test") -> int:
    """``count`` prompt states written under ``data_dir`` as a runner writes them; the bytes
    of every file the cache holds then."""
    folder = data_dir / "prompt-cache"
    store = PromptStore(
        folder, namespace({"model": model}), GIB, block_tokens=4, log=print, reserve_bytes=0
    )
    for n in range(count):
        tokens = np.arange(8, dtype=np.int32) + 100 * n  # no prompt starts another
        assert store.write(PromptState(tokens, bytes(1000 + n), 0, 0, ()))
    return sum(path.stat().st_size for path in folder.glob("*/*.kv"))


# -- the setting -------------------------------------------------------------------------------


def test_the_setting_counts_gib_and_zero_turns_it_off(tmp_path):
    def chosen(value: str) -> Settings:
        return Settings.from_env({KEY: value, "LOCALLLM_DATA": str(tmp_path)})

    assert chosen("0").prompt_cache_bytes == 0
    assert chosen("1.5").prompt_cache_bytes == 3 * GIB // 2
    assert chosen(" 40 ").prompt_cache_bytes == 40 * GIB  # set: not capped
    assert chosen("1").prompt_cache_dir == tmp_path / "prompt-cache"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("lots", f"{KEY} must be a number, got 'lots'"),
        ("-1", f"{KEY} must be a number of GiB, 0 or more .* got -1"),
        ("nan", f"{KEY} must be a number of GiB, 0 or more .* got nan"),
        ("inf", f"{KEY} must be a number of GiB, 0 or more .* got inf"),
    ],
)
def test_a_bad_size_is_refused_saying_what_is_allowed(value, message):
    with pytest.raises(ValueError, match=message):
        Settings.from_env({KEY: value})


def test_unset_it_is_a_tenth_of_the_data_disks_free_space_at_most_20_gib(tmp_path):
    assert prompt_cache_default(0) == 0
    assert prompt_cache_default(-5) == 0
    assert prompt_cache_default(100 * GIB) == 10 * GIB
    assert prompt_cache_default(1000 * GIB) == PROMPT_CACHE_CAP == 20 * GIB
    not_made_yet = tmp_path / "a" / "b"  # read from the nearest folder that exists
    settings = Settings.from_env({"LOCALLLM_DATA": str(not_made_yet), KEY: ""})
    expected = prompt_cache_default(shutil.disk_usage(tmp_path).free)
    assert abs(settings.prompt_cache_bytes - expected) <= 64 << 20  # others write meanwhile
    assert settings.prompt_cache_bytes > 0


# -- the runner spec ---------------------------------------------------------------------------


def test_generating_runners_get_the_folder_and_bound_and_embedders_do_not(tmp_path):
    settings = Settings(data_dir=tmp_path, prompt_cache_bytes=3 * GIB)
    target = LoadTarget("m", ("m.gguf",), ModelFootprint(GIB, 2, 64, 4, 2))
    embedder = LoadTarget("e", ("e.gguf",), ModelFootprint(GIB, 2, 64, 4, 2), embedding_only=True)
    spec = runner_spec(target, runner_options({}, settings))
    assert (spec.prompt_cache_dir, spec.prompt_cache_bytes) == (
        str(tmp_path / "prompt-cache"),
        3 * GIB,
    )
    assert spec == runner_spec(target, runner_options({}, settings))  # no reload for it
    deterministic = runner_spec(target, runner_options({"deterministic": True}, settings))
    assert deterministic.prompt_cache_bytes == 3 * GIB and deterministic.host_cache_bytes > 0
    embedding = runner_spec(embedder, runner_options({}, settings))
    assert (embedding.prompt_cache_dir, embedding.prompt_cache_bytes) == (None, 0)
    off = runner_spec(target, runner_options({}, Settings(data_dir=tmp_path)))
    assert (off.prompt_cache_dir, off.prompt_cache_bytes) == (None, 0)


def test_the_memory_plan_does_not_count_the_disk():
    footprint = ModelFootprint(GIB, n_layer=4, n_embd=256, n_head=8, n_head_kv=4)
    target = LoadTarget("m", ("m.gguf",), footprint)
    shape = footprint_shape(footprint)
    on = runner_spec(target, runner_options({}, Settings(prompt_cache_bytes=20 * GIB)))
    off = runner_spec(target, runner_options({}, Settings(prompt_cache_bytes=0)))
    plans = [plan_memory(shape, plan_settings(spec, shape)) for spec in (on, off)]
    assert plans[0].total() == plans[1].total()


# -- what a request restored, through the app's own path from the runner's DoneEvent ---------

FROM_DISK = DoneEvent(
    "length", 50, 10, 3, 0.01, 0.02, 0.005, prompt_disk_tokens=32, prompt_disk_bytes=4096,
    prompt_disk_seconds=0.25,
)  # fmt: skip
NOT_FROM_DISK = DoneEvent("length", 50, 10, 3, 0.01, 0.02, 0.005)


class DoneScriptRunner:
    """Says "a b c" to every prompt, then ends each request with the next of ``done``."""

    def __init__(self, spec, done: list[DoneEvent]):
        self.info = RunnerInfo(
            "cpu", 0, 3, spec.num_ctx, 2048, spec.num_parallel, 100, 64, 0, 0, 1, 0.0
        )
        self.alive = True
        self._done = done

    async def generate(self, request):
        for word in ("a", " b", " c"):
            yield TokenEvent(word, (1,))
        yield self._done.pop(0)

    async def tokenize(self, text, add_bos=True, special=True):
        return [1] * len(text)

    async def stop(self):
        self.alive = False

    def last_log_lines(self, n=20):
        return []


@pytest.fixture
def specs() -> list:
    """The spec of each runner the app started."""
    return []


@pytest.fixture
def app_client(imported_store, tmp_path, specs):
    """The in-process app; its runner restores the 1st and 3rd requests' prompts from disk."""

    async def factory(spec, log_path):
        specs.append(spec)
        return DoneScriptRunner(spec, [FROM_DISK, NOT_FROM_DISK, FROM_DISK])

    settings = Settings(
        models_dir=imported_store.root,
        log_dir=tmp_path / "logs",
        data_dir=tmp_path / "data",
        prompt_cache_bytes=2 * GIB,
    )
    app = create_app(settings, store=imported_store, runner_factory=factory)
    with TestClient(app, base_url="http://localhost") as test_client:
        yield test_client


def chat(client):
    body = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}]}
    response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200
    return response


def test_the_log_line_says_what_came_from_disk(app_client, specs, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="localllm.requests"):
        chat(app_client)
        chat(app_client)
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "localllm.requests"]
    restored, decoded = lines
    assert restored["cached_tokens"] == 40 and restored["prompt_disk_tokens"] == 32
    assert restored["prompt_disk_ms"] == 250.0
    assert decoded["cached_tokens"] == 40
    assert "prompt_disk_tokens" not in decoded and "prompt_disk_ms" not in decoded
    (spec,) = specs  # the runner the request started: with the cache
    assert spec.prompt_cache_dir == str(tmp_path / "data" / "prompt-cache")
    assert spec.prompt_cache_bytes == 2 * GIB


def test_metrics_count_the_restores_per_model(app_client):
    for _ in range(3):
        chat(app_client)
    text = app_client.get("/metrics").text
    assert metric_value(text, "localllm_prompt_cache_disk_hits_total", model="tiny") == 2
    assert metric_value(text, "localllm_prompt_cache_disk_tokens_total", model="tiny") == 64
    assert metric_value(text, "localllm_prompt_cache_disk_read_bytes_total", model="tiny") == 8192
    seconds = "localllm_prompt_cache_disk_restore_seconds_total"
    assert metric_value(text, seconds, model="tiny") == 0.5
    assert metric_value(text, "localllm_prompt_cached_tokens_total", model="tiny") == 120


def test_ps_sums_the_restores_since_the_model_loaded(app_client):
    assert app_client.get("/api/ps").json()["models"] == []
    for _ in range(3):
        chat(app_client)
    (model,) = app_client.get("/api/ps").json()["models"]
    assert model["prompt_cache"] == {
        "hits": 2,
        "tokens": 64,
        "bytes_read": 8192,
        "restore_seconds": 0.5,
    }


def test_a_scrape_reads_the_folder_in_a_worker_thread(tmp_path):
    metrics = Metrics()
    empty = asyncio.run(metrics.scrape(tmp_path / "data" / "prompt-cache")).decode()
    assert "\nlocalllm_prompt_cache_files 0.0\n" in empty  # no folder yet: none
    size = place_prompts(tmp_path / "data", 2)
    text = asyncio.run(metrics.scrape(tmp_path / "data" / "prompt-cache")).decode()
    assert metric_value(text, "localllm_prompt_cache_files") == 2
    assert metric_value(text, "localllm_prompt_cache_bytes") == size > 2000


# -- the routes, on a real daemon ---------------------------------------------------------------


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("prompt-cache-api")
    store = make_store(root / "store", {})
    with Daemon(store, root / "logs", env={KEY: "2.5"}) as running:
        running.data_dir = root / "logs" / "data"
        yield running


@pytest.fixture
def client(daemon):
    with Client(daemon.url, timeout=30) as daemon_client:
        daemon_client.clear_prompt_cache()  # each test starts from an empty cache
        yield daemon_client


def test_get_counts_the_files_of_every_model_and_says_the_limit(daemon, client):
    assert client.prompt_cache().model_dump() == {
        "files": 0,
        "bytes": 0,
        "limit_bytes": 5 * GIB // 2,
    }
    place_prompts(daemon.data_dir, 2, model="a")
    size = place_prompts(daemon.data_dir, 1, model="b")
    answer = client.prompt_cache()
    assert (answer.files, answer.bytes) == (3, size)


def test_delete_clears_every_file(daemon, client):
    size = place_prompts(daemon.data_dir, 3)
    cleared = client.clear_prompt_cache()
    assert (cleared.files, cleared.freed) == (3, size)
    assert list((daemon.data_dir / "prompt-cache").glob("*/*.kv")) == []
    assert client.prompt_cache().files == 0
    assert client.clear_prompt_cache().model_dump() == {"files": 0, "freed": 0}


def test_prune_clears_the_prompt_cache_too(daemon, client):
    size = place_prompts(daemon.data_dir, 2)
    pruned = client.prune()
    assert (pruned.prompt_cache_files, pruned.prompt_cache_freed) == (2, size)
    assert client.prompt_cache().files == 0
    again = client.prune()
    assert (again.prompt_cache_files, again.prompt_cache_freed) == (0, 0)
