"""llama.cpp's own buffer figures, reported by the runner when it is ready (``RunnerInfo.buffers``):
what a memory plan answers to. Read off llama.cpp's log as it loads, each for the part of the
runner it belongs to."""

from __future__ import annotations

from dataclasses import replace

import gguf
import pytest

from localllm.daemon.runners.types import LlamaBuffer
from localllm.daemon.runners.worker.buffers import BufferLedger
from tests.support.runner import Harness, make_spec

MIB = 1 << 20

# As llama.cpp prints them for Gemma 3 270M on a CPU, and for a model split over a CUDA GPU
LINES = """\
load_tensors:   CPU_Mapped model buffer size =   235.16 MiB
load_tensors:   CPU_REPACK model buffer size =    12.66 MiB
llama_context:        CPU  output buffer size =     4.00 MiB
llama_kv_cache_iswa: creating non-SWA KV cache, size = 4096 cells
llama_kv_cache:        CPU KV buffer size =    48.00 MiB
llama_kv_cache: size =   48.00 MiB (  4096 cells,   3 layers,  4/4 seqs), K (f16):   24.00 MiB
llama_kv_cache_iswa: creating     SWA KV cache, size = 1024 cells
llama_kv_cache:        CPU KV buffer size =    60.00 MiB
sched_reserve:        CPU compute buffer size =   514.50 MiB
"""
CUDA = """\
load_tensors:        CUDA0 model buffer size =  4403.49 MiB
load_tensors:   CPU_Mapped model buffer size =   281.81 MiB
llama_kv_cache:      CUDA0 KV buffer size =   512.00 MiB
sched_reserve:      CUDA0 compute buffer size =   300.75 MiB
sched_reserve:  CUDA_Host compute buffer size =    24.01 MiB
"""


def test_the_ledger_reads_each_buffer_for_its_part_and_tells_the_window_cache_apart():
    ledger = BufferLedger()
    for line in LINES.splitlines():
        ledger.read(line)
    ledger.begin("draft")
    for line in CUDA.splitlines():
        ledger.read(line)
    found = {(b.part, b.device, b.kind): b.bytes for b in ledger.buffers()}
    assert found == {
        ("model", "CPU_Mapped", "weights"): round(235.16 * MIB),
        ("model", "CPU_REPACK", "weights"): round(12.66 * MIB),
        ("model", "CPU", "output"): 4 * MIB,
        ("model", "CPU", "kv"): 48 * MIB,
        ("model", "CPU", "window kv"): 60 * MIB,
        ("model", "CPU", "compute"): round(514.5 * MIB),
        ("draft", "CUDA0", "weights"): round(4403.49 * MIB),
        ("draft", "CPU_Mapped", "weights"): round(281.81 * MIB),
        ("draft", "CUDA0", "kv"): 512 * MIB,  # after begin(): not a window cache
        ("draft", "CUDA0", "compute"): round(300.75 * MIB),
        ("draft", "CUDA_Host", "compute"): round(24.01 * MIB),
    }


def test_a_buffer_reserved_again_replaces_the_last_figure():
    ledger = BufferLedger()
    ledger.read("sched_reserve:        CPU compute buffer size =   100.00 MiB")
    ledger.read("sched_reserve:        CPU compute buffer size =   120.50 MiB")
    assert ledger.buffers() == (LlamaBuffer("model", "CPU", "compute", round(120.5 * MIB)),)


@pytest.fixture(scope="module")
def harness():
    h = Harness()
    yield h
    h.close()


def tensor_bytes(path) -> int:
    return sum(int(t.n_bytes) for t in gguf.GGUFReader(path).tensors)


def test_a_runner_reports_what_llama_cpp_allocated_for_its_model_and_context(
    harness, tiny_q8_model_path
):
    """Weights as the file's tensors, the KV cache to the byte (K and V, f16, every layer,
    every cell of the four slots), and the output and compute buffers llama.cpp reserved."""
    spec = make_spec(tiny_q8_model_path, num_ctx=512, num_parallel=4, host_cache_bytes=0)
    runner = harness.start(spec)
    parts = {}
    for buffer in runner.info.buffers:
        parts.setdefault((buffer.part, buffer.kind), 0)
        parts[(buffer.part, buffer.kind)] += buffer.bytes
    n_layer, n_embd_kv = 2, 64  # the Q8_0 tiny model: 2 layers, 4 heads of 16 values
    assert parts[("context", "kv")] == 2 * n_layer * 512 * 4 * n_embd_kv * 2
    weights = parts[("model", "weights")]
    assert abs(weights - tensor_bytes(tiny_q8_model_path)) < MIB // 100  # MiB, 2 decimals
    assert parts[("context", "compute")] > 0 and parts[("context", "output")] > 0
    assert {part for part, _ in parts} == {"model", "context"}


def test_a_draft_models_buffers_are_its_own(harness, tiny_q8_model_path):
    spec = make_spec(tiny_q8_model_path, num_ctx=512, num_parallel=2, host_cache_bytes=0)
    spec = replace(spec, num_draft=4, draft_name="self", draft_paths=(str(tiny_q8_model_path),))
    runner = harness.start(spec)
    draft = {b.kind: b.bytes for b in runner.info.buffers if b.part == "draft"}
    target = {b.kind: b.bytes for b in runner.info.buffers if b.part in ("model", "context")}
    assert draft["weights"] == target["weights"] and draft["kv"] == target["kv"]
