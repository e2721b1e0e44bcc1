"""The default number of slots (``scheduler/parallel.py``): 4 on a CPU, as before; more where a
GPU holds the whole model and has room for them, as its memory plan counts it; what a setting or
a request asks wins. Free memory is an input, so no test needs a card of any size."""

from __future__ import annotations

import asyncio

import pytest

from localllm.daemon.inference.options import merge_options, runner_options
from localllm.daemon.runners.types import RunnerSpec
from localllm.daemon.scheduler import LoadTarget, RunnerOptions
from localllm.daemon.scheduler.loader import AUTO_GPU_LAYERS, RunnerLoader
from localllm.daemon.scheduler.memory import ModelFootprint, footprint_shape
from localllm.daemon.scheduler.memory_plan import plan_memory, plan_settings
from localllm.daemon.scheduler.parallel import (
    DEFAULT_PARALLEL,
    MOST_PARALLEL,
    default_parallel,
    slots_fit,
)
from localllm.daemon.settings import Settings
from tests.test_scheduler import Harness, run, settle

GIB = 1 << 30
# Llama 3.1 8B at Q4_K_M: 4.9 GB of weights, 32 layers, 8 of 32 KV heads of 128 values
# (128 KiB of f16 cache a token); Llama 3.2 1B at Q8_0: 1.3 GB, 16 layers, 8 KV heads of 64.
LLAMA_8B = ModelFootprint(int(4.9e9), n_layer=32, n_embd=4096, n_head=32, n_head_kv=8)
LLAMA_1B = ModelFootprint(int(1.3e9), n_layer=16, n_embd=2048, n_head=32, n_head_kv=8)


def on_gpu(footprint: ModelFootprint, slot_context: int, kv_type: str = "f16"):
    """The plan of ``footprint`` with every layer on the GPU, for a number of slots."""
    shape = footprint_shape(footprint)

    def plan_for(slots: int):
        spec = RunnerSpec(
            "m",
            ("m.gguf",),
            num_ctx=slot_context,
            num_parallel=slots,
            num_gpu_layers=-1,
            kv_cache_type=kv_type,
        )
        return plan_memory(shape, plan_settings(spec, shape))

    return plan_for


@pytest.mark.parametrize(
    ("footprint", "vram_gib", "slot_context", "slots"),
    [
        (LLAMA_8B, 8, 32768, 4),  # a small card: the default, the context sized down later
        (LLAMA_8B, 24, 32768, 4),  # 4 x 32k = 16 GiB of cache: more than half of what is left
        (LLAMA_8B, 24, 8192, 8),  # ... with 8k-token slots, 8 of them fit in half
        (LLAMA_8B, 141, 32768, 8),  # an H200: 16 x 4 GiB would take more than half
        (LLAMA_8B, 141, 16384, 16),
        (LLAMA_1B, 24, 32768, 8),
        (LLAMA_1B, 141, 131072, 8),
        (LLAMA_1B, 141, 32768, 16),  # never above the most, however much room (32 fit)
    ],
)
def test_slots_double_while_half_the_vram_the_weights_leave_holds_them(
    footprint, vram_gib, slot_context, slots
):
    """Half of what the plan's other GPU parts (weights, compute buffer) leave holds the
    slots' caches; twice as many would not fit in it."""
    usable = vram_gib * GIB * 0.9
    plan_for = on_gpu(footprint, slot_context)
    choice = default_parallel(plan_for, slot_context, usable)
    assert choice.num_parallel == slots
    assert slots == DEFAULT_PARALLEL or slots_fit(plan_for(slots), usable)
    assert slots == MOST_PARALLEL or not slots_fit(plan_for(2 * slots), usable)
    if slots > DEFAULT_PARALLEL:
        assert (
            choice.reason
            == f"{slots} of {slot_context:,} tokens fit in {usable / GIB:.1f} GiB free VRAM"
        )
    else:
        assert "holds no more" in choice.reason


def test_a_quantized_cache_fits_more_slots():
    usable = 24 * GIB * 0.9
    assert default_parallel(on_gpu(LLAMA_8B, 12288), 12288, usable).num_parallel == 4
    q8 = on_gpu(LLAMA_8B, 12288, "q8_0")
    assert default_parallel(q8, 12288, usable).num_parallel == 8


def test_off_a_gpu_it_stays_4():
    choice = default_parallel(on_gpu(LLAMA_1B, 32768), 32768, None)
    assert (choice.num_parallel, choice.reason) == (4, "the default of 4")


