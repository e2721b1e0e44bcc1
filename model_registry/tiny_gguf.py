"""Tiny, real GGUF models for tests and benchmarks.

:func:`write_tiny_model` writes a llama-architecture model with random weights that llama.cpp
loads, tokenizes, chats with (ChatML) and generates from, in well under a second at the default
size, and that a benchmark can scale to a few hundred million parameters. The same arguments
always give the same bytes.

The weights are random but shaped so that runs are predictable: dimension 0 of the residual
stream is a constant "bias channel" (set in every token embedding, never written by a layer),
which lets the output matrix push chosen tokens' logits far down or up whatever the input.
By default that keeps control tokens and raw bytes out of the samples, so generation produces
printable text and always runs to its token limit; ``end_of_turn="immediately"`` makes the
first sampled token the end-of-turn token instead, and ``"soon"`` gives it a small push, so a
reply is a few words, then ends (about 20 tokens on average): what a client that waits for the
end of a turn (a coding agent) needs.

``thinking="qwen3"`` or ``"gpt-oss"`` makes a model that thinks the way those families do: their
marker tokens join the vocabulary (never sampled, like control tokens) and their chat template
replaces the default ChatML one (see ``tiny_thinking``).

``n_expert`` makes it a Mixtral-style mixture of experts: each layer's feed-forward network
becomes a router (``ffn_gate_inp``, kept F32 as converters keep it) and ``n_expert`` stacked
experts (``ffn_{gate,up,down}_exps``), of which llama.cpp runs ``n_expert_used`` per token.

The pieces the writers in tests/support/model_writers share: :class:`TinyGGUFWriter`,
:func:`output_bias`, :func:`tiny_weights` and :func:`save_tiny_gguf`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import gguf
import numpy as np

from localllm.model_registry.tiny_thinking import ThinkingStyle, style_template
from localllm.model_registry.tiny_vocabulary import TinyVocabulary, add_tokenizer, tiny_vocabulary

__all__ = [
    "CHATML_TEMPLATE",
    "TensorPlan",
    "TinyGGUFWriter",
    "output_bias",
    "save_tiny_gguf",
    "tiny_weights",
    "write_tiny_model",
]

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

_LOGIT_MARGIN = 40.0  # how far the bias channel moves a chosen token's logit
_LAYER_STD = 0.02
# the end-of-turn token's push: never, a small one (sampled about once in 20 tokens), always
_END_OF_TURN_PUSH = {"never": -1.0, "soon": 0.05, "immediately": 1.0}
_WRITES_RESIDUAL = (".attn_output.weight", ".ffn_down.weight", ".ffn_down_exps.weight")
_LAYER = re.compile(r"blk\.\d+\.")  # the layer part of a tensor's name
_OUTPUT_LOGIT_STD = 2.0
_MAX_EXPERTS = 1024  # llama.cpp's LLAMA_MAX_EXPERTS
# (name, numpy shape, ggml type) of every tensor, in file order
TensorPlan = list[tuple[str, tuple[int, ...], gguf.GGMLQuantizationType]]


def write_tiny_model(
    path: str | os.PathLike[str],
    *,
    n_layer: int = 2,
    n_embd: int = 64,
    n_head: int = 4,
    n_head_kv: int | None = None,
    n_ff: int | None = None,
    context_length: int = 2048,
    file_type: Literal["F16", "Q8_0", "Q4_0"] = "F16",
    seed: int = 0,
    vocab_size: int | None = None,
    name: str = "tiny-llama",
    license: str | None = None,
    chat_template: str | None = CHATML_TEMPLATE,
    end_of_turn: Literal["never", "immediately", "soon", "random"] = "never",
    thinking: ThinkingStyle = "none",
    sampling: Mapping[str, float] | None = None,
    shared_layers: bool = False,
    fill_in_middle: bool = False,
    n_expert: int = 0,
    n_expert_used: int = 0,
) -> Path:
    """Write a llama-architecture GGUF with random weights that llama.cpp can run.

    With ``thinking``, the default ChatML template becomes that style's template (pass
    another ``chat_template`` to override it). ``sampling`` writes ``general.sampling.*``
    keys, by their short name (``temp``, ``top_k``...), as converters write them.
    ``shared_layers``: every layer gets the first layer's weights, made and quantized once,
    so a model of a real shape (8B) is written in seconds rather than minutes; speed
    benchmarks do not care what the weights are. ``fill_in_middle`` gives the vocabulary a
    code model's FIM markers (``FIM_TOKENS``). ``n_expert`` (0: dense) experts of ``n_ff``
    each, ``n_expert_used`` of them run per token, make it a mixture of experts."""
    spec = _Spec.build(n_layer, n_embd, n_head, n_head_kv, n_ff, file_type)
    spec = _with_experts(spec, n_expert, n_expert_used)
    vocab = tiny_vocabulary(vocab_size, thinking, fill_in_middle)
    if chat_template == CHATML_TEMPLATE:
        chat_template = style_template(thinking) or chat_template
    bias = output_bias(vocab, end_of_turn)
    writer = TinyGGUFWriter(None, gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.LLAMA])
    _add_hyperparameters(writer, spec, context_length, len(vocab.tokens))
    add_tokenizer(writer, vocab, chat_template)
    writer.add_name(name)
    if license:
        writer.add_license(license)
    for key, value in (sampling or {}).items():
        getattr(writer, f"add_sampling_{key}")(value)
    made: dict[str, np.ndarray] = {}  # with shared_layers: by layer-less name

    def tensor(
        index: int, tensor_name: str, shape: tuple[int, ...], qtype: gguf.GGMLQuantizationType
    ) -> np.ndarray:
        key = _LAYER.sub("blk.", tensor_name) if shared_layers else tensor_name
        data = made.get(key)
        if data is None:
            values = tiny_weights(tensor_name, shape, np.random.default_rng((seed, index)), bias)
            data = gguf.quants.quantize(values, qtype)
            if shared_layers:
                made[key] = data
        return data

    return save_tiny_gguf(writer, path, _tensor_plan(spec, len(vocab.tokens)), tensor)


class TinyGGUFWriter(gguf.GGUFWriter):
    """gguf's writer, but a long metadata array (a 262k vocabulary's tokens, scores and types)
    is packed at once rather than item by item: the same bytes, a second sooner."""

    def _pack_val(
        self,
        val: object,
        vtype: gguf.GGUFValueType,
        add_vtype: bool,
        sub_type: gguf.GGUFValueType | None = None,
    ) -> bytes:
        whole = vtype == gguf.GGUFValueType.ARRAY and sub_type is None
        packed = _pack_array(val) if whole and self.endianess == gguf.GGUFEndian.LITTLE else None
        if packed is None:
            return super()._pack_val(val, vtype, add_vtype, sub_type)
        return struct.pack("<I", vtype) + packed if add_vtype else packed


_ARRAY_TYPES = {
    str: (gguf.GGUFValueType.STRING, None),
    float: (gguf.GGUFValueType.FLOAT32, "<f4"),
    int: (gguf.GGUFValueType.INT32, "<i4"),
}


def _pack_array(values: object) -> bytes | None:
    """A list of one plain type as GGUF packs it (item type, count, items); None otherwise."""
    if not isinstance(values, list) or not values or type(values[0]) not in _ARRAY_TYPES:
        return None
    kind = type(values[0])
    if any(type(value) is not kind for value in values):
        return None
    item_type, dtype = _ARRAY_TYPES[kind]
    head = struct.pack("<IQ", item_type, len(values))
    if dtype is not None:
        return head + np.asarray(values, dtype=dtype).tobytes()
    encoded = (value.encode() for value in values)
    return head + b"".join(struct.pack("<Q", len(item)) + item for item in encoded)


def save_tiny_gguf(
    writer: gguf.GGUFWriter,
    path: str | os.PathLike[str],
    plan: TensorPlan,
    tensor: Callable[[int, str, tuple[int, ...], gguf.GGMLQuantizationType], np.ndarray],
) -> Path:
    """Write ``writer``'s metadata and ``plan``'s tensors to ``path``, then close the writer.
    ``tensor(index, name, shape, type)`` makes each tensor's data just before it is written,
    so one tensor at a time is in memory (a 262k vocabulary's embeddings are the big ones)."""
    for tensor_name, shape, qtype in plan:
        _add_tensor_info(writer, tensor_name, shape, qtype)
    path = Path(path)
    try:
        writer.write_header_to_file(path)
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        for index, (tensor_name, shape, qtype) in enumerate(plan):
            writer.write_tensor_data(tensor(index, tensor_name, shape, qtype))
    finally:
        writer.close()
    return path


@dataclass(frozen=True)
class _Spec:
    n_layer: int
    n_embd: int
    n_head: int
    n_head_kv: int
    n_ff: int
    qtype: gguf.GGMLQuantizationType
    file_type: gguf.LlamaFileType
    n_expert: int = 0
    n_expert_used: int = 0

    @classmethod
    def build(
        cls,
        n_layer: int,
        n_embd: int,
        n_head: int,
        n_head_kv: int | None,
        n_ff: int | None,
        file_type: str,
    ) -> _Spec:
        n_head_kv = n_head if n_head_kv is None else n_head_kv
        n_ff = n_ff if n_ff is not None else -(-8 * n_embd // 3 // 32) * 32
        if file_type not in ("F16", "Q8_0", "Q4_0"):
            raise ValueError("file_type must be 'F16', 'Q8_0' or 'Q4_0'")
        if min(n_layer, n_embd, n_head, n_head_kv, n_ff) < 1:
            raise ValueError("layer, width and head counts must be positive")
        if n_embd % n_head or (n_embd // n_head) % 2 or n_head % n_head_kv:
            raise ValueError("n_embd / n_head must be even and n_head a multiple of n_head_kv")
        if file_type != "F16" and (n_embd % 32 or n_ff % 32):
            raise ValueError(f"{file_type} needs n_embd and n_ff to be multiples of 32")
        qtype = gguf.GGMLQuantizationType[file_type]
        return cls(
            n_layer,
            n_embd,
            n_head,
            n_head_kv,
            n_ff,
            qtype,
            gguf.LlamaFileType[f"MOSTLY_{file_type}"],
        )


def _with_experts(spec: _Spec, n_expert: int, n_expert_used: int) -> _Spec:
    """``spec`` made a mixture of experts, as llama.cpp accepts one (its load asserts these)."""
    if not 0 <= n_expert <= _MAX_EXPERTS:
        raise ValueError(f"n_expert must be from 0 (dense) to {_MAX_EXPERTS}")
    if n_expert and not 1 <= n_expert_used <= n_expert:
        raise ValueError("n_expert_used must be from 1 to n_expert")
    if not n_expert and n_expert_used:
        raise ValueError("n_expert_used needs n_expert")
    return dataclasses.replace(spec, n_expert=n_expert, n_expert_used=n_expert_used)


def _add_hyperparameters(writer: gguf.GGUFWriter, spec: _Spec, context: int, n_vocab: int) -> None:
    writer.add_context_length(context)
    writer.add_embedding_length(spec.n_embd)
    writer.add_block_count(spec.n_layer)
    writer.add_feed_forward_length(spec.n_ff)
    if spec.n_expert:
        writer.add_expert_count(spec.n_expert)
        writer.add_expert_used_count(spec.n_expert_used)
    writer.add_head_count(spec.n_head)
    writer.add_head_count_kv(spec.n_head_kv)
    writer.add_rope_dimension_count(spec.n_embd // spec.n_head)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(spec.file_type)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)


def _tensor_plan(spec: _Spec, n_vocab: int) -> TensorPlan:
    names, t = gguf.TENSOR_NAMES, gguf.MODEL_TENSOR
    f32, q = gguf.GGMLQuantizationType.F32, spec.qtype
    d, kv = spec.n_embd, spec.n_embd // spec.n_head * spec.n_head_kv
    plan: TensorPlan = [(names[t.TOKEN_EMBD] + ".weight", (n_vocab, d), q)]
    for bid in range(spec.n_layer):
        for tensor, shape, qtype in (
            (t.ATTN_NORM, (d,), f32),
            (t.ATTN_Q, (d, d), q),
            (t.ATTN_K, (kv, d), q),
            (t.ATTN_V, (kv, d), q),
            (t.ATTN_OUT, (d, d), q),
            (t.FFN_NORM, (d,), f32),
            *_ffn_plan(spec),
        ):
            plan.append((names[tensor].format(bid=bid) + ".weight", shape, qtype))
    plan += [(names[t.OUTPUT_NORM] + ".weight", (d,), f32)]
    plan += [(names[t.OUTPUT] + ".weight", (n_vocab, d), q)]
    return plan


def _ffn_plan(
    spec: _Spec,
) -> list[tuple[gguf.MODEL_TENSOR, tuple[int, ...], gguf.GGMLQuantizationType]]:
    """One layer's feed-forward tensors: dense, or a router and stacked experts (Mixtral's)."""
    t, q, d, ff, n = gguf.MODEL_TENSOR, spec.qtype, spec.n_embd, spec.n_ff, spec.n_expert
    if not n:
        return [(t.FFN_GATE, (ff, d), q), (t.FFN_UP, (ff, d), q), (t.FFN_DOWN, (d, ff), q)]
    return [
        (t.FFN_GATE_INP, (n, d), gguf.GGMLQuantizationType.F32),
        (t.FFN_GATE_EXP, (n, ff, d), q),
        (t.FFN_UP_EXP, (n, ff, d), q),
        (t.FFN_DOWN_EXP, (n, d, ff), q),
    ]


def _add_tensor_info(
    writer: gguf.GGUFWriter, name: str, shape: tuple[int, ...], qtype: gguf.GGMLQuantizationType
) -> None:
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    nbytes = math.prod(shape) // block_size * type_size
    writer.add_tensor_info(name, shape, np.dtype(np.float32), nbytes, raw_dtype=qtype)


def output_bias(vocab: TinyVocabulary, end_of_turn: str) -> np.ndarray:
    """Per-token push on the bias channel: -1 never sampled, +1 always, 0 left to chance."""
    if end_of_turn not in _END_OF_TURN_PUSH and end_of_turn != "random":
        raise ValueError("end_of_turn must be 'never', 'immediately', 'soon' or 'random'")
    bias = np.zeros(len(vocab.tokens), dtype=np.float32)
    if end_of_turn != "random":
        bias[vocab.quiet_ids] = -1.0
        bias[vocab.eos_id] = _END_OF_TURN_PUSH[end_of_turn]
    return bias


def tiny_weights(
    name: str, shape: tuple[int, ...], rng: np.random.Generator, bias: np.ndarray
) -> np.ndarray:
    """Random weights for one tensor, shaped around the bias channel (see the module doc):
    norms are ones, and no layer's output projection writes to channel 0."""
    if len(shape) == 1:
        return np.ones(shape, dtype=np.float32)
    values = rng.standard_normal(shape, dtype=np.float32)
    if name == gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.TOKEN_EMBD] + ".weight":
        values[:, 0] = math.sqrt(shape[1])  # the bias channel: half of every embedding's energy
    elif name == gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.OUTPUT] + ".weight":
        values *= _OUTPUT_LOGIT_STD / math.sqrt(shape[1] / 2)
        values[:, 0] = bias * (_LOGIT_MARGIN / math.sqrt(shape[1] / 2))
    else:
        values *= _LAYER_STD
        if name.endswith(_WRITES_RESIDUAL):
            values[..., 0, :] = 0.0  # no layer (no expert) writes to the bias channel
    return values
