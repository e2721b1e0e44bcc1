"""The memory plan's arithmetic, from shapes written out by hand: caches by layer type with
llama.cpp's cell counts, cache types' bytes, the output buffer, where each part goes with GPU
layers and experts kept in RAM, extras, and the RAM the runner may fill later shown apart."""

from __future__ import annotations

import dataclasses

import pytest

from localllm.daemon.runners.types import LlamaBuffer, RunnerSpec
from localllm.daemon.scheduler.measured import corrected, device_name
from localllm.daemon.scheduler.memory_plan import (
    CPU,
    GPU0,
    LATER_KINDS,
    PlanSettings,
    cache_cells,
    plan_memory,
    plan_settings,
)
from localllm.model_registry.model_shape import ModelShape, WeightGroup

MIB = 1 << 20
SWA = tuple(i % 6 < 5 for i in range(18))  # Gemma 3: every sixth layer full
# Gemma 3 270M as llama.cpp sees it: 18 layers of 640, 4 heads sharing 1 KV head of 256
GEMMA = ModelShape(
    "gemma3",
    n_layer=18,
    n_embd=640,
    n_vocab=262_144,
    n_head=(4,) * 18,
    n_head_kv=(1,) * 18,
    head_k=256,
    head_v=256,
    head_k_swa=256,
    head_v_swa=256,
    n_ff=(2048,) * 18,
    sliding_window=512,
    swa_layers=SWA,
    weights=(
        WeightGroup(None, "embeddings", "Q8_0", 178_257_920),
        *(WeightGroup(i, "attention", "Q4_K", 700_000, repackable=True) for i in range(18)),
        *(WeightGroup(i, "ffn", "Q5_0", 2_800_000, repackable=True) for i in range(18)),
    ),
    tied_output=True,
)


def settings(**kw) -> PlanSettings:
    return PlanSettings(**({"ctx_per_slot": 4096, "slots": 4} | kw))


def test_the_caches_of_gemma_3_at_4_slots_of_4096_are_llama_cpps():
    """3 full layers x 4 slots x 4,096 cells, 15 window layers x 4 slots x (512 + 512) cells,
    K and V of one 256-value head, f16: the 48 and 60 MiB llama.cpp allocates."""
    plan = plan_memory(GEMMA, settings())
    assert plan.kind_bytes("kv") == 48 * MIB
    assert plan.kind_bytes("window kv") == 60 * MIB
    assert plan.kind_bytes("output") == 4 * MIB  # 4 rows of 262,144 floats
    longer = plan_memory(GEMMA, settings(ctx_per_slot=32768))
    assert longer.kind_bytes("kv") == 384 * MIB and longer.kind_bytes("window kv") == 60 * MIB


def test_the_compute_buffer_is_the_logits_of_a_full_batch():
    """512 tokens x 262,144 floats of logits: 512 MiB, and a few MiB beside them (llama.cpp:
    514.5 MiB at both contexts)."""
    for ctx in (4096, 32768):
        compute = plan_memory(GEMMA, settings(ctx_per_slot=ctx)).kind_bytes("compute")
        assert 512 * MIB < compute < 518 * MIB


def test_cells_are_rounded_as_llama_cpp_rounds_them():
    assert cache_cells(GEMMA, settings(ctx_per_slot=1000, slots=3)) == (1024, 1024, 3, 512)
    assert cache_cells(GEMMA, settings(ctx_per_slot=4096, slots=1)) == (4096, 1024, 1, 512)
    # a batch wider than the window's headroom: window + batch, rounded up to 256
    assert cache_cells(GEMMA, settings(ctx_per_slot=8192, slots=1, batch=700))[1] == 1280
    # a context shorter than the batch: the batch is the context
    assert cache_cells(GEMMA, settings(ctx_per_slot=256, slots=1)) == (256, 256, 1, 256)


