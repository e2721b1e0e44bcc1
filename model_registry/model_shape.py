"""What a model is made of, as far as its memory goes: read from its GGUF header alone.

A memory plan (``daemon.scheduler.memory_plan``) needs the bytes of every weight, by layer and
kind, and the numbers llama.cpp sizes its caches and buffers from: layers, width, vocabulary,
heads and key/value heads (per layer where the file has arrays), head sizes, feed-forward
widths, experts, the sliding window and which layers use it, and a recurrent model's state.
The header has them all (:mod:`localllm.model_registry.gguf_header` lists each tensor's type and
size), so a plan needs no llama.cpp and no read of the weights.

Which layers keep a sliding window is decided by llama.cpp per architecture (its
``load_arch_hparams``: a window size, a period of layers and which of them sees the whole
context); :data:`WINDOW_ARCHITECTURES` holds the rules of llama.cpp 0.3.36's ``gemma2``,
``gemma3``, ``cohere2``, ``llama4`` (chunked), ``gpt-oss``, ``olmo2``, ``smallthinker`` and
``afmoe``. Every other architecture is planned with full attention in every layer, as llama.cpp
runs the catalog's (llama, qwen2, qwen3, phi3, granite, mistral...). A recurrent state is
planned for :data:`RECURRENT_ARCHITECTURES` (Mamba, Mamba 2, RWKV) and for the hybrids whose
recurrent layers are those without key/value heads (Jamba, Granite 4 hybrid, LFM2,
Nemotron-H); other hybrids say in :attr:`ModelShape.notes` that theirs is not planned. An
encoder (BERT and kin) keeps no KV cache at all.

A projector, draft model or LoRA adapter is read the same way: its weights come from its own
header (a file that is no language model has no layers, only weights).
"""

from __future__ import annotations

import builtins
import hashlib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeGuard

import gguf

from localllm.model_registry.gguf_header import OMITTED, GGUFHeader, TensorInfo, parse_header

__all__ = [
    "RECURRENT_ARCHITECTURES",
    "WEIGHT_KINDS",
    "WINDOW_ARCHITECTURES",
    "ModelShape",
    "WeightGroup",
    "model_shape",
    "read_model_shape",
]

