"""Where llama.cpp puts each layer: the CPU, or which of several GPUs.

llama.cpp offloads the last ``n_gpu_layers`` layers (the output layer first) and, with several
GPUs and its default ``split_mode`` layer, splits them in proportion to each GPU's free memory,
in C floats. The memory plan (``memory_plan``) follows the same rule, so each layer's weights
and caches are counted on the device that will hold them.
"""

from __future__ import annotations

import bisect
import struct

__all__ = ["CPU", "GPU0", "LayerDevices", "layer_devices"]

CPU, GPU0 = "CPU", "GPU0"


def layer_devices(n_layer: int, gpu_layers: int, gpu_split: tuple[int, ...] = ()) -> list[str]:
    """The device of each layer 0..``n_layer`` (the last: the output layer) as llama.cpp's
    ``load_tensors`` places them: ``gpu_layers`` (-1: all) of them on the GPUs, the output
    layer first, then the last layers (1 is the output layer alone); offloaded layer ``i`` of
    ``k`` on the first GPU whose share of ``gpu_split`` so far is above ``i / k``, in floats as
    llama.cpp computes it (so a layer on a boundary lands where it does there)."""
    total = n_layer + 1
    offloaded = total if gpu_layers < 0 else min(gpu_layers, total)
    first = total - offloaded
    points = _split_points(gpu_split)
    last = len(points) - 1
    devices = [CPU] * first
    for index in range(max(0, offloaded)):
        share = _float32(index / offloaded)
        devices.append(f"GPU{min(bisect.bisect_right(points, share), last)}")
    return devices


def _split_points(gpu_split: tuple[int, ...]) -> list[float]:
    """llama.cpp's split points: each GPU's share of the free memory, summed up to it."""
    weights = [_float32(max(0, free)) for free in gpu_split] or [1.0]
    if not any(weights):
        weights = [1.0] * len(weights)
    running, sums = 0.0, []
    for weight in weights:
        running = _float32(running + weight)
        sums.append(running)
    return [_float32(point / running) for point in sums]


def _float32(value: float) -> float:
    """``value`` rounded to a C float (llama.cpp's split arithmetic)."""
    (rounded,) = struct.unpack("f", struct.pack("f", value))
    return float(rounded)


class LayerDevices:
    """Which device holds each layer (``layer_devices``) and each layer's experts (the first
    ``cpu_moe_layers`` layers' in RAM; -1: all); the token embeddings stay in RAM."""

    def __init__(
        self, n_layer: int, gpu_layers: int, gpu_split: tuple[int, ...], cpu_moe_layers: int
    ):
        self._layers = layer_devices(n_layer, gpu_layers, gpu_split)
        self.output = self._layers[n_layer]
        self.gpus = list(dict.fromkeys(d for d in self._layers if d != CPU))  # in order
        self.any_gpu = bool(self.gpus)
        self._cpu_moe = n_layer if cpu_moe_layers < 0 else cpu_moe_layers

    def layer(self, layer: int) -> str:
        return self._layers[layer]

    def experts(self, layer: int) -> str:
        return CPU if layer < self._cpu_moe else self.layer(layer)

    def layers_on(self, device: str, n_layer: int) -> list[int]:
        return [i for i in range(n_layer) if self.layer(i) == device]
