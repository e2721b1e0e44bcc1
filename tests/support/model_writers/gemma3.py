"""Tiny, real Gemma-3-like GGUFs: llama.cpp's ``gemma3`` architecture with sliding windows.

:func:`write_tiny_gemma3` writes what a converted Gemma 3 holds, at a tiny width: per layer
the q/k norms, the post-attention and post-FFN norms and a GELU feed-forward network; a head
size of its own (``attention.key_length``, not ``n_embd / n_head``); the output tied to the
token embeddings; and ``attention.sliding_window``, which makes llama.cpp keep the
sliding-window layers' cache at the window's size (its "SWA KV cache"). Which layers slide is
llama.cpp's rule for ``gemma3``: with no ``attention.sliding_window_pattern`` key (as
converted Gemma 3 files have none), every sixth layer (5, 11, 17...) sees the whole context and
the others the window; the key, when given, is a period (layer ``i`` slides when
``i % n < n - 1``) or one flag per layer.

The vocabulary is the tiny SentencePiece one of :mod:`localllm.model_registry.tiny_gguf` with
Gemma's turn markers ``<start_of_turn>`` and ``<end_of_turn>`` (the end of a turn and of
generation), padded to ``vocab_size``: 262,144 is Gemma's, which is what makes its logits and
compute buffer large. The chat template is Gemma 3's for text (the system prompt folded into the
first user turn, ``model`` for the assistant, roles that must alternate).

The weights are random and shaped as the llama writer's are: a bias channel keeps control
tokens and raw bytes out of the samples (with tied embeddings, the sign of a token's channel 0
does it, which holds while the prompt ends with a plain token, as a chat prompt's newline is),
so generation gives printable text and runs to its token limit. Greedy decoding is
deterministic, and the same arguments always give the same bytes.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import gguf
import numpy as np

from localllm.model_registry.tiny_gguf import (
    TensorPlan,
    TinyGGUFWriter,
    output_bias,
    save_tiny_gguf,
    tiny_weights,
)
from localllm.model_registry.tiny_vocabulary import TinyVocabulary, add_tokenizer, tiny_vocabulary

__all__ = ["GEMMA_TEMPLATE", "GEMMA_TURN_TOKENS", "gemma3_vocabulary", "write_tiny_gemma3"]

GEMMA_TURN_TOKENS = ("<start_of_turn>", "<end_of_turn>")
# Gemma 3's template, less its image parts
GEMMA_TEMPLATE = (
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}"
    "{%- set first_user_prefix = '' -%}"
    "{%- set loop_messages = messages -%}"
    "{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{%- endif -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
    "{{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else '') }}"
    "{{ message['content'] | trim }}"
    "{{ '<end_of_turn>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\\n' }}{%- endif -%}"
)
_ARCH = gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.GEMMA3]
_EMBEDDING = gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.TOKEN_EMBD] + ".weight"
_INPUT_NORMS = (".attn_norm.weight", ".ffn_norm.weight")
_POST_NORMS = (".post_attention_norm.weight", ".post_ffw_norm.weight")
_POST_NORM_GAIN = 8.0
_TIED_BIAS = 4.0  # channel 0 of a tied embedding: + for tokens to sample, - for quiet ones
_TIED_TOKEN_SCALE = 0.05


@dataclasses.dataclass(frozen=True)
class _Shape:
    n_layer: int
    n_embd: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_ff: int
    qtype: gguf.GGMLQuantizationType


def gemma3_vocabulary(vocab_size: int | None = None) -> TinyVocabulary:
    """The tiny vocabulary with Gemma's turn markers; its end of turn is ``<end_of_turn>``."""
    vocab = tiny_vocabulary(vocab_size, control_tokens=GEMMA_TURN_TOKENS)
    return dataclasses.replace(vocab, eos_id=vocab.tokens.index(GEMMA_TURN_TOKENS[1]))


def write_tiny_gemma3(
    path: str | os.PathLike[str],
    *,
    n_layer: int = 6,
    n_embd: int = 64,
    n_head: int = 4,
    n_head_kv: int = 1,
    head_dim: int = 32,
    n_ff: int | None = None,
    sliding_window: int = 512,
    sliding_window_pattern: int | Sequence[bool] | None = None,
    context_length: int = 32768,
    vocab_size: int | None = None,
    file_type: Literal["F16", "Q8_0", "Q4_0"] = "F16",
    tied_embeddings: bool = True,
    seed: int = 0,
    name: str = "tiny-gemma3",
) -> Path:
    """Write a ``gemma3`` GGUF with random weights that llama.cpp runs.

    The defaults are Gemma 3 270M's proportions at a tenth of its width (4 query heads sharing
    1 key/value head, heads wider than ``n_embd / n_head``, a 512-token window, 32k context).
    ``sliding_window`` 0 writes no window (every layer full, as llama.cpp then runs it);
    ``sliding_window_pattern`` None leaves llama.cpp's default (every sixth layer full).
    ``tied_embeddings`` False writes a separate ``output.weight`` as most other families do."""
    shape = _shape(n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, file_type)
    if sliding_window < 0:
        raise ValueError("sliding_window must be 0 (none) or a number of tokens")
    if not isinstance(sliding_window_pattern, int | None) and (
        len(sliding_window_pattern) != n_layer
    ):
        raise ValueError("a sliding_window_pattern of flags needs one flag per layer")
    vocab = gemma3_vocabulary(vocab_size)
    bias = output_bias(vocab, "never")
    writer = TinyGGUFWriter(None, _ARCH)
    _add_hyperparameters(writer, shape, context_length, file_type)
    if sliding_window:
        writer.add_sliding_window(sliding_window)
        if sliding_window_pattern is not None:
            writer.add_sliding_window_pattern(
                sliding_window_pattern
                if isinstance(sliding_window_pattern, int)
                else [bool(flag) for flag in sliding_window_pattern]
            )
    add_tokenizer(writer, vocab, GEMMA_TEMPLATE)
    writer.add_add_space_prefix(False)
    writer.add_name(name)

    def tensor(
        index: int, tensor_name: str, dims: tuple[int, ...], qtype: gguf.GGMLQuantizationType
    ) -> np.ndarray:
        rng = np.random.default_rng((seed, index))
        return gguf.quants.quantize(_weights(tensor_name, dims, rng, bias, tied_embeddings), qtype)

    plan = _tensor_plan(shape, len(vocab.tokens), tied_embeddings)
    return save_tiny_gguf(writer, path, plan, tensor)