WEIGHT_KINDS = ("embeddings", "output", "attention", "ffn", "experts", "shared experts", "other")
_LAYER = re.compile(r"blk\.(\d+)\.")
_ENCODERS = frozenset(
    {"bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "jina-bert-v3", "neo-bert"}
    | {"eurobert", "modern-bert", "gemma-embedding", "t5encoder", "dream", "llada", "llada-moe"}
)
RECURRENT_ARCHITECTURES = frozenset({"mamba", "mamba2", "rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7"})
# hybrids whose recurrent layers are the ones with no key/value heads (llama.cpp's rule for them)
_HYBRID_BY_HEADS = frozenset({"jamba", "granitehybrid", "lfm2", "lfm2moe", "nemotron_h"})
_HYBRID_OTHER = frozenset(
    {"falcon-h1", "plamo2", "nemotron_h_moe", "qwen3next", "kimi-linear", "qwen35", "qwen35moe"}
)


@dataclass(frozen=True, slots=True)
class _Window:
    """llama.cpp's sliding-window rule for one architecture: the window for the value of
    ``attention.sliding_window`` (None: absent; 0 from ``size``: no window), and the period:
    layer ``i`` slides when ``i % period < period - 1`` (``dense_first``: when ``i % period``)."""

    size: Callable[[int | None], int]
    period: int
    dense_first: bool = False


def _from_key(value: int | None) -> int:
    return value or 0


WINDOW_ARCHITECTURES: Mapping[str, _Window] = {
    "gemma2": _Window(lambda v: 4096 if v is None else v, 2),
    "gemma3": _Window(_from_key, 6),
    "cohere2": _Window(_from_key, 4),
    "llama4": _Window(lambda v: 0 if v == 0 else 8192, 4),  # chunked attention, 8192 a chunk
    "gpt-oss": _Window(_from_key, 2),
    "olmo2": _Window(_from_key, 4),
    "smallthinker": _Window(lambda v: 4096 if v else 0, 4, dense_first=True),
    "afmoe": _Window(_from_key, 4),
}


@dataclass(frozen=True, slots=True)
class WeightGroup:
    """The tensors of one layer (None: no repeating layer) of one kind and ggml type."""

    layer: int | None
    kind: str  # one of WEIGHT_KINDS
    ggml_type: str  # "Q4_K", "F16"...
    bytes: int
    # matrices multiplied by activations, rows in 8s: what llama.cpp's CPU backend may copy
    # into its repacked layout (``CPU_REPACK``) for this CPU's kernels
    repackable: bool = False


@dataclass(frozen=True, slots=True)
class ModelShape:
    """What sizes a model's memory (see the module docstring). Per-layer tuples have one item
    per repeating layer."""

    architecture: str
    n_layer: int = 0
    n_embd: int = 0
    n_vocab: int = 0
    n_ctx_train: int = 0
    n_head: tuple[int, ...] = ()
    n_head_kv: tuple[int, ...] = ()  # 0: the layer keeps no KV cache (a recurrent layer)
    head_k: int = 0  # values per key head (full-attention layers)
    head_v: int = 0
    head_k_swa: int = 0  # the same for sliding-window layers
    head_v_swa: int = 0
    n_ff: tuple[int, ...] = ()
    gated_ffn: bool = True  # a gate beside the up projection (SwiGLU, GeGLU): 3 widths live
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_expert: int = 0
    n_ff_shared: int = 0  # the shared experts' width together
    sliding_window: int = 0  # tokens; 0: every layer attends over the whole context
    swa_layers: tuple[bool, ...] = ()
    recurrent_layers: tuple[bool, ...] = ()
    recurrent_r: int = 0  # floats a sequence keeps per recurrent layer: convolution or shift
    recurrent_s: int = 0  # ... and its state (SSM or WKV)
    kv_cache: bool = True  # False: an encoder, with no KV cache at all
    weights: tuple[WeightGroup, ...] = ()
    tied_output: bool = False  # the output reuses the token embeddings (no output.weight)
    fingerprint: str = ""  # changes with anything that changes the buffers llama.cpp makes
    notes: tuple[str, ...] = ()  # what the plan does not count for this model

    @property
    def weights_bytes(self) -> int:
        return sum(group.bytes for group in self.weights)

    def bytes_of(self, *kinds: str, layer: int | None = None) -> int:
        """The weights of these kinds (all kinds: none named), of one layer if given."""
        return sum(
            g.bytes
            for g in self.weights
            if (not kinds or g.kind in kinds) and (layer is None or g.layer == layer)
        )

    def layer_bytes(self) -> list[int]:
        """Each repeating layer's weights."""
        sizes = [0] * self.n_layer
        for group in self.weights:
            if group.layer is not None and group.layer < self.n_layer:
                sizes[group.layer] += group.bytes
        return sizes

    def is_swa(self, layer: int) -> bool:
        return bool(self.swa_layers) and self.swa_layers[layer]

    def kv_widths(self, layer: int) -> tuple[int, int]:
        """Values one token keeps in layer ``layer``'s K and V caches (0, 0: none)."""
        heads = self.n_head_kv[layer] if self.n_head_kv else 0
        if self.is_swa(layer):
            return heads * self.head_k_swa, heads * self.head_v_swa
        return heads * self.head_k, heads * self.head_v


def read_model_shape(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
) -> ModelShape:
    """The shape of the model in ``paths`` (one file, or a model's shards in order)."""
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    headers = []
    for path in paths:
        with open(path, "rb") as stream:
            headers.append(parse_header(stream, os.fstat(stream.fileno()).st_size))
    return model_shape(headers[0], headers[1:])


def model_shape(header: GGUFHeader, shards: Sequence[GGUFHeader] = ()) -> ModelShape:
    """The shape of a model from its header (and its other shards' headers, for their
    tensors): hyperparameters from the first, weights from all."""
    tensors = [t for h in (header, *shards) for t in h.tensors]
    listed = sum(t.n_bytes for t in tensors)
    unlisted = sum(h.tensor_bytes for h in (header, *shards)) - listed
    weights = _weights(tensors, unlisted)
    values = header.values
    arch = _text(values.get(gguf.Keys.General.ARCHITECTURE))
    notes: list[str] = []
    if not arch or arch == "clip" or _text(values.get(gguf.Keys.General.TYPE)) == "adapter":
        return ModelShape(arch, weights=weights, fingerprint=_fingerprint(tensors, values))
    hp = _Keys(values, arch)
    n_layer = hp.int(gguf.Keys.LLM.BLOCK_COUNT)
    n_embd = hp.int(gguf.Keys.LLM.EMBEDDING_LENGTH)
    n_head = hp.layers(gguf.Keys.Attention.HEAD_COUNT, n_layer)
    n_head_kv = (
        hp.layers(gguf.Keys.Attention.HEAD_COUNT_KV, n_layer)
        if hp.has(gguf.Keys.Attention.HEAD_COUNT_KV)
        else n_head
    )
    first = next((h for h in n_head if h), 0)
    head_k = hp.int(gguf.Keys.Attention.KEY_LENGTH) or (n_embd // first if first else 0)
    head_v = hp.int(gguf.Keys.Attention.VALUE_LENGTH) or (n_embd // first if first else 0)
    n_ff = hp.layers(gguf.Keys.LLM.FEED_FORWARD_LENGTH, n_layer)
    window, swa = _window(hp, arch, n_layer)
    recurrent, state_r, state_s = _recurrent(hp, arch, n_layer, n_embd, n_head_kv, n_ff, notes)
    if arch.startswith("deepseek") or hp.int(gguf.Keys.Attention.KV_LORA_RANK):
        notes.append("its compressed (MLA) cache is planned as a plain one")
    if arch in ("gemma3n", "gemma4"):
        notes.append("layers that share another's cache are planned with their own")
    return ModelShape(
        architecture=arch,
        n_layer=n_layer,
        n_embd=n_embd,
        n_vocab=_vocabulary(header, hp, tensors),
        n_ctx_train=hp.int(gguf.Keys.LLM.CONTEXT_LENGTH),
        n_head=n_head,
        n_head_kv=tuple(0 if r else h for h, r in zip(n_head_kv, recurrent, strict=True))
        if recurrent
        else n_head_kv,
        head_k=head_k,
        head_v=head_v,
        head_k_swa=hp.int(gguf.Keys.Attention.KEY_LENGTH_SWA) or head_k,
        head_v_swa=hp.int(gguf.Keys.Attention.VALUE_LENGTH_SWA) or head_v,
        n_ff=n_ff,
        gated_ffn=any(".ffn_gate" in t.name for t in tensors),
        n_expert=hp.int(gguf.Keys.LLM.EXPERT_COUNT),
        n_expert_used=hp.int(gguf.Keys.LLM.EXPERT_USED_COUNT),
        n_ff_expert=_expert_width(hp, tensors),
        n_ff_shared=hp.int(gguf.Keys.LLM.EXPERT_SHARED_FEED_FORWARD_LENGTH)
        * max(1, hp.int(gguf.Keys.LLM.EXPERT_SHARED_COUNT)),
        sliding_window=window,
        swa_layers=swa,
        recurrent_layers=recurrent,
        recurrent_r=state_r,
        recurrent_s=state_s,
        kv_cache=arch not in _ENCODERS and arch not in RECURRENT_ARCHITECTURES,
        weights=weights,
        tied_output=not any(t.name.startswith("output.") for t in tensors),
        fingerprint=_fingerprint(tensors, values),
        notes=tuple(notes),
    )


class _Keys:
    """The architecture's hyperparameters in a header's values, read leniently: a missing or
    ill-typed value is 0 (the plan is an estimate; llama.cpp itself refuses a broken file)."""

    def __init__(self, values: Mapping[str, object], arch: str):
        self._values = values
        self._arch = arch

    def has(self, template: str) -> bool:
        return template.format(arch=self._arch) in self._values

    def raw(self, template: str) -> object:
        return self._values.get(template.format(arch=self._arch))

    def int(self, template: str) -> int:
        value = self.raw(template)
        if isinstance(value, list):
            value = max((v for v in value if _is_int(v)), default=0)
        return value if _is_int(value) and value > 0 else 0

    def layers(self, template: str, n_layer: builtins.int) -> tuple[builtins.int, ...]:
        """A per-layer value: an array as given (padded or cut to ``n_layer``), else one
        number for every layer."""
        value = self.raw(template)
        if isinstance(value, list):
            items = [v if _is_int(v) and v > 0 else 0 for v in value[:n_layer]]
            return tuple(items + [items[-1] if items else 0] * (n_layer - len(items)))
        return (self.int(template),) * n_layer


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _vocabulary(header: GGUFHeader, hp: _Keys, tensors: list[TensorInfo]) -> int:
    """``{arch}.vocab_size``, else the tokenizer's token count, else the embeddings' rows."""
    size = hp.int(gguf.Keys.LLM.VOCAB_SIZE) or header.array_lengths.get(gguf.Keys.Tokenizer.LIST)
    if size:
        return size
    embeddings = next((t for t in tensors if t.name == "token_embd.weight"), None)
    return embeddings.dims[1] if embeddings is not None and len(embeddings.dims) > 1 else 0


def _window(hp: _Keys, arch: str, n_layer: int) -> tuple[int, tuple[bool, ...]]:
    """The sliding window and the layers that use it, by llama.cpp's rule for ``arch``."""
    rule = WINDOW_ARCHITECTURES.get(arch)
    if rule is None:
        return 0, ()
    key = gguf.Keys.Attention.SLIDING_WINDOW
    window = rule.size(hp.int(key) if hp.has(key) else None)
    if not window:
        return 0, ()
    pattern = hp.raw(gguf.Keys.Attention.SLIDING_WINDOW_PATTERN)
    if isinstance(pattern, list):
        flags = [bool(flag) for flag in pattern[:n_layer]]
        return window, tuple(flags + [False] * (n_layer - len(flags)))
    period = pattern if _is_int(pattern) else rule.period
    if rule.dense_first:
        swa = (period == 0 or i % period != 0 for i in range(n_layer))
    else:
        swa = (period == 0 or i % period < period - 1 for i in range(n_layer))
    return window, tuple(swa)


def _recurrent(
    hp: _Keys,
    arch: str,
    n_layer: int,
    n_embd: int,
    n_head_kv: tuple[int, ...],
    n_ff: tuple[int, ...],
    notes: list[str],
) -> tuple[tuple[bool, ...], int, int]:
    """Which layers keep a recurrent state, and its floats per sequence (llama.cpp's
    ``n_embd_r`` and ``n_embd_s``)."""
    if arch in RECURRENT_ARCHITECTURES:
        layers = (True,) * n_layer
    elif arch == "nemotron_h":
        layers = tuple(h == 0 and f == 0 for h, f in zip(n_head_kv, n_ff, strict=True))
    elif arch in _HYBRID_BY_HEADS:
        layers = tuple(h == 0 for h in n_head_kv)
    else:
        if arch in _HYBRID_OTHER:
            notes.append("its recurrent state is not planned")
        return (), 0, 0
    wkv = hp.int(gguf.Keys.WKV.HEAD_SIZE)
    if wkv:
        shifts = hp.int(gguf.Keys.LLM.TOKEN_SHIFT_COUNT) or 2
        return layers, shifts * n_embd, n_embd * wkv
    short = hp.int(gguf.Keys.ShortConv.L_CACHE)
    if short:
        return layers, n_embd * (short - 1), 0
    conv = max(0, hp.int(gguf.Keys.SSM.CONV_KERNEL) - 1)
    inner, state = hp.int(gguf.Keys.SSM.INNER_SIZE), hp.int(gguf.Keys.SSM.STATE_SIZE)
    groups = hp.int(gguf.Keys.SSM.GROUP_COUNT)
    return layers, conv * (inner + 2 * groups * state), state * inner


def _expert_width(hp: _Keys, tensors: list[TensorInfo]) -> int:
    """One expert's feed-forward width: the key, else the experts' up matrices' rows."""
    width = hp.int(gguf.Keys.LLM.EXPERT_FEED_FORWARD_LENGTH)
    if width or not hp.int(gguf.Keys.LLM.EXPERT_COUNT):
        return width
    up = next((t for t in tensors if t.name.endswith(".ffn_up_exps.weight")), None)
    return (
        up.dims[1]
        if up is not None and len(up.dims) == 3
        else hp.int(gguf.Keys.LLM.FEED_FORWARD_LENGTH)
    )


def _weights(tensors: list[TensorInfo], unlisted: int) -> tuple[WeightGroup, ...]:
    """Bytes by (layer, kind, type, repackable), in first-seen order; tensors past the
    header's list, if any, as one group of their own."""
    groups: dict[tuple[int | None, str, str, bool], int] = {}
    for tensor in tensors:
        layer, kind = _classify(tensor.name)
        key = (layer, kind, _type_name(tensor.ggml_type), _repackable(tensor, kind))
        groups[key] = groups.get(key, 0) + tensor.n_bytes
    listed = [WeightGroup(*key[:3], size, key[3]) for key, size in groups.items()]
    return tuple(listed + ([WeightGroup(None, "other", "", unlisted)] if unlisted else []))


def _classify(name: str) -> tuple[int | None, str]:
    found = _LAYER.match(name)
    if found is None:
        if name.startswith(("token_embd", "position_embd", "token_types")):
            return None, "embeddings"
        if name.startswith(("output", "cls")):
            return None, "output"
        return None, "other"
    part = name[found.end() :]
    if "_exps" in part or "_exp_" in part or part.startswith("exp_probs"):
        kind = "experts"
    elif "_shexp" in part:
        kind = "shared experts"
    elif part.startswith("attn_") and "norm" not in part:
        kind = "attention"
    elif part.startswith(("ffn_gate.", "ffn_up.", "ffn_down.", "ffn_gate_up.")):
        kind = "ffn"
    else:
        kind = "other"  # norms, the router, a recurrent layer's tensors
    return int(found.group(1)), kind


def _repackable(tensor: TensorInfo, kind: str) -> bool:
    return (
        kind in ("attention", "ffn", "experts", "shared experts", "output")
        and len(tensor.dims) >= 2
        and tensor.dims[1] % 8 == 0
    )


def _type_name(ggml_type: int) -> str:
    try:
        return gguf.GGMLQuantizationType(ggml_type).name
    except ValueError:
        return str(ggml_type)


def _fingerprint(tensors: list[TensorInfo], values: Mapping[str, object]) -> str:
    """A digest of the tensor table and the hyperparameters (not the tokenizer's tables nor
    the chat template: they change no buffer)."""
    digest = hashlib.sha256()
    for tensor in tensors:
        digest.update(f"{tensor.name}:{tensor.ggml_type}:{tensor.dims}\n".encode())
    for key in sorted(values):
        value = values[key]
        if not key.startswith(("tokenizer.", "general.")) and value is not OMITTED:
            digest.update(f"{key}={value!r}\n".encode())
    return digest.hexdigest()[:32]
