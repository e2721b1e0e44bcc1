"""The memory plan against what llama.cpp really allocates, over a matrix of generated models and
runner settings: dense llamas at F16, Q8_0 and Q4_0, a Gemma-3-like sliding-window model, a
mixture of experts, a 262k vocabulary; KV caches f16, q8_0 and q4_0 (a quantized V cache needs
flash attention: llama.cpp refuses it without); flash attention on and off; 1 and 4 slots;
2,048 and 32,768 tokens a slot. Not the cross product: for every model, every pair of
(cache type, flash attention, slots, context) values that llama.cpp accepts appears.

llama.cpp's figures are the buffers it logs at load, for the model loaded and the context made
exactly as the runner makes them (``tests/support/llama_buffers``). The plan's total must be
within 10% of theirs in every cell, and its compute buffer, the part the plan estimates rather
than counts, within 15%."""

from __future__ import annotations

import pytest

from localllm.daemon.runners.types import RunnerSpec
from localllm.daemon.scheduler.memory_plan import plan_memory, plan_settings
from localllm.daemon.scheduler.repack import repacked_types
from localllm.model_registry.model_shape import read_model_shape
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.llama_buffers import MeasuredModel
from tests.support.model_writers.gemma3 import write_tiny_gemma3

MIB = 1 << 20
# Heads of 32 values, so q8_0 and q4_0 blocks (32 values) tile them: llama.cpp needs that.
MODELS = {
    "llama F16": lambda p: write_tiny_model(p, n_head=2, file_type="F16", seed=11),
    "llama Q8_0": lambda p: write_tiny_model(p, n_head=2, file_type="Q8_0", seed=12),
    "llama Q4_0": lambda p: write_tiny_model(p, n_head=2, file_type="Q4_0", seed=13),
    "gemma3 window": lambda p: write_tiny_gemma3(p, seed=14),
    "MoE 4x2": lambda p: write_tiny_model(p, n_head=2, n_expert=4, n_expert_used=2, seed=15),
    "262k vocabulary": lambda p: write_tiny_gemma3(p, vocab_size=262_144, seed=16),
}
# (cache type, flash attention, slots, tokens a slot): every pair of values, per model
CELLS = [
    ("f16", "on", 1, 2048),
    ("f16", "off", 4, 2048),
    ("f16", "on", 4, 32768),
    ("f16", "off", 1, 32768),
    ("q8_0", "on", 4, 2048),
    ("q8_0", "on", 1, 32768),
    ("q4_0", "on", 1, 2048),
    ("q4_0", "on", 4, 32768),
]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Each model written, loaded once (as the runner loads it) and its shape read."""
    root = tmp_path_factory.mktemp("matrix")
    loaded = {}
    try:
        for i, (name, write) in enumerate(MODELS.items()):
            path = write(root / f"{i}.gguf")
            loaded[name] = (path, read_model_shape(path), MeasuredModel(spec_for(path, *CELLS[0])))
        yield loaded
    finally:
        for _, _, measured in loaded.values():
            measured.close()


def spec_for(path, kv_type: str, flash: str, slots: int, ctx: int) -> RunnerSpec:
    return RunnerSpec(
        "matrix",
        (str(path),),
        num_ctx=ctx,
        num_parallel=slots,
        num_threads=1,
        kv_cache_type=kv_type,
        flash_attention=flash,
        host_cache_bytes=0,
    )


def by_kind(buffers) -> dict[str, int]:
    found: dict[str, int] = {}
    for buffer in buffers:
        found[buffer.kind] = found.get(buffer.kind, 0) + buffer.bytes
    return found


def table(name: str, cell, planned: dict[str, int], real: dict[str, int]) -> str:
    rows = [f"{name} {cell}: part, planned MiB, llama.cpp MiB"]
    for kind in sorted(set(planned) | set(real)):
        rows.append(
            f"  {kind:<10} {planned.get(kind, 0) / MIB:10.2f} {real.get(kind, 0) / MIB:10.2f}"
        )
    rows.append(
        f"  {'total':<10} {sum(planned.values()) / MIB:10.2f} {sum(real.values()) / MIB:10.2f}"
    )
    return "\n".join(rows)


@pytest.mark.parametrize("cell", CELLS, ids=lambda c: "-".join(map(str, c)))
@pytest.mark.parametrize("name", list(MODELS))
def test_the_plan_is_within_10_percent_of_what_llama_cpp_allocates(models, name, cell):
    path, shape, measured = models[name]
    spec = spec_for(path, *cell)
    plan = plan_memory(shape, plan_settings(spec, shape, repack_types=repacked_types()))
    buffers, attention = measured.context(spec)
    assert (attention != "off") == plan.settings.flash_attention  # the same decision
    planned = {}
    for part in plan.parts:
        kind = "weights" if part.kind == "experts" else part.kind
        planned[kind] = planned.get(kind, 0) + part.bytes
    real = by_kind(buffers)
    report = table(name, cell, planned, real)
    assert plan.total() == pytest.approx(sum(real.values()), rel=0.10), report
    assert planned["compute"] == pytest.approx(real["compute"], rel=0.15), report
    assert set(planned) == set(real), report  # the same parts: window kv only with a window


@pytest.mark.slow
@pytest.mark.parametrize("ctx", [4096, 32768])
def test_the_plan_of_the_real_gemma_3_270m(ctx):
    """Gemma 3 270M Q4_K_M at 4 slots, f16, flash attention as the runner decides it: weights
    mapped and repacked, 3 full-attention layers' cache, 15 windows of 1,024 cells, a 512 MiB
    compute buffer of logits (llama.cpp: 874 MiB at 4,096 tokens a slot, 1,210 at 32,768)."""
    from tests.support.llama_buffers import measure_buffers
    from tests.support.real_model import gemma_path

    path = gemma_path()
    spec = spec_for(path, "f16", "auto", 4, ctx)
    shape = read_model_shape(path)
    plan = plan_memory(shape, plan_settings(spec, shape, repack_types=repacked_types()))
    buffers, _ = measure_buffers(spec)
    planned = {}
    for part in plan.parts:
        planned[part.kind] = planned.get(part.kind, 0) + part.bytes
    real = by_kind(buffers)
    report = table("gemma-3-270m", (ctx, 4), planned, real)
    assert plan.total() == pytest.approx(sum(real.values()), rel=0.10), report
    assert planned["compute"] == pytest.approx(real["compute"], rel=0.10), report
    for kind in ("kv", "window kv", "output"):  # counted, not estimated: exact
        assert planned[kind] == real[kind], report
