"""Will a model run well on this machine?

The badge users trust in LM Studio and Jan: "fits in VRAM", "fits in RAM", "too large". The
daemon's memory plan decides it (``plan_fit``: every part of the load, from the model's own
header, against the free memory the daemon judges loads by). Until a plan has come, a guess from
the file size stands in (``fit_for``: the file plus room for the context and runtime buffers,
with the headroom the surveys recommend: engines crash near 95% of GPU memory), and the figure
it gives is shown as "about".
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from app.gui.state.records import ModelPlan, SystemInfo

__all__ = ["Fit", "GpuLayers", "fit_for", "gpu_layers", "needed_memory", "plan_fit"]

_OVERHEAD = 1.2  # context and compute buffers on top of the weights
_FIXED = 300_000_000
_VRAM_USABLE = 0.9
_RAM_USABLE = 0.8  # leave the system and other programs room
_COMPUTE_MARGIN = 96 << 20  # the daemon's placement keeps this for llama.cpp's buffers


class Fit(Enum):
    VRAM = "fits in VRAM"
    SPLIT = "fits in VRAM + RAM"  # some layers on the GPU, the rest in RAM
    RAM = "fits in RAM"
    TOO_LARGE = "too large"
    UNKNOWN = ""

    @property
    def label(self) -> str:
        return self.value

    @property
    def tone(self) -> str | None:
        """What the badge means (``design.tokens``): it fits, or it is worth a second look."""
        tones = {"VRAM": "success", "SPLIT": "success", "RAM": "success", "TOO_LARGE": "warning"}
        return tones.get(self.name)


def needed_memory(file_size: int) -> int:
    return int(file_size * _OVERHEAD) + _FIXED


def fit_for(file_size: int, system: SystemInfo | None) -> Fit:
    if system is None or file_size <= 0:
        return Fit.UNKNOWN
    needed = needed_memory(file_size)
    if system.gpus and needed <= system.vram_total * _VRAM_USABLE:
        return Fit.VRAM
    if needed <= system.ram_total * _RAM_USABLE:
        return Fit.RAM
    return Fit.TOO_LARGE


def plan_fit(plan: ModelPlan | None) -> Fit:
    """The daemon's verdict: too large where its plan does not fit, else where it runs."""
    if plan is None:
        return Fit.UNKNOWN
    if not plan.fits:
        return Fit.TOO_LARGE
    if plan.on_gpu:
        return Fit.VRAM
    return Fit.SPLIT if plan.gpu_layers else Fit.RAM


@dataclass(frozen=True, slots=True)
class GpuLayers:
    fit: int  # about how many layers fit in the largest GPU's free memory
    total: int  # all of them, as llama.cpp counts (the repeating layers and the output)


def gpu_layers(
    model_size: int, block_count: int | None, system: SystemInfo | None
) -> GpuLayers | None:
    """How many of a model's layers fit on the GPU, estimated the way the daemon places them
    (largest GPU's free memory less a margin, weights spread evenly over the layers); None
    without a GPU or without the model's layer count."""
    if system is None or not system.gpus or not block_count or model_size <= 0:
        return None
    total = block_count + 1
    usable = max(g.vram_free for g in system.gpus) * _VRAM_USABLE - _COMPUTE_MARGIN
    per_layer = model_size / total
    return GpuLayers(max(0, min(total, int(usable // per_layer))), total)
