"""The default context: the trained context, under a cap, as far as free memory holds the load
as the memory plan counts it (every slot's cache, the compute buffer...); ``show`` says what a
model would run at and why, ``ps`` what it runs at."""

from __future__ import annotations

import dataclasses

import httpx
import pytest

from localllm.app.cli.show_view import render_show
from localllm.daemon.api.native_models import ShowResponse
from localllm.daemon.inference.options import merge_options, runner_options
from localllm.daemon.runners.types import RunnerSpec
from localllm.daemon.scheduler.context_size import CONTEXT_FLOOR, default_context
from localllm.daemon.scheduler.memory import ModelFootprint, footprint_shape
from localllm.daemon.scheduler.memory_plan import plan_memory, plan_settings
from localllm.daemon.settings import Settings
from localllm.model_registry.importer import ModelExtras
from tests.support.daemon import Daemon, make_store
from tests.support.runner import write_tiny_model

GIB = 1 << 30
# An 8B-like model: 4.5 GiB of weights, 32 layers, 8 of 32 KV heads of 128 values.
LLAMA_8B = ModelFootprint(int(4.5 * GIB), n_layer=32, n_embd=4096, n_head=32, n_head_kv=8)


def need(slots: int, kv_type: str = "f16"):
    """What a load of LLAMA_8B takes in RAM at a context per slot, as the plan counts it."""
    shape = footprint_shape(LLAMA_8B)

    def planned(num_ctx: int) -> int:
        spec = RunnerSpec("m", ("m.gguf",), num_ctx=num_ctx, num_parallel=slots)
        spec = dataclasses.replace(spec, kv_cache_type=kv_type)
        return plan_memory(shape, plan_settings(spec, shape)).ram_bytes

    return planned


def test_plenty_of_memory_gives_the_trained_context_or_the_cap():
    choice = default_context(need(4), 8192, 64 * GIB, 4)
    assert choice.num_ctx == 8192 and "trained context" in choice.reason
    choice = default_context(need(4), 131_072, 64 * GIB, 4)
    assert choice.num_ctx == 32768 and "cap of 32,768" in choice.reason
    assert default_context(need(1), 131_072, 640 * GIB, 1, cap=65536).num_ctx == 65536


def test_the_context_is_the_largest_whose_plan_fits_free_memory():
    """The plan's whole load (weights, every slot's cache, compute buffer), not the old
    weights + cache + a fixed 96 MiB: the largest multiple of 256 that fits, not one more."""
    free = 8 * GIB
    choice = default_context(need(4), 131_072, free, 4)
    assert choice.num_ctx % 256 == 0 and CONTEXT_FLOOR < choice.num_ctx < 32768
    assert need(4)(choice.num_ctx) <= free < need(4)(choice.num_ctx + 256)
    assert choice.reason == (
        f"the largest context that fits: {choice.num_ctx:,} tokens (4 slots, 8.0 GiB free)"
    )
    # a quantized cache, or fewer slots, holds more context in the same memory
    assert default_context(need(4, "q8_0"), 131_072, free, 4).num_ctx > choice.num_ctx
    assert default_context(need(1), 131_072, free, 1).num_ctx > choice.num_ctx


def test_the_bisection_asks_the_plan_a_few_times_not_once_a_step():
    asked = []

    def counted(num_ctx: int) -> int:
        asked.append(num_ctx)
        return need(4)(num_ctx)

    default_context(counted, 131_072, 8 * GIB, 4)
    assert len(asked) <= 10  # 2 + log2(32768 / 256) probes; a walk would make 120


def test_never_below_the_floor_nor_above_the_training():
    assert default_context(need(4), 131_072, 1 * GIB, 4).num_ctx == CONTEXT_FLOOR
    assert default_context(need(4), 1024, 1 * GIB, 4).num_ctx == 1024
    unknown = default_context(need(4), None, 64 * GIB, 4)
    assert unknown.num_ctx == 32768