def _weights(
    name: str, dims: tuple[int, ...], rng: np.random.Generator, bias: np.ndarray, tied: bool
) -> np.ndarray:
    """The llama writer's weights, with Gemma's norms used to keep text varied: the layers'
    input norms drop the bias channel (they read the tokens only) and the post-norms write
    loudly, so the last state is a random function of the context. Tied, the embeddings are
    the output too: the sign of channel 0 keeps quiet tokens unsampled, and the token part is
    small, else each token's logit would be its likeness to the last one (which repeats)."""
    values = tiny_weights(name, dims, rng, bias)
    if name == _EMBEDDING and tied:
        values[:, 1:] *= _TIED_TOKEN_SCALE
        values[:, 0] = np.where(bias < 0, -_TIED_BIAS, _TIED_BIAS)
    elif name.endswith(_INPUT_NORMS):
        values[0] = 0.0
    elif name.endswith(_POST_NORMS):
        values *= _POST_NORM_GAIN
    return values


def _shape(
    n_layer: int,
    n_embd: int,
    n_head: int,
    n_head_kv: int,
    head_dim: int,
    n_ff: int | None,
    file_type: str,
) -> _Shape:
    n_ff = n_ff if n_ff is not None else 4 * n_embd
    if file_type not in ("F16", "Q8_0", "Q4_0"):
        raise ValueError("file_type must be 'F16', 'Q8_0' or 'Q4_0'")
    if min(n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff) < 1:
        raise ValueError("layer, width and head counts must be positive")
    if head_dim % 2 or n_head % n_head_kv:
        raise ValueError("head_dim must be even and n_head a multiple of n_head_kv")
    if file_type != "F16" and (n_embd % 32 or n_ff % 32 or n_head * head_dim % 32):
        raise ValueError(f"{file_type} needs n_embd, n_ff and n_head * head_dim in 32s")
    qtype = gguf.GGMLQuantizationType[file_type]
    return _Shape(n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, qtype)


def _add_hyperparameters(
    writer: gguf.GGUFWriter, shape: _Shape, context: int, file_type: str
) -> None:
    """The keys a converted Gemma 3 has (its 270M's, in its order)."""
    writer.add_context_length(context)
    writer.add_embedding_length(shape.n_embd)
    writer.add_block_count(shape.n_layer)
    writer.add_feed_forward_length(shape.n_ff)
    writer.add_head_count(shape.n_head)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_key_length(shape.head_dim)
    writer.add_value_length(shape.head_dim)
    writer.add_rope_freq_base(1_000_000.0)  # the full layers'; the windowed ones use 10,000
    writer.add_head_count_kv(shape.n_head_kv)
    writer.add_file_type(gguf.LlamaFileType[f"MOSTLY_{file_type}"])
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)


def _tensor_plan(shape: _Shape, n_vocab: int, tied: bool) -> TensorPlan:
    names, t = gguf.TENSOR_NAMES, gguf.MODEL_TENSOR
    f32, q = gguf.GGMLQuantizationType.F32, shape.qtype
    d, ff, hd = shape.n_embd, shape.n_ff, shape.head_dim
    qd, kv = shape.n_head * hd, shape.n_head_kv * hd
    plan: TensorPlan = [(_EMBEDDING, (n_vocab, d), q)]
    for bid in range(shape.n_layer):
        for tensor, dims, qtype in (
            (t.ATTN_NORM, (d,), f32),
            (t.ATTN_Q, (qd, d), q),
            (t.ATTN_Q_NORM, (hd,), f32),
            (t.ATTN_K, (kv, d), q),
            (t.ATTN_K_NORM, (hd,), f32),
            (t.ATTN_V, (kv, d), q),
            (t.ATTN_OUT, (d, qd), q),
            (t.ATTN_POST_NORM, (d,), f32),
            (t.FFN_NORM, (d,), f32),
            (t.FFN_GATE, (ff, d), q),
            (t.FFN_UP, (ff, d), q),
            (t.FFN_DOWN, (d, ff), q),
            (t.FFN_POST_NORM, (d,), f32),
        ):
            plan.append((names[tensor].format(bid=bid) + ".weight", dims, qtype))
    plan.append((names[t.OUTPUT_NORM] + ".weight", (d,), f32))
    if not tied:
        plan.append((names[t.OUTPUT] + ".weight", (n_vocab, d), q))
    return plan