@pytest.mark.parametrize(("kv_type", "ratio"), [("q8_0", 34 / 64), ("q4_0", 18 / 64)])
def test_a_quantized_cache_takes_its_blocks_bytes(kv_type, ratio):
    f16 = plan_memory(GEMMA, settings())
    quantized = plan_memory(GEMMA, settings(kv_type=kv_type))
    for kind in ("kv", "window kv"):
        assert quantized.kind_bytes(kind) == f16.kind_bytes(kind) * ratio


def test_without_flash_attention_a_layers_scores_are_in_the_compute_buffer():
    small_vocab = dataclasses.replace(GEMMA, n_vocab=1000)
    on = plan_memory(small_vocab, settings(ctx_per_slot=32768)).kind_bytes("compute")
    off = plan_memory(small_vocab, settings(ctx_per_slot=32768, flash_attention=False))
    scores = 4 * 512 * 32768 * 4  # heads x batch tokens x cells x f32
    assert off.kind_bytes("compute") - on > scores


def test_weights_mapped_and_repacked_for_this_cpu():
    plan = plan_memory(GEMMA, settings(repack_types=frozenset({"Q4_K"})))
    parts = [p for p in plan.parts if p.kind == "weights"]
    assert [p.bytes for p in parts] == [GEMMA.weights_bytes, 18 * 700_000]
    assert "repacked" in parts[1].text
    plain = plan_memory(GEMMA, settings())
    assert plain.kind_bytes("weights") == GEMMA.weights_bytes


def test_gpu_layers_split_weights_caches_and_compute_as_llama_cpp_places_them():
    """llama.cpp offloads the output layer first, then the last layers: 9 GPU layers are the
    output layer and layers 10-17. The embeddings stay in RAM; a tied output gets its own copy
    of them on the GPU."""
    embeddings = GEMMA.bytes_of("embeddings")
    half = plan_memory(GEMMA, settings(gpu_layers=9))
    on_gpu = sum(GEMMA.layer_bytes()[10:])
    assert half.kind_bytes("weights", GPU0) == on_gpu + embeddings
    assert half.kind_bytes("weights", CPU) == GEMMA.weights_bytes - on_gpu
    assert half.kind_bytes("compute", GPU0) > 512 * MIB  # the logits are the GPU's
    assert 0 < half.kind_bytes("compute", CPU) < 512 * MIB
    assert half.kind_bytes("window kv", GPU0) == 6 * 2 * 1024 * 4 * 256 * 2  # 11, 17: full
    whole = plan_memory(GEMMA, settings(gpu_layers=-1))
    assert whole.kind_bytes("weights", GPU0) == sum(GEMMA.layer_bytes()) + embeddings
    assert whole.kind_bytes("weights", CPU) == embeddings
    assert whole.kind_bytes("kv", CPU) == whole.kind_bytes("window kv", CPU) == 0
    assert whole.kind_bytes("compute", GPU0) > 512 * MIB  # the logits are the GPU's
    assert whole.vram_bytes + whole.ram_bytes == whole.total()


def test_experts_of_the_first_layers_stay_in_ram():
    moe = dataclasses.replace(
        GEMMA,
        n_expert=8,
        n_expert_used=2,
        n_ff_expert=512,
        weights=(
            *GEMMA.weights,
            *(WeightGroup(i, "experts", "Q4_K", 10 * MIB) for i in range(18)),
        ),
    )
    plan = plan_memory(moe, settings(gpu_layers=-1, cpu_moe_layers=12))
    assert plan.kind_bytes("experts", CPU) == 12 * 10 * MIB
    assert plan.kind_bytes("experts", GPU0) == 6 * 10 * MIB
    everything = plan_memory(moe, settings(gpu_layers=-1, cpu_moe_layers=-1))
    assert everything.kind_bytes("experts", CPU) == 18 * 10 * MIB


