"""GPU placement from the memory plan (``scheduler/placement.py``), with fake GPU probes: the
most layers whose plan's GPU part (their tensors, the output layer, the compute buffer, their
KV cache) fits free VRAM less the margin; a MoE model's experts of the fewest layers kept in RAM
so every layer's rest fits; what the user set kept; no GPU, no GPU part; and a model on a GPU
counted against free RAM with its RAM part only. The models are generated files, so every plan
comes from a real header."""

from __future__ import annotations

import dataclasses
import math

import pytest

from localllm.daemon.runners.types import RunnerSpec
from localllm.daemon.scheduler import LoadTarget, MemoryInfo, ModelFootprint, RunnerOptions
from localllm.daemon.scheduler.loader import RunnerLoader
from localllm.daemon.scheduler.memory_plan import CPU, PlanSettings, plan_memory
from localllm.daemon.scheduler.placement import (
    VRAM_RESERVE,
    choose_placement,
    read_on_gpu,
    usable_vram,
)
from localllm.model_registry.model_shape import ModelShape, WeightGroup
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.test_scheduler import Harness, run

GIB, MIB = 1 << 30, 1 << 20
OPTIONS = RunnerOptions(num_ctx=512, num_parallel=2)


@pytest.fixture(scope="module")
def dense(tmp_path_factory) -> LoadTarget:
    path = write_tiny_model(tmp_path_factory.mktemp("dense") / "d.gguf", n_layer=8, n_embd=256)
    return LoadTarget("dense", (str(path),), ModelFootprint(path.stat().st_size, 8, 256, 4, 4))


@pytest.fixture(scope="module")
def moe(tmp_path_factory) -> LoadTarget:
    folder = tmp_path_factory.mktemp("moe")
    path = write_tiny_model(folder / "m.gguf", n_layer=6, n_embd=128, n_expert=8, n_expert_used=2)
    return LoadTarget("moe", (str(path),), ModelFootprint(path.stat().st_size, 6, 128, 4, 4))


def gpu_part(target: LoadTarget, gpu_layers: int, cpu_moe: int = 0) -> int:
    """The GPU part of ``target``'s plan with these layers, for the spec ``OPTIONS`` make."""
    loader = RunnerLoader(None, lambda: [])
    shapes = run(loader.planner.shapes(target))
    spec = RunnerSpec(
        target.name,
        target.model_paths,
        num_ctx=512,
        num_parallel=2,
        num_gpu_layers=gpu_layers,
        num_cpu_moe=cpu_moe,
    )
    return loader.planner.plan(shapes, spec)[0].vram_bytes


def card(usable: int) -> list[int]:
    """A GPU whose free VRAM leaves ``usable`` bytes after the margin (small cards: the
    reserve, not 10%)."""
    free = VRAM_RESERVE + usable
    assert usable_vram([free]) == usable
    return [free]


async def load(h: Harness, target: LoadTarget, options: RunnerOptions = OPTIONS):
    """The spec ``target`` loads with, the plan's placement reason, its memory plan."""
    plan = await h.scheduler.plan(target, options)
    async with h.scheduler.lease(target, options) as lease:
        (status,) = [s for s in h.scheduler.status() if s.name == target.name]
        return lease.spec, plan.placement.reason, status.memory


def test_a_dense_model_gets_the_most_layers_whose_plan_fits(dense):
    between = (gpu_part(dense, 5) + gpu_part(dense, 6)) // 2
    h = Harness(gpu_backend=True, free_vram=card(between))
    spec, reason, memory = run(load(h, dense))
    assert (spec.num_gpu_layers, spec.num_cpu_moe) == (5, 0)
    assert reason == "5/9 layers fit in 0.5 GiB free VRAM"
    assert memory.vram_bytes == gpu_part(dense, 5) <= between
    assert memory.kind_bytes("kv", "GPU0") and memory.kind_bytes("compute", "GPU0")


def test_a_moe_model_keeps_the_experts_of_the_fewest_layers_in_ram(moe):
    """Every layer on the GPU with the experts of 2 layers in RAM fits, with those of 1 it
    does not: 2 it is, not fewer GPU layers."""
    between = (gpu_part(moe, 7, 1) + gpu_part(moe, 7, 2)) // 2
    h = Harness(gpu_backend=True, free_vram=card(between))
    spec, reason, memory = run(load(h, moe))
    assert (spec.num_gpu_layers, spec.num_cpu_moe) == (7, 2)
    assert reason == "all layers on the GPU, experts of 2/6 layers in RAM (0.5 GiB free VRAM)"
    per_layer = memory.kind_bytes("experts") // 6
    assert memory.kind_bytes("experts", CPU) == 2 * per_layer
    assert memory.vram_bytes <= between