def target(footprint: ModelFootprint, **kw) -> LoadTarget:
    return LoadTarget("m", ("/models/m.gguf",), footprint, n_ctx_train=131_072, **kw)


def plan(footprint: ModelFootprint, free_vram: list[int], **spec) -> RunnerSpec:
    """The spec the loader starts a runner with, for a spec that leaves slots (and, unless
    given, context and GPU layers) to it, with 64 GiB of free RAM."""
    values = {"num_ctx": 0, "num_parallel": 0, "num_gpu_layers": AUTO_GPU_LAYERS} | spec
    loader = RunnerLoader(None, lambda: free_vram)
    return asyncio.run(
        loader.plan(target(footprint), RunnerSpec("m", ("m.gguf",), **values), 64 * GIB)
    ).spec


def test_the_loader_sizes_slots_then_context_from_the_gpu():
    h200 = [141 * GIB]
    on_gpu = plan(LLAMA_8B, h200)
    assert (on_gpu.num_parallel, on_gpu.num_ctx, on_gpu.num_gpu_layers) == (8, 32768, 33)
    assert plan(LLAMA_1B, h200).num_parallel == 16
    on_cpu = plan(LLAMA_8B, [])  # no GPU: 4 slots, the context from RAM as before
    assert (on_cpu.num_parallel, on_cpu.num_gpu_layers) == (4, 0)
    partly = plan(LLAMA_8B, [4 * GIB])  # the weights do not fit: some layers on the CPU
    assert partly.num_parallel == 4 and 0 < partly.num_gpu_layers < 33


def test_what_is_set_is_kept():
    h200 = [141 * GIB]
    assert plan(LLAMA_8B, h200, num_parallel=2).num_parallel == 2
    assert plan(LLAMA_8B, h200, num_parallel=64).num_parallel == 64
    # a fixed context per slot is what each slot holds: 8 of 131,072 tokens fit, not 16
    assert plan(LLAMA_1B, h200, num_ctx=131_072).num_parallel == 8
    assert plan(LLAMA_8B, h200, num_ctx=2048).num_parallel == 16
    assert plan(LLAMA_8B, h200, num_gpu_layers=10).num_parallel == 4  # layers set: not whole


def test_an_embedding_model_keeps_4():
    loader = RunnerLoader(None, lambda: [141 * GIB])
    spec = RunnerSpec("e", ("e.gguf",), num_ctx=0, num_parallel=0, num_gpu_layers=AUTO_GPU_LAYERS)
    embedder = target(LLAMA_1B, embedding_only=True)
    assert asyncio.run(loader.plan(embedder, spec, 64 * GIB)).spec.num_parallel == 4


def test_settings_and_options_leave_the_slots_to_the_loader_unless_they_set_them():
    assert Settings().num_parallel == 0
    assert Settings.from_env({"LOCALLLM_NUM_PARALLEL": "8"}).num_parallel == 8
    assert runner_options(merge_options({}), Settings()).num_parallel == 0
    assert runner_options(merge_options({"num_parallel": 3}), Settings()).num_parallel == 3
    assert runner_options(merge_options({}), Settings(num_parallel=6)).num_parallel == 6


def test_the_scheduler_serves_as_many_requests_at_once_as_the_slots_chosen():
    """The slots a runner got are the requests the scheduler lets in at once, and ``ps``'s
    status (and ``show``, before a load) say how many and why."""

    async def scenario():
        h = Harness(gpu_backend=True, free_vram=[141 * GIB])
        options = RunnerOptions(num_ctx=0, num_parallel=0)
        big = LoadTarget("big", ("/models/big.gguf",), LLAMA_1B, n_ctx_train=131_072)
        parallel, context = await h.scheduler.sizes(big, options)
        assert (parallel.num_parallel, context.num_ctx) == (16, 32768)
        leases = [await h.scheduler.acquire(big, options) for _ in range(16)]
        (status,) = h.scheduler.status()
        assert status.spec.num_parallel == 16 and status.busy_slots == 16
        assert status.parallel_reason.startswith("16 of 32,768 tokens fit in")
        waiting = asyncio.ensure_future(h.scheduler.acquire(big, options))
        await settle()
        assert not waiting.done()  # the 17th waits for a slot
        leases[0].release()
        (await waiting).release()
        for lease in leases[1:]:
            lease.release()
        parallel, _ = await h.scheduler.sizes(big, options)
        assert parallel.reason.startswith("loaded: 16 of 32,768 tokens")

    run(scenario())
