"""A tiny, real reranker GGUF for tests and benchmarks.

:func:`write_tiny_reranker` writes a cross-encoder laid out as BGE reranker v2 m3 is once
converted (XLM-RoBERTa as llama.cpp's ``bert`` architecture): token, type and position
embeddings, post-norm encoder layers, and a classification head (``cls`` dense + tanh, then
``cls.output`` to one label) that llama.cpp attaches with rank pooling
(``bert.pooling_type`` = rank). Its tokenizer is the tiny SentencePiece vocabulary of
:mod:`model_registry.tiny_gguf`, with ``</s>`` as both end and separator token, so a pair
becomes ``<s> query </s></s> document </s>`` as in XLM-R.

The weights are random, so its scores rank at random; but they are a deterministic function
of the pair, so they can be compared with another engine's on the same file. The same
arguments always give the same bytes.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import gguf
import numpy as np

from model_registry.tiny_gguf import tiny_vocabulary
from model_registry.tiny_projector import save_gguf

__all__ = ["write_tiny_reranker"]

_ARCH = gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT]
_END_ID = 2  # ``</s>`` in the tiny vocabulary


def write_tiny_reranker(
    path: str | os.PathLike[str],
    *,
    n_layer: int = 2,
    n_embd: int = 64,
    n_head: int = 4,
    context_length: int = 512,
    seed: int = 0,
    name: str = "tiny-reranker",
) -> Path:
    """Write the reranker; ``context_length`` is also its position table (its largest
    context)."""
    if n_embd % n_head:
        raise ValueError("n_embd must be a multiple of n_head")
    vocab = tiny_vocabulary()
    writer = gguf.GGUFWriter(None, _ARCH)
    writer.add_name(name)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_context_length(context_length)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(4 * n_embd)
    writer.add_head_count(n_head)
    writer.add_layer_norm_eps(1e-5)
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.RANK)
    writer.add_classifier_output_labels(["LABEL_0"])
    _add_tokenizer(writer, vocab)
    rng = np.random.default_rng(seed)
    n_vocab = len(vocab.tokens)
    for tensor, shape, fill in _tensor_plan(n_layer, n_embd, n_vocab, context_length):
        writer.add_tensor(tensor, _values(fill, shape, rng))
    return save_gguf(writer, path)


def _add_tokenizer(writer: gguf.GGUFWriter, vocab) -> None:
    writer.add_tokenizer_model("llama")
    writer.add_token_list(vocab.tokens)
    writer.add_token_scores(vocab.scores)
    writer.add_token_types(vocab.types)
    writer.add_token_type_count(1)
    writer.add_unk_token_id(vocab.unk_id)
    writer.add_bos_token_id(vocab.bos_id)
    writer.add_eos_token_id(_END_ID)
    writer.add_sep_token_id(_END_ID)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(True)
    writer.add_add_sep_token(True)


def _tensor_plan(n_layer: int, d: int, n_vocab: int, context: int):
    """(name, numpy shape, fill) for every tensor, in file order."""
    plan = [
        ("token_embd.weight", (n_vocab, d), "embedding"),
        ("token_types.weight", (1, d), "embedding"),
        ("position_embd.weight", (context, d), "embedding"),
        ("token_embd_norm.weight", (d,), "one"),
        ("token_embd_norm.bias", (d,), "zero"),
    ]
    for bid in range(n_layer):
        block = f"blk.{bid}"
        for part in ("attn_q", "attn_k", "attn_v", "attn_output"):
            plan += [
                (f"{block}.{part}.weight", (d, d), "dense"),
                (f"{block}.{part}.bias", (d,), "zero"),
            ]
        plan += [
            (f"{block}.attn_output_norm.weight", (d,), "one"),
            (f"{block}.attn_output_norm.bias", (d,), "zero"),
            (f"{block}.ffn_up.weight", (4 * d, d), "dense"),
            (f"{block}.ffn_up.bias", (4 * d,), "zero"),
            (f"{block}.ffn_down.weight", (d, 4 * d), "dense"),
            (f"{block}.ffn_down.bias", (d,), "zero"),
            (f"{block}.layer_output_norm.weight", (d,), "one"),
            (f"{block}.layer_output_norm.bias", (d,), "zero"),
        ]
    plan += [
        ("cls.weight", (d, d), "dense"),
        ("cls.bias", (d,), "zero"),
        ("cls.output.weight", (1, d), "dense"),
        ("cls.output.bias", (1,), "zero"),
    ]
    return plan


def _values(fill: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Unit-variance embeddings, dense layers that keep the variance (so every token's
    attention matters), unit norms, zero biases."""
    if fill == "embedding":
        return rng.standard_normal(shape, dtype=np.float32)
    if fill == "dense":
        return rng.standard_normal(shape, dtype=np.float32) / np.float32(math.sqrt(shape[-1]))
    return np.ones(shape, np.float32) if fill == "one" else np.zeros(shape, np.float32)