def test_what_the_user_sets_is_kept(moe):
    between = (gpu_part(moe, 7, 1) + gpu_part(moe, 7, 2)) // 2

    def placed(**options) -> tuple[int, int, str]:
        h = Harness(gpu_backend=True, free_vram=card(between))
        spec, reason, _ = run(load(h, moe, RunnerOptions(num_ctx=512, num_parallel=2, **options)))
        return spec.num_gpu_layers, spec.num_cpu_moe, reason

    assert placed(num_gpu=3) == (3, 0, "num_gpu=3 requested")  # no experts moved for it
    layers, cpu_moe, reason = placed(num_cpu_moe=1)  # the layers chosen around it
    assert cpu_moe == 1 and 0 < layers < 7
    assert gpu_part(moe, layers, 1) <= between < gpu_part(moe, layers + 1, 1)
    experts = "experts of 1/6 layers in RAM (num_cpu_moe)"
    assert reason == f"{layers}/7 layers fit in 0.5 GiB free VRAM, {experts}"
    layers, cpu_moe, _ = placed(num_cpu_moe=0)  # none in RAM: fewer layers instead
    assert cpu_moe == 0 and gpu_part(moe, layers) <= between < gpu_part(moe, layers + 1)


@pytest.mark.parametrize("num_gpu", [None, -1])
def test_without_a_gpu_the_plan_keeps_everything_in_ram(moe, num_gpu):
    """A CPU-only machine or build: no layer placed by us, none counted on a GPU even where
    layers were asked for (the runner keeps them in RAM): the whole load is RAM."""
    h = Harness(gpu_backend=False, free_vram=[])
    options = RunnerOptions(num_ctx=512, num_parallel=2, num_gpu=num_gpu)
    spec, reason, memory = run(load(h, moe, options))
    assert spec.num_cpu_moe == 0 and memory.vram_bytes == 0
    assert memory.ram_bytes == memory.load_bytes > 0
    assert spec.num_gpu_layers == (0 if num_gpu is None else 7)
    assert reason == ("no GPU found" if num_gpu is None else "num_gpu=-1 requested")


def test_a_model_on_the_gpu_counts_against_free_ram_with_its_ram_part(dense, moe):
    """A model wholly on the GPU takes a few MiB of RAM (logits, the graph's inputs), not its
    weights: a second load that fits beside that part keeps it loaded."""
    h = Harness(gpu_backend=True, free_vram=[40 * GIB])

    async def scenario():
        first = await h.scheduler.plan(dense, OPTIONS)
        second = await h.scheduler.plan(moe, OPTIONS)
        assert first.ram_bytes < first.estimate_bytes // 2  # most of it is on the GPU
        # room for the second's RAM part beside the first's RAM part, not its whole load
        total = first.estimate_bytes + int(second.ram_bytes / 0.8) - MIB
        h.memory = MemoryInfo(total=total, available=total)
        async with h.scheduler.lease(dense, OPTIONS):
            pass
        async with h.scheduler.lease(moe, OPTIONS):
            assert h.live() == ["dense", "moe"]

    run(scenario())


# Qwen3-30B-A3B-like, at about 4.5 bits a weight: 48 layers of 12 MiB of attention and 330 MiB
# of experts (128 of 768, 8 used), 4 of 32 heads of 128 values keep a cache, 151,936 tokens.
MIXTURE = ModelShape(
    "qwen3moe",
    n_layer=48,
    n_embd=2048,
    n_vocab=151_936,
    n_head=(32,) * 48,
    n_head_kv=(4,) * 48,
    head_k=128,
    head_v=128,
    n_ff=(6144,) * 48,
    n_expert=128,
    n_expert_used=8,
    n_ff_expert=768,
    weights=(
        WeightGroup(None, "embeddings", "Q4_K", 170 * MIB),
        WeightGroup(None, "output", "Q6_K", 240 * MIB),
        *(WeightGroup(i, "attention", "Q4_K", 12 * MIB) for i in range(48)),
        *(WeightGroup(i, "experts", "Q4_K", 330 * MIB) for i in range(48)),
    ),
)
DENSE = ModelShape(  # a 14B-like dense model: 48 layers of 180 MiB
    "llama",
    n_layer=48,
    n_embd=5120,
    n_vocab=152_064,
    n_head=(40,) * 48,
    n_head_kv=(8,) * 48,
    head_k=128,
    head_v=128,
    n_ff=(13824,) * 48,
    weights=(
        WeightGroup(None, "embeddings", "Q4_K", 420 * MIB),
        WeightGroup(None, "output", "Q6_K", 610 * MIB),
        *(WeightGroup(i, "attention", "Q4_K", 45 * MIB) for i in range(48)),
        *(WeightGroup(i, "ffn", "Q4_K", 135 * MIB) for i in range(48)),
    ),
)