def test_options_leave_the_context_to_the_loader_only_when_nothing_sets_it():
    assert runner_options(merge_options({}), Settings(), 131_072).num_ctx == 0
    assert runner_options(merge_options({"num_ctx": 0}), Settings(), 2048).num_ctx == 0
    assert runner_options(merge_options({"num_ctx": 4096}), Settings(), 2048).num_ctx == 4096
    assert runner_options(merge_options({}), Settings(num_ctx=8192), 2048).num_ctx == 2048
    assert Settings.from_env({"LOCALLLM_CONTEXT_CAP": "8192"}).context_cap == 8192


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("ctx")
    short = write_tiny_model(root / "short.gguf", context_length=2048, seed=5)
    long = write_tiny_model(root / "long.gguf", context_length=131_072, seed=6)
    fixed = (short, ModelExtras(parameters={"num_ctx": 1024}))
    store = make_store(root / "store", {"short": short, "long": long, "fixed": fixed})
    with Daemon(store, root / "logs") as running:
        yield running


def _show(daemon, name: str) -> dict:
    response = httpx.post(f"{daemon.url}/api/show", json={"model": name}, timeout=60)
    assert response.status_code == 200
    return response.json()["runs_with"]


def test_show_in_the_cli_says_what_it_runs_at_and_why(daemon):
    response = httpx.post(f"{daemon.url}/api/show", json={"model": "fixed"}, timeout=60)
    text = render_show(ShowResponse.model_validate(response.json()))
    assert "    runs at             1024 tokens x 4 slots\n" in text
    assert "    because             the model's num_ctx parameter\n" in text
    assert "    slots               the default of 4\n" in text
    assert "    kv cache            f16, flash attention auto\n" in text


def _context_in_ps(daemon, name: str) -> int:
    body = {"model": name, "prompt": "hi", "stream": False, "options": {"num_predict": 2}}
    assert httpx.post(f"{daemon.url}/api/generate", json=body, timeout=120).status_code == 200
    running = httpx.get(f"{daemon.url}/api/ps", timeout=30).json()["models"]
    entry = next(m for m in running if m["name"] == f"{name}:latest")
    # a CPU runs 4 slots, as it always did (more only where a GPU holds the model)
    assert (entry["num_parallel"], entry["parallel_reason"]) == (4, "the default of 4")
    return entry["context_length"]


def test_a_model_trained_for_2048_runs_at_2048(daemon):
    shown = _show(daemon, "short")
    assert shown["context_length"] == 2048 and "trained context" in shown["context_reason"]
    assert _context_in_ps(daemon, "short") == 2048
    assert _show(daemon, "short")["context_reason"].startswith("loaded: the model's trained")


def test_a_model_trained_for_131072_runs_at_the_cap_or_what_memory_holds(daemon):
    shown = _show(daemon, "long")
    assert CONTEXT_FLOOR <= shown["context_length"] <= 32768
    if shown["context_length"] < 32768:  # only when the machine is short of memory
        reason = shown["context_reason"]
        assert reason.startswith("the largest context that fits") or "floor" in reason
    else:
        assert "cap of 32,768" in shown["context_reason"]
    assert shown["kv_cache_type"] == "f16" and shown["num_parallel"] == 4
    assert shown["parallel_reason"] == "the default of 4"
    assert _context_in_ps(daemon, "long") == shown["context_length"]


def test_a_modelfile_num_ctx_is_kept_and_named(daemon):
    shown = _show(daemon, "fixed")
    assert shown["context_length"] == 1024
    assert shown["context_reason"] == "the model's num_ctx parameter"


def test_an_embedding_model_is_sized_as_before_at_most_4096():
    """Its context is one ubatch per input (compute buffers grow with it), so the sizing stays
    at the old default for embedding models."""
    import asyncio

    from localllm.daemon.runners.types import RunnerSpec
    from localllm.daemon.scheduler.loaded import LoadTarget
    from localllm.daemon.scheduler.loader import AUTO_GPU_LAYERS, RunnerLoader

    loader = RunnerLoader(None, lambda: [])
    spec = RunnerSpec("e", ("e.gguf",), num_ctx=0, num_gpu_layers=AUTO_GPU_LAYERS)
    embedder = LoadTarget("e", ("e.gguf",), LLAMA_8B, embedding_only=True, n_ctx_train=8192)
    chat = LoadTarget("c", ("c.gguf",), LLAMA_8B, n_ctx_train=8192)
    assert asyncio.run(loader.sizes(embedder, spec, 64 * GIB, 32768))[1].num_ctx == 4096
    assert asyncio.run(loader.sizes(chat, spec, 64 * GIB, 32768))[1].num_ctx == 8192
