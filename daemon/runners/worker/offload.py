"""Where the model's layers run: the one answer the runner's choices key on.

A build offloads when llama.cpp was compiled with a GPU backend and found a device
(``llama_supports_gpu_offload``); the spec then says how many layers go there (``-1``: all).
llama.cpp counts the output layer as one more than the model's repeating layers.
"""

from __future__ import annotations

import llama_cpp as lc

from ..types import RunnerSpec

__all__ = ["offloaded_layers", "whole_model_on_gpu"]


def offloaded_layers(spec: RunnerSpec, n_layer: int) -> int:
    """Layers on the GPU, of ``n_layer + 1``; 0 on a build that cannot offload."""
    if spec.num_gpu_layers == 0 or not lc.llama_supports_gpu_offload():
        return 0
    total = n_layer + 1
    return total if spec.num_gpu_layers < 0 else min(spec.num_gpu_layers, total)


def whole_model_on_gpu(spec: RunnerSpec, n_layer: int) -> bool:
    """Every layer, the output layer included, runs on the GPU: there a batch of k tokens
    costs about one token, and the logits are made where a backend sampler can read them."""
    return offloaded_layers(spec, n_layer) == n_layer + 1