def planner(shape: ModelShape, num_ctx: int = 4096):
    """``plan_for`` at 4 slots of ``num_ctx`` tokens, and the plans it was asked for."""
    asked: list[tuple[int, int]] = []

    def plan_for(layers: int, cpu_moe: int):
        asked.append((layers, cpu_moe))
        settings = PlanSettings(num_ctx, 4, gpu_layers=layers, cpu_moe_layers=cpu_moe)
        return plan_memory(shape, settings)

    return plan_for, asked


def bound(shape: ModelShape) -> int:
    """A few bisections' plans: never one per layer."""
    return 3 * math.ceil(math.log2(shape.n_layer + 2)) + 3


def test_an_8_gb_card_holds_a_30b_a3b_model_with_experts_in_ram():
    plan_for, asked = planner(MIXTURE)
    placement = choose_placement(MIXTURE, plan_for, [8 * GIB])
    kept = placement.cpu_moe_layers
    assert placement.gpu_layers == 49 and 0 < kept < 48
    usable = usable_vram([8 * GIB])
    assert plan_for(49, kept).vram_bytes <= usable < plan_for(49, kept - 1).vram_bytes
    assert placement.reason == (
        f"all layers on the GPU, experts of {kept}/48 layers in RAM (8.0 GiB free VRAM)"
    )
    assert placement.plans == len(asked) - 2 <= bound(MIXTURE)


def test_a_dense_model_too_big_for_the_card_is_split():
    plan_for, asked = planner(DENSE)
    placement = choose_placement(DENSE, plan_for, [int(7.4 * GIB)])
    layers = placement.gpu_layers
    assert 0 < layers < 49 and placement.cpu_moe_layers == 0
    usable = usable_vram([int(7.4 * GIB)])
    assert plan_for(layers, 0).vram_bytes <= usable < plan_for(layers + 1, 0).vram_bytes
    assert placement.reason == f"{layers}/49 layers fit in 7.4 GiB free VRAM"
    assert placement.plans == len(asked) - 2 <= math.ceil(math.log2(49)) + 1


def test_where_even_every_expert_in_ram_leaves_no_room_for_all_layers():
    """4 slots of 131,072 tokens: every layer's cache alone is more than the card holds, so
    all experts stay in RAM and as many layers' attention and cache go to the GPU as fit."""
    plan_for, _ = planner(MIXTURE, 131_072)
    placement = choose_placement(MIXTURE, plan_for, [24 * GIB])
    layers = placement.gpu_layers
    assert placement.cpu_moe_layers == 48 and 0 < layers < 49
    usable = usable_vram([24 * GIB])
    assert plan_for(layers, 48).vram_bytes <= usable < plan_for(layers + 1, 48).vram_bytes
    expected = f"{layers}/49 layers fit in 24.0 GiB free VRAM, experts of 48/48 layers in RAM"
    assert placement.reason == expected


def test_whole_layers_win_where_they_put_more_of_what_a_token_reads_on_the_gpu():
    """A model whose tokens use half its experts, 4 slots of 32,768 tokens: with its experts
    in RAM every layer's cache (three quarters of it other slots') fills the room a token's
    experts would read from; the most whole layers have the GPU do more of each token."""
    half = dataclasses.replace(MIXTURE, n_expert_used=64)
    plan_for, _ = planner(half, 32768)
    placement = choose_placement(half, plan_for, [24 * GIB])
    assert placement.cpu_moe_layers == 0 and 0 < placement.gpu_layers < 49
    assert placement.reason == f"{placement.gpu_layers}/49 layers fit in 24.0 GiB free VRAM"
    usable = usable_vram([24 * GIB])
    fewest = next(k for k in range(49) if plan_for(49, k).vram_bytes <= usable)  # possible
    whole = plan_for(placement.gpu_layers, 0)
    assert read_on_gpu(whole, half) > read_on_gpu(plan_for(49, fewest), half)
    # the same card and contexts with a token reading 8 of 128 experts: experts in RAM
    plan_for, _ = planner(MIXTURE, 32768)
    assert choose_placement(MIXTURE, plan_for, [24 * GIB]).gpu_layers == 49