def test_host_cache_and_checkpoints_are_shown_apart_from_the_load():
    plan = plan_memory(GEMMA, settings(host_cache_bytes=1024 * MIB))
    window_state = 15 * 2 * 1024 * 256 * 2  # 15 window layers, K and V, 1,024 cells, f16
    assert plan.kind_bytes("host cache") == 1024 * MIB
    assert plan.kind_bytes("checkpoints") == 4 * 4 * window_state  # 4 slots x 4 states
    assert plan.total(later=True) - plan.total() == plan.later_bytes == 1024 * MIB + 240 * MIB
    small = plan_memory(GEMMA, settings(host_cache_bytes=100 * MIB))
    assert small.kind_bytes("checkpoints") == 100 * MIB  # as much again, at most
    dense = dataclasses.replace(GEMMA, sliding_window=0, swa_layers=())
    assert plan_memory(dense, settings(host_cache_bytes=MIB)).kind_bytes("checkpoints") == 0


def test_a_draft_model_has_its_own_full_size_caches():
    """The draft's context keeps a cell per token in its window layers too (swa_full)."""
    plan = plan_memory(GEMMA, settings(draft=GEMMA))
    alone = plan_memory(GEMMA, settings(swa_full=True))
    assert plan.kind_bytes("draft") == alone.total()
    assert alone.kind_bytes("window kv") == 15 * 2 * 4096 * 4 * 256 * 2


def test_a_draft_model_is_planned_in_ram_where_the_runner_loads_it():
    """The worker loads a draft with no GPU layers, so a GPU load counts it against RAM."""
    plan = plan_memory(GEMMA, settings(gpu_layers=-1, draft=GEMMA))
    (draft,) = [part for part in plan.parts if part.kind == "draft"]
    assert draft.device == CPU
    assert plan.total(GPU0) == plan_memory(GEMMA, settings(gpu_layers=-1)).total(GPU0)


def test_settings_from_a_spec_decide_flash_attention_as_the_runner_does():
    llama_1b = dataclasses.replace(GEMMA, head_k=64, head_v=64, n_head=(32,) * 18)
    spec = RunnerSpec("m", ("m.gguf",), num_ctx=4096, num_parallel=4, num_batch=2)
    decided = plan_settings(spec, llama_1b)
    assert not decided.flash_attention  # small heads on a CPU: auto means off
    assert decided.batch == 4  # the runner's batch holds every slot's token
    quantized = plan_settings(dataclasses.replace(spec, kv_cache_type="q8_0"), llama_1b)
    assert quantized.flash_attention
    assert plan_settings(spec, GEMMA).flash_attention  # 256-value heads: llama.cpp's auto, on


def test_measured_figures_replace_the_plans_and_say_so():
    plan = plan_memory(GEMMA, settings(host_cache_bytes=4 * MIB))
    buffers = [
        LlamaBuffer("model", "CPU_Mapped", "weights", 246_583_132),
        LlamaBuffer("model", "CPU_REPACK", "weights", 13_274_972),
        LlamaBuffer("context", "CPU", "kv", 48 * MIB),
        LlamaBuffer("context", "CPU", "window kv", 60 * MIB),
        LlamaBuffer("context", "CPU", "output", 4 * MIB),
        LlamaBuffer("context", "CPU", "compute", 539_492_352),
    ]
    fixed = corrected(plan, buffers)
    assert fixed.total() == sum(b.bytes for b in buffers)
    assert fixed.measured and all(p.measured for p in fixed.parts if p.kind not in LATER_KINDS)
    assert fixed.later_bytes == plan.later_bytes == 8 * MIB  # not llama.cpp's: as planned


def test_llama_cpp_buffer_types_name_devices():
    assert [device_name(d) for d in ("CPU", "CPU_Mapped", "CPU_REPACK", "CUDA_Host")] == [CPU] * 4
    assert (device_name("CUDA0"), device_name("CUDA1"), device_name("Metal")) == (
        "GPU0",
        "GPU1",
        "GPU0",
    )
