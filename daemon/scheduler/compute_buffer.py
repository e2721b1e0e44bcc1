"""llama.cpp's compute buffer: what its graph allocator reserves for the worst-case ubatch.

At load llama.cpp builds the graph of one full ubatch (``n_ubatch`` tokens, an output row for
each) over a full cache, and ggml's allocator lays its intermediate tensors out in one buffer,
reusing a tensor's bytes once nothing reads it any more. The buffer is as large as the most
that is alive at one moment, and that moment is one of three:

- in an attention: the masks of every cache (per ubatch token and cache cell, an f16 with
  flash attention, an f32 without), live from the first layer to the last, and without flash
  attention the layer's scores (a float per head, token and cell: 4 heads x 512 tokens x 32k
  cells is 256 MiB), beside the activations around them;
- in a feed-forward network: the masks, and its gate, up and product (a dense FFN's width, or
  the used experts' widths together), beside the residual stream and the norms;
- at the output: the logits, a float per vocabulary entry for each ubatch token (a 262k
  vocabulary at 512 tokens is 512 MiB), when the masks are gone.

The activations beside the big tensors are counted in tokens' widths (``n_embd``, a query's, a
key's), as measured on generated llama, Gemma-3-like and mixture-of-experts models: the
allocator fills holes, so the real buffer is this count or a little under it (the suite checks
the whole plan against llama.cpp's figures, ``tests/test_memory_matrix.py``). Not counted: the
CPU backend's work buffer for one operation (outside this buffer, a few MB), the vision
projector's graph, and architectures whose graphs differ much from these (their measured
figures replace this estimate after one load: ``measured``).
"""

from __future__ import annotations

from collections.abc import Iterable

from localllm.model_registry.model_shape import ModelShape

__all__ = ["INPUT_WIDTHS", "compute_buffer_bytes"]

_F32 = 4
INPUT_WIDTHS = 8  # floats per token for the graph's inputs (token ids, positions, output ids)
_RESIDUAL_WIDTHS = 4  # the residual stream, its norm and the layer's input, in n_embd widths
_OUTPUT_WIDTHS = 3  # beside the logits: the last hidden state and its norm


def compute_buffer_bytes(
    shape: ModelShape,
    *,
    tokens: int,
    cells: int,
    window_cells: int,
    flash: bool,
    layers: Iterable[int] | None = None,
    output: bool = True,
) -> int:
    """The compute buffer of ``shape``'s graph for a ubatch of ``tokens`` (each one an output
    row) over ``cells`` cache cells per stream in full-attention layers and ``window_cells``
    in sliding-window ones. ``layers``: the layers this buffer's device runs (all: None);
    ``output``: whether it computes the logits too."""
    chosen = range(shape.n_layer) if layers is None else list(layers)
    masks = _masks(shape, tokens, cells, window_cells, flash)
    layer_peak = 0
    for layer in chosen:
        cells_here = window_cells if shape.is_swa(layer) else cells
        layer_peak = max(
            layer_peak,
            _attention(shape, layer, tokens, cells_here, flash),
            _feed_forward(shape, layer, tokens),
        )
    peak = masks + layer_peak if layer_peak else 0
    if output:
        peak = max(peak, _output(shape, tokens))
    return peak + INPUT_WIDTHS * tokens * _F32 if peak else 0


def _masks(shape: ModelShape, tokens: int, cells: int, window_cells: int, flash: bool) -> int:
    """The attention masks (one per cache: full and sliding window), a value per ubatch token
    and cell (per stream, over all streams: the same count)."""
    attending = [i for i in range(shape.n_layer) if _attends(shape, i)]
    if not attending:
        return 0
    per_value = 2 if flash else _F32
    full = any(not shape.is_swa(i) for i in attending)
    window = any(shape.is_swa(i) for i in attending)
    return tokens * per_value * (cells * full + window_cells * window)


def _attends(shape: ModelShape, layer: int) -> bool:
    return bool(shape.n_head_kv) and shape.n_head_kv[layer] > 0


def _attention(shape: ModelShape, layer: int, tokens: int, cells: int, flash: bool) -> int:
    """A layer's attention, past the masks: the scores without flash attention, and the
    activations (query, keys, values, the residual stream)."""
    if not _attends(shape, layer):
        return 0
    heads = shape.n_head[layer]
    query = heads * (shape.head_k_swa if shape.is_swa(layer) else shape.head_k)
    key = shape.kv_widths(layer)[0]
    widths = _RESIDUAL_WIDTHS * shape.n_embd
    widths += max(query, 2 * key) if flash else query + 2 * key
    scores = 0 if flash else heads * tokens * cells * _F32
    return scores + widths * tokens * _F32


def _feed_forward(shape: ModelShape, layer: int, tokens: int) -> int:
    """A layer's feed-forward network: gate, up and their product at its width (the used
    experts' together, or the shared experts'; without a gate, the up projection alone), the
    router's scores, the residual stream."""
    width = shape.n_ff[layer] if shape.n_ff else 0
    if shape.n_expert:
        width = max(width, shape.n_expert_used * shape.n_ff_expert, shape.n_ff_shared)
    live = 3 if shape.gated_ffn else 1
    widths = _RESIDUAL_WIDTHS * shape.n_embd + live * width + 3 * shape.n_expert
    return widths * tokens * _F32


def _output(shape: ModelShape, tokens: int) -> int:
    """The logits of every ubatch token (an encoder has none: its pooled embeddings)."""
    vocabulary = shape.n_vocab if shape.kv_cache else 0
    return (vocabulary + _OUTPUT_WIDTHS * shape.n_embd) * tokens * _F32
