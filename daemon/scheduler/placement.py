"""GPU layer placement: how many layers go to the GPU, and how we say so.

The choice is made from free VRAM before loading; what the runner actually did comes back in
its ``RunnerInfo`` and is what gets reported. A CPU-only llama.cpp build, or a GPU we could
not use, is always reported as "100% CPU" in the load log and the model status: never a
silent CPU fallback.
"""

from __future__ import annotations

from dataclasses import dataclass

from daemon.scheduler.memory import COMPUTE_MARGIN_BYTES, ModelFootprint, kv_cache_bytes

__all__ = ["VRAM_MARGIN", "Placement", "choose_gpu_layers", "describe_placement"]

VRAM_MARGIN = 0.10  # keep 10% of free VRAM for the driver and other programs


@dataclass(frozen=True, slots=True)
class Placement:
    gpu_layers: int  # layers to offload; total_layers means all
    total_layers: int  # repeating layers + the output layer, as llama.cpp counts them
    reason: str

    @property
    def gpu_fraction(self) -> float:
        return min(1.0, self.gpu_layers / self.total_layers) if self.total_layers else 0.0


def choose_gpu_layers(
    footprint: ModelFootprint,
    n_ctx_total: int,
    free_vram: list[int],
    requested: int | None = None,
    kv_cache_type: str = "f16",
) -> Placement:
    """Offload as many layers as fit in the largest GPU's free memory (or what was asked)."""
    total = footprint.n_layer + 1
    if requested is not None:
        layers = total if requested < 0 else min(requested, total)
        return Placement(layers, total, f"num_gpu={requested} requested")
    if not free_vram:
        return Placement(0, total, "no GPU found")
    usable = max(free_vram) * (1 - VRAM_MARGIN) - COMPUTE_MARGIN_BYTES
    kv_bytes = kv_cache_bytes(footprint, n_ctx_total, kv_cache_type)
    per_layer = (footprint.weights_bytes + kv_bytes) / total
    layers = max(0, min(total, int(usable // per_layer))) if per_layer > 0 else total
    free_gib = max(free_vram) / (1 << 30)
    return Placement(layers, total, f"{layers}/{total} layers fit in {free_gib:.1f} GiB free VRAM")


def describe_placement(
    gpu_layers: int, total_layers: int, backend: str, experts: tuple[int, int] = (0, 0)
) -> str:
    """Ollama's PROCESSOR column: "100% CPU", "100% GPU" or "25%/75% CPU/GPU"; with a MoE
    model's experts kept in RAM (``experts``: layers with them in RAM, layers with experts),
    "100% GPU, experts of 12/48 layers on CPU"."""
    if gpu_layers <= 0 or backend.lower() == "cpu" or total_layers <= 0:
        return "100% CPU"
    on_cpu, with_experts = experts
    kept = f", experts of {on_cpu}/{with_experts} layers on CPU" if on_cpu else ""
    if gpu_layers >= total_layers:
        return f"100% GPU{kept}"
    gpu = round(100 * gpu_layers / total_layers)
    return f"{100 - gpu}%/{gpu}% CPU/GPU{kept}"
