"""Tiny, real reranker GGUFs for tests and benchmarks, in the two layouts llama.cpp ranks with.

:func:`write_tiny_reranker` writes, by default (``style="bge"``), a cross-encoder laid out as
BGE reranker v2 m3 is once converted (XLM-RoBERTa as llama.cpp's ``bert`` architecture):
token, type and position embeddings, post-norm encoder layers, and a classification head
(``cls`` dense + tanh, then ``cls.output`` to one label) that llama.cpp attaches with rank
pooling (``bert.pooling_type`` = rank). Its tokenizer is the tiny SentencePiece vocabulary of
:mod:`localllm.model_registry.tiny_gguf`, with ``</s>`` as both end and separator token, so a pair
becomes ``<s> query </s></s> document </s>`` as in XLM-R.

``style="qwen3"`` writes one laid out as Qwen3-Reranker is converted: a causal ``qwen3``
decoder whose last token's state goes through ``cls.output`` to two labels ("yes", "no") and a
softmax, and whose GGUF carries the rerank prompt (``tokenizer.chat_template.rerank``) that
the query and the document are written into.

The weights are random, so its scores rank at random; but they are a deterministic function
of the pair, so they can be compared with another engine's on the same file. The same
arguments always give the same bytes.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Literal

import gguf
import numpy as np

from localllm.model_registry.tiny_vocabulary import TinyVocabulary, tiny_vocabulary
from tests.support.model_writers.projector import save_gguf

__all__ = ["write_tiny_reranker"]

_Fill = Literal["embedding", "dense", "one", "zero"]  # how _values fills a tensor
_Plan = list[tuple[str, tuple[int, ...], _Fill]]  # (name, numpy shape, fill), in file order
_END_ID = 2  # ``</s>`` in the tiny vocabulary
# Qwen3-Reranker's prompt, as llama.cpp's converter writes it into the GGUF
QWEN3_RERANK_PROMPT = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query "
    'and the Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n'
    "<|im_start|>user\n<Instruct>: Given a web search query, retrieve relevant passages that "
    "answer the query\n<Query>: {query}\n<Document>: {document}<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n"
)


def write_tiny_reranker(
    path: str | os.PathLike[str],
    *,
    n_layer: int = 2,
    n_embd: int = 64,
    n_head: int = 4,
    context_length: int = 512,
    seed: int = 0,
    name: str = "tiny-reranker",
    style: Literal["bge", "qwen3"] = "bge",
) -> Path:
    """Write the reranker; for ``bge``, ``context_length`` is also its position table (its
    largest context)."""
    if n_embd % n_head or (n_embd // n_head) % 2:
        raise ValueError("n_embd must be a multiple of n_head, with an even head size")
    if style not in ("bge", "qwen3"):
        raise ValueError("style must be 'bge' or 'qwen3'")
    vocab = tiny_vocabulary()
    bge = style == "bge"
    writer = gguf.GGUFWriter(None, "bert" if bge else "qwen3")
    writer.add_name(name)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_context_length(context_length)
    writer.add_embedding_length(n_embd)
    writer.add_block_count(n_layer)
    writer.add_feed_forward_length(4 * n_embd)
    writer.add_head_count(n_head)
    writer.add_pooling_type(gguf.PoolingType.RANK)
    if bge:
        writer.add_layer_norm_eps(1e-5)
        writer.add_causal_attention(False)
        writer.add_classifier_output_labels(["LABEL_0"])
        plan = _bge_plan(n_layer, n_embd, len(vocab.tokens), context_length)
    else:
        writer.add_head_count_kv(n_head)
        writer.add_key_length(n_embd // n_head)
        writer.add_value_length(n_embd // n_head)
        writer.add_rope_dimension_count(n_embd // n_head)
        writer.add_rope_freq_base(10000.0)
        writer.add_layer_norm_rms_eps(1e-6)
        writer.add_classifier_output_labels(["yes", "no"])
        writer.add_chat_template([{"name": "rerank", "template": QWEN3_RERANK_PROMPT}])
        plan = _qwen3_plan(n_layer, n_embd, n_head, len(vocab.tokens))
    _add_tokenizer(writer, vocab, bge)
    rng = np.random.default_rng(seed)
    for tensor, shape, fill in plan:
        writer.add_tensor(tensor, _values(fill, shape, rng))
    return save_gguf(writer, path)


def _add_tokenizer(writer: gguf.GGUFWriter, vocab: TinyVocabulary, pairs: bool) -> None:
    """``pairs``: BOS, EOS and SEP frame a query and a document (without, the prompt does)."""
    writer.add_tokenizer_model("llama")
    writer.add_token_list(vocab.tokens)
    writer.add_token_scores(vocab.scores)
    writer.add_token_types(vocab.types)
    writer.add_token_type_count(1)
    writer.add_unk_token_id(vocab.unk_id)
    writer.add_bos_token_id(vocab.bos_id)
    writer.add_eos_token_id(_END_ID)
    writer.add_sep_token_id(_END_ID)
    writer.add_add_bos_token(pairs)
    writer.add_add_eos_token(pairs)
    writer.add_add_sep_token(pairs)


def _bge_plan(n_layer: int, d: int, n_vocab: int, context: int) -> _Plan:
    """(name, numpy shape, fill) for every tensor, in file order."""
    plan: _Plan = [
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


def _values(fill: _Fill, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Unit-variance embeddings, dense layers that keep the variance (so every token's
    attention matters), unit norms, zero biases."""
    if fill == "embedding":
        return rng.standard_normal(shape, dtype=np.float32)
    if fill == "dense":
        return rng.standard_normal(shape, dtype=np.float32) / np.float32(math.sqrt(shape[-1]))
    return np.ones(shape, np.float32) if fill == "one" else np.zeros(shape, np.float32)


def _qwen3_plan(n_layer: int, d: int, n_head: int, n_vocab: int) -> _Plan:
    """(name, numpy shape, fill) for every tensor of the decoder, in file order."""
    plan: _Plan = [("token_embd.weight", (n_vocab, d), "embedding")]
    for bid in range(n_layer):
        block = f"blk.{bid}"
        plan += [
            (f"{block}.attn_norm.weight", (d,), "one"),
            (f"{block}.attn_q.weight", (d, d), "dense"),
            (f"{block}.attn_k.weight", (d, d), "dense"),
            (f"{block}.attn_v.weight", (d, d), "dense"),
            (f"{block}.attn_output.weight", (d, d), "dense"),
            (f"{block}.attn_q_norm.weight", (d // n_head,), "one"),
            (f"{block}.attn_k_norm.weight", (d // n_head,), "one"),
            (f"{block}.ffn_norm.weight", (d,), "one"),
            (f"{block}.ffn_gate.weight", (4 * d, d), "dense"),
            (f"{block}.ffn_up.weight", (4 * d, d), "dense"),
            (f"{block}.ffn_down.weight", (d, 4 * d), "dense"),
        ]
    plan += [("output_norm.weight", (d,), "one"), ("cls.output.weight", (2, d), "dense")]
    return plan
