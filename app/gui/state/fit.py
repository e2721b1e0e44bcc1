"""Will a model run well on this machine?

The badge users trust in LM Studio and Jan: "fits in VRAM", "fits in RAM", "too large". The
daemon's memory plan decides it (``plan_fit``: every part of the load, from the model's own
header, against the free memory the daemon judges loads by). Until a plan has come, a guess from
the file size stands in (``fit_for``: the file plus room for the context and runtime buffers,
with the headroom the surveys recommend: engines crash near 95% of GPU memory), and the figure
it gives is shown as "about". How many layers a chat's settings put on the GPU is the plan's too
(``GpuLayers``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from localllm.app.gui.state.records import ModelPlan, SystemInfo

__all__ = ["Fit", "GpuLayers", "fit_for", "gpu_hint", "needed_memory", "plan_fit"]

_OVERHEAD = 1.2  # context and compute buffers on top of the weights
_FIXED = 300_000_000
_VRAM_USABLE = 0.9
_RAM_USABLE = 0.8  # leave the system and other programs room


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
    """Where the daemon's plan of a chat's settings puts the model's layers."""

    on_gpu: int  # llama.cpp's n_gpu_layers (the output layer counts as one)
    total: int  # all of them: the repeating layers and the output
    reason: str  # why that many, in the daemon's words
    asked: bool  # the chat sets its GPU layers (num_gpu); else the daemon chose them

    @classmethod
    def of(cls, plan: ModelPlan | None, asked: bool) -> GpuLayers | None:
        """The plan's placement; None until a plan has come (or for a model without layers)."""
        if plan is None or plan.total_layers <= 0:
            return None
        return cls(plan.gpu_layers, plan.total_layers, plan.placement_reason, asked)


def gpu_hint(layers: GpuLayers | None, has_gpu: bool) -> str:
    """What the GPU layers box can do, in words: nothing without a GPU, else what the
    daemon's plan puts there (no figure until it has planned: a guess would mislead)."""
    if not has_gpu:
        return "No GPU found: the model runs on the CPU."
    if layers is None:
        return "Auto puts as many layers on the GPU as fit in its memory."
    if layers.asked:
        return (
            f"{layers.on_gpu} of its {layers.total} layers go on the GPU, as set here; auto "
            "puts as many there as fit."
        )
    reason = f": {layers.reason}" if layers.reason else ""
    placed = f"{layers.on_gpu} of its {layers.total} layers"
    return f"Auto puts {placed} on the GPU at these settings{reason}."
