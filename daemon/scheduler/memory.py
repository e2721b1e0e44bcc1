"""Memory: a model's numbers from the store's summary, and how much the machine has free.

What a load will take is the memory plan's alone (``memory_plan``, from the model's own
header): context, slots and GPU layers are all sized with it. ``ModelFootprint`` is the store's
short summary of a model (weights, layers, heads); it stands in for the header where the file
cannot be read (:func:`footprint_shape`), so that plan is coarser but made the same way. The
probes are plain callables so tests can inject their own numbers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from localllm.model_registry.model_shape import ModelShape, WeightGroup

__all__ = [
    "MemoryInfo",
    "ModelFootprint",
    "footprint_shape",
    "nvidia_free_vram",
    "parse_nvidia_smi",
    "system_memory",
]

_MEMINFO = Path("/proc/meminfo")


@dataclass(frozen=True, slots=True)
class ModelFootprint:
    """The numbers of a model that decide its memory use (from the GGUF summary)."""

    weights_bytes: int
    n_layer: int = 0
    n_embd: int = 0
    n_head: int = 0
    n_head_kv: int = 0
    head_size: int = 0  # values per head (``attention.key_length``); 0: n_embd / n_head
    draft: ModelFootprint | None = None  # a draft model's (its bytes among weights_bytes)

    @property
    def values_per_head(self) -> int:
        if not self.n_head:
            return 0
        return self.head_size or self.n_embd // self.n_head


@dataclass(frozen=True, slots=True)
class MemoryInfo:
    total: int
    available: int


def footprint_shape(footprint: ModelFootprint) -> ModelShape:
    """A shape from the summary alone, for a plan where the model's header cannot be read:
    the weights spread evenly over the layers, every layer full attention, no vocabulary
    known (so no logits planned), the draft's shape likewise. The summary's weights count a
    draft model's files too; they are the draft's plan (its own header's, or its summary's),
    so the model's shape has its own only."""
    n_layer = footprint.n_layer
    drafted = footprint.draft.weights_bytes if footprint.draft is not None else 0
    own = max(0, footprint.weights_bytes - drafted)
    per_layer = own // (n_layer + 1) if n_layer else 0
    weights = [WeightGroup(i, "other", "", per_layer) for i in range(n_layer)]
    rest = own - per_layer * n_layer
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
