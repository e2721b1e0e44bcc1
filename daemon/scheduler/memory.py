"""Memory: a model's numbers from the store's summary, and how much the machine has free.

What a load will take is the memory plan's (``memory_plan``, from the model's own header);
``ModelFootprint`` is the store's short summary of a model (weights, layers, heads), which the
slot and GPU-layer rules still size with (``estimate_bytes``: weights + KV cache + a fixed
margin), and which stands in for the header where the file cannot be read
(:func:`footprint_shape`). The probes are plain callables so tests can inject their own
numbers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from model_registry.model_shape import ModelShape, WeightGroup

__all__ = [
    "COMPUTE_MARGIN_BYTES",
    "KV_BYTES_PER_VALUE",
    "MemoryInfo",
    "ModelFootprint",
    "estimate_bytes",
    "footprint_shape",
    "kv_cache_bytes",
    "nvidia_free_vram",
    "parse_nvidia_smi",
    "system_memory",
]

COMPUTE_MARGIN_BYTES = 96 << 20  # llama.cpp's compute buffers and the runner process itself
_MEMINFO = Path("/proc/meminfo")
#: Bytes per cached value of each KV cache type: ggml's q8_0 and q4_0 store blocks of 32 values
#: in 34 and 18 bytes (the values plus one f16 scale).
KV_BYTES_PER_VALUE = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}


@dataclass(frozen=True, slots=True)
class ModelFootprint:
    """The numbers of a model that decide its memory use (from the GGUF summary)."""

    weights_bytes: int
    n_layer: int = 0
    n_embd: int = 0
    n_head: int = 0
    n_head_kv: int = 0
    head_size: int = 0  # values per head (``attention.key_length``); 0: n_embd / n_head
    draft: ModelFootprint | None = None  # a draft model's (its KV cache has the same cells)

    @property
    def values_per_head(self) -> int:
        if not self.n_head:
            return 0
        return self.head_size or self.n_embd // self.n_head

    @property
    def n_embd_kv(self) -> int:
        """Width of one layer's K (or V) cache per token: head size times KV heads."""
        if not self.n_head:
            return self.n_embd
        return self.values_per_head * (self.n_head_kv or self.n_head)


@dataclass(frozen=True, slots=True)
class MemoryInfo:
    total: int
    available: int


def kv_cache_bytes(footprint: ModelFootprint, n_ctx_total: int, kv_cache_type: str = "f16") -> int:
    """K and V of the given type for every layer and every cell of the shared context (and
    of the draft model's context, as large)."""
    values = 2 * footprint.n_layer * n_ctx_total * footprint.n_embd_kv
    draft = kv_cache_bytes(footprint.draft, n_ctx_total, kv_cache_type) if footprint.draft else 0
    return int(values * KV_BYTES_PER_VALUE[kv_cache_type]) + draft


def estimate_bytes(
    footprint: ModelFootprint,
    num_ctx: int,
    num_parallel: int,
    kv_cache_type: str = "f16",
    scores_bytes: int = 0,
) -> int:
    """Predicted resident size of a runner serving ``num_parallel`` sequences of ``num_ctx``
    (``scores_bytes``: attention scores it keeps without flash attention)."""
    kv = kv_cache_bytes(footprint, num_ctx * max(1, num_parallel), kv_cache_type)
    return footprint.weights_bytes + kv + COMPUTE_MARGIN_BYTES + scores_bytes


def footprint_shape(footprint: ModelFootprint) -> ModelShape:
    """A shape from the summary alone, for a plan where the model's header cannot be read:
    the weights spread evenly over the layers, every layer full attention, no vocabulary
    known (so no logits planned), the draft's shape likewise."""
    n_layer = footprint.n_layer
    per_layer = footprint.weights_bytes // (n_layer + 1) if n_layer else 0
    weights = [WeightGroup(i, "other", "", per_layer) for i in range(n_layer)]
    rest = footprint.weights_bytes - per_layer * n_layer
    weights.append(WeightGroup(None, "embeddings", "", rest))
    head = footprint.values_per_head
    return ModelShape(
        architecture="",
        n_layer=n_layer,
        n_embd=footprint.n_embd,
        n_head=(footprint.n_head,) * n_layer,
        n_head_kv=(footprint.n_head_kv or footprint.n_head,) * n_layer,
        head_k=head,
        head_v=head,
        head_k_swa=head,
        head_v_swa=head,
        weights=tuple(weights),
        notes=("planned from the store's summary: the model file could not be read",),
    )


def system_memory() -> MemoryInfo:
    """Total and available RAM: /proc/meminfo where there is one, else sysconf."""
    try:
        return _from_meminfo(_MEMINFO.read_text())
    except (OSError, ValueError, KeyError):
        pass
    page = os.sysconf("SC_PAGE_SIZE")
    total = os.sysconf("SC_PHYS_PAGES") * page
    try:
        available = os.sysconf("SC_AVPHYS_PAGES") * page
    except (ValueError, OSError):
        available = total // 2
    return MemoryInfo(total, available)


def _from_meminfo(text: str) -> MemoryInfo:
    fields = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts:
            fields[key] = int(parts[0]) * 1024
    return MemoryInfo(fields["MemTotal"], fields["MemAvailable"])


def nvidia_free_vram(timeout: float = 5.0) -> list[int]:
    """Free bytes per NVIDIA GPU from ``nvidia-smi``; empty when there is none."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    command = [exe, "--query-gpu=memory.free", "--format=csv,noheader,nounits"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return []
    if result.returncode != 0:
        return []
    return parse_nvidia_smi(result.stdout)


def parse_nvidia_smi(output: str) -> list[int]:
    """``memory.free`` lines in MiB -> bytes; lines that are not numbers are skipped."""
    free = []
    for line in output.splitlines():
        text = line.strip()
        if text.isdigit():
            free.append(int(text) << 20)
    return free
