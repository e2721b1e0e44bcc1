"""A mixture-of-experts model's experts kept in RAM while the rest goes to the GPU.

A MoE model reads only a few experts per token, but holds all of them: a 30B-A3B model is some
17 GB of experts and 1.5 GB of attention and shared weights. llama-server's ``--n-cpu-moe N``
keeps the experts of the first N layers in system memory (the CPU computes them), so the rest,
and the KV cache, fit a small GPU. It is llama.cpp's tensor buffer-type override: each tensor
whose name matches ``blk\\.<i>\\.ffn_(up|down|gate|gate_up)_exps`` gets the CPU buffer type.
llama-cpp-python declares the field (``llama_model_params.tensor_buft_overrides``) but its
``Llama`` class never sets it, so the runner builds the NULL-terminated array itself.

On a CPU-only build every tensor is in RAM already; the override changes nothing there, and is
applied all the same, so one code path serves every build.
"""

from __future__ import annotations

import ctypes

import llama_cpp as lc

__all__ = ["ExpertsOnCpu", "expert_pattern"]


class _Override(ctypes.Structure):
    """``struct llama_model_tensor_buft_override``: a pattern and the buffer type it gets."""

    _fields_ = [("pattern", ctypes.c_char_p), ("buft", ctypes.c_void_p)]


def expert_pattern(layer: int | None) -> str:
    """The tensors of layer ``layer``'s experts (None: every layer's), as llama.cpp names them."""
    index = r"\d+" if layer is None else str(layer)
    return rf"blk\.{index}\.ffn_(up|down|gate|gate_up)_exps"


class ExpertsOnCpu:
    """The override array for the first ``layers`` layers (-1: all), alive as long as this
    object: set it on the model's load parameters, and keep this until the load returns."""

    def __init__(self, layers: int):
        self.layers = layers
        chosen: list[int | None] = [None] if layers < 0 else list(range(layers))
        self._patterns = [expert_pattern(layer).encode() for layer in chosen]
        self._array = (_Override * (len(chosen) + 1))()  # the last one NULL: the list's end
        cpu = _cpu_buffer_type()
        for entry, pattern in zip(self._array, self._patterns, strict=False):
            entry.pattern = pattern
            entry.buft = cpu

    def apply(self, params: lc.llama_model_params) -> None:
        if self._patterns:
            # llama-cpp-python's annotation says an array; its ctypes field is a c_void_p
            address = ctypes.cast(self._array, ctypes.c_void_p).value
            params.tensor_buft_overrides = address  # type: ignore[assignment]


def _cpu_buffer_type() -> int:
    """``ggml_backend_cpu_buffer_type()``, from the ggml library llama-cpp-python loaded."""
    from llama_cpp._ggml import libggml  # its dependencies (ggml-base) answer too

    function = libggml.ggml_backend_cpu_buffer_type
    function.restype = ctypes.c_void_p
    function.argtypes = []
    address: int = function()
    return address
