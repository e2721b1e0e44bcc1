"""A loaded llama.cpp model: loading (one file or shards, and its LoRA adapters), contexts,
and the vocabulary.

Everything else in the worker asks this object for tokens and pieces, so the ctypes details of
tokenizing live in one place. Every context it makes has the spec's adapters applied with
their scales, so generation and embeddings see the same adapted model.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from pathlib import Path

import llama_cpp as lc
import numpy as np
import numpy.typing as npt

from ..attention import flash_attention_setting
from ..types import ContextOverflowError, FlashAttention, KvCacheType, RunnerSpec
from .expert_placement import ExpertsOnCpu

__all__ = ["ContextConfig", "LoadError", "Model"]

_GGUF_MAGIC = b"GGUF"
_CHEAP_BYTES_PER_TOKEN = 4  # a text of up to this many bytes per allowed token is tokenized
_HEAD_MARGIN = 16  # tokens kept past a cut, so the cut cannot change the tokens before it
_MOST_LOGIT_VIEWS = 1024  # a context's output rows; past this many addresses, start again
# llama.cpp's architectures whose graph reads a learned table of positions (``position_embd``,
# loaded with exactly ``n_ctx_train`` rows): a token past it aborts the process (GGML_ASSERT in
# ``get_rows``)
_LEARNED_POSITIONS = frozenset({"bert", "gpt2", "starcoder", "mpt"})
_CACHE_TYPES: dict[KvCacheType, int] = {
    "f16": lc.GGML_TYPE_F16,
    "q8_0": lc.GGML_TYPE_Q8_0,
    "q4_0": lc.GGML_TYPE_Q4_0,
}
_FLASH_ATTENTION: dict[FlashAttention, int] = {
    "auto": lc.LLAMA_FLASH_ATTN_TYPE_AUTO,
    "on": lc.LLAMA_FLASH_ATTN_TYPE_ENABLED,
    "off": lc.LLAMA_FLASH_ATTN_TYPE_DISABLED,
}


class LoadError(Exception):
    """The model could not be loaded; the message says why in words a user can act on."""

    invalid_request = False  # True: what was asked cannot work (the daemon answers 400)


@dataclass(frozen=True)
class ContextConfig:
    n_ctx: int
    n_seq_max: int
    n_batch: int
    n_threads: int
    embeddings: bool = False
    pooling: int = lc.LLAMA_POOLING_TYPE_UNSPECIFIED
    # False: each sequence gets its own n_ctx / n_seq_max cells, so its attention never depends
    # on what other sequences hold (same seed, same text at any concurrency). The price: llama.cpp
    # splits a batch into one pass per run of consecutive sequence ids (see ``slots``).
    unified_kv: bool = False
    flash_attn: int = lc.LLAMA_FLASH_ATTN_TYPE_AUTO
    # False: sliding-window layers keep a cache of their window only (see ``window``)
    swa_full: bool = True


class Model:
    """Owns the ``llama_model``; frees it on :meth:`close`."""

    def __init__(self, handle: lc.llama_model_p, spec: RunnerSpec):
        self.handle: lc.llama_model_p | None = handle  # None once closed
        self.spec = spec
        self.vocab = lc.llama_model_get_vocab(handle)
        self.n_vocab = lc.llama_vocab_n_tokens(self.vocab)
        self.n_embd = lc.llama_model_n_embd(handle)
        self.n_embd_out = lc.llama_model_n_embd_out(handle) or self.n_embd
        self.n_layer = lc.llama_model_n_layer(handle)
        self.n_head = lc.llama_model_n_head(handle)
        self.head_size = self._meta_int("attention.key_length") or (
            self.n_embd // self.n_head if self.n_head else 0
        )
        self.n_ctx_train = lc.llama_model_n_ctx_train(handle)
        self.n_swa = lc.llama_model_n_swa(handle)  # sliding-window size; 0: none
        self.n_expert = self._meta_int("expert_count")  # 0: a dense model
        self.leading_dense_layers = self._meta_int("leading_dense_block_count")
        self.size_bytes = lc.llama_model_size(handle)
        self.encoder_only = lc.llama_model_has_encoder(handle) and not (
            lc.llama_model_has_decoder(handle)
        )
        # what the last generation context was given
        self.attention: FlashAttention = spec.flash_attention
        self._pieces: dict[int, bytes] = {}
        self._logit_views: dict[int, npt.NDArray[np.float32]] = {}
        self._eog: list[int] | None = None
        # the llama_adapter_lora pointers, in spec.adapters order
        self._adapters: list[ctypes._Pointer[ctypes.c_void_p]] = []
        self._longest: int | None = None

    @classmethod
    def load(cls, spec: RunnerSpec) -> Model:
        paths = [Path(p) for p in spec.model_paths]
        for path in paths:
            _check_gguf(path)
        params = lc.llama_model_default_params()
        params.n_gpu_layers = spec.num_gpu_layers
        experts = ExpertsOnCpu(spec.num_cpu_moe)  # kept alive until the load returns
        experts.apply(params)
        if len(paths) == 1:
            handle = lc.llama_model_load_from_file(os.fsencode(paths[0]), params)
        else:
            array = (ctypes.c_char_p * len(paths))(*(os.fsencode(p) for p in paths))
            handle = lc.llama_model_load_from_splits(array, len(paths), params)
        if not handle:
            raise LoadError(f"llama.cpp rejected {paths[0].name} (see the log lines below)")
        model = cls(handle, spec)
        del experts  # llama.cpp has placed the tensors
        try:
            model._load_adapters()
        except LoadError:
            model.close()
            raise
        return model

    def _load_adapters(self) -> None:
        for adapter in self.spec.adapters:
            path = Path(adapter.path)
            handle = lc.llama_adapter_lora_init(self.handle, os.fsencode(path))
            if not handle:
                raise LoadError(
                    f"llama.cpp rejected the LoRA adapter {path.name} for "
                    f"{self.spec.model_name} (see the log lines below)"
                )
            self._adapters.append(handle)

    def new_context(self, config: ContextConfig) -> lc.llama_context_p:
        params = lc.llama_context_default_params()
        params.n_ctx = config.n_ctx
        params.n_seq_max = config.n_seq_max
        params.n_batch = params.n_ubatch = config.n_batch
        params.n_threads = params.n_threads_batch = config.n_threads
        params.embeddings = config.embeddings
        params.pooling_type = config.pooling
        params.kv_unified = config.unified_kv
        params.flash_attn_type = config.flash_attn
        params.swa_full = config.swa_full
        if not config.embeddings:  # generation: the KV cache type and attention the spec asks
            params.type_k = params.type_v = _CACHE_TYPES[self.spec.kv_cache_type]
            self.attention = self.flash_attention(config)
            params.flash_attn_type = _FLASH_ATTENTION[self.attention]
        params.n_outputs_max_per_seq = 0 if config.embeddings else 1
        params.no_perf = True
        ctx: lc.llama_context_p = lc.llama_init_from_model(self.handle, params)
        if not ctx:
            raise LoadError(
                f"llama.cpp could not create a context of {config.n_ctx} tokens "
                f"(KV cache {self.spec.kv_cache_type}, flash attention "
                f"{self.spec.flash_attention}; see the log lines below)"
            )
        if self._adapters and not self._apply_adapters(ctx):
            lc.llama_free(ctx)
            raise LoadError(
                f"llama.cpp could not apply the LoRA adapters of {self.spec.model_name}"
            )
        return ctx

    def flash_attention(self, config: ContextConfig) -> FlashAttention:
        """The spec's setting, with ``auto`` decided as ``daemon.runners.attention`` says."""
        on_gpu = self.spec.num_gpu_layers != 0 and lc.llama_supports_gpu_offload()
        return flash_attention_setting(
            self.spec.flash_attention,
            head_size=self.head_size,
            n_head=self.n_head,
            n_ctx=config.n_ctx // max(1, config.n_seq_max),
            n_batch=config.n_batch,
            kv_cache_type=self.spec.kv_cache_type,
            on_gpu=on_gpu,
        )

    def context_within_positions(self, n_ctx: int) -> int:
        """``n_ctx`` (per sequence), cut to the model's learned position table where it has
        one: no ``num_ctx`` may ask llama.cpp for a position the table lacks."""
        learned = self._meta_str("general.architecture") in _LEARNED_POSITIONS
        return min(n_ctx, self.n_ctx_train) if learned and self.n_ctx_train > 0 else n_ctx

    def _meta_int(self, key: str) -> int:
        """An integer of the GGUF's ``{architecture}.{key}``; 0 when absent."""
        arch = self._meta_str("general.architecture")
        text = self._meta_str(f"{arch}.{key}") if arch else ""
        return int(text) if text.isdigit() else 0

    def _meta_str(self, key: str) -> str:
        buf = ctypes.create_string_buffer(256)
        n = lc.llama_model_meta_val_str(self.handle, key.encode(), buf, len(buf))
        return buf.value.decode(errors="replace") if n >= 0 else ""

    def _apply_adapters(self, ctx: lc.llama_context_p) -> bool:
        count = len(self._adapters)
        handles = (lc.llama_adapter_lora_p_ctypes * count)(*self._adapters)
        scales = (ctypes.c_float * count)(*(adapter.scale for adapter in self.spec.adapters))
        return bool(lc.llama_set_adapters_lora(ctx, handles, count, scales) == 0)

    def tokenize(
        self, text: str, add_bos: bool = True, special: bool = True, most: int | None = None
    ) -> list[int]:
        """The tokens of ``text``. With ``most`` (a context size), a text that certainly takes
        more tokens is refused without tokenizing it (:class:`ContextOverflowError` with a
        floor): llama.cpp's tokenizer is quadratic on long runs of byte-fallback characters
        (minutes for a few MB)."""
        data = text.encode()
        if most is not None and len(data) > most * _CHEAP_BYTES_PER_TOKEN:
            floor = len(data) // self.longest_token_bytes()
            if floor > most:
                raise ContextOverflowError(floor, most, at_least=True)
        size = len(data) + 8
        while True:
            out = (lc.llama_token * size)()
            n = lc.llama_tokenize(self.vocab, data, len(data), out, size, add_bos, special)
            if n >= 0:
                return out[:n]
            size = -n

    def longest_token_bytes(self) -> int:
        """The most text one token stands for (special tokens included); found once, on the
        first prompt long enough to ask."""
        if self._longest is None:
            lengths = (len(self._render(t, special=True)) for t in range(self.n_vocab))
            self._longest = max(lengths, default=1) or 1
        return self._longest

    def head(self, text: str, tokens: int) -> str:
        """A start of ``text`` that holds at least its first ``tokens`` tokens (and a margin),
        so truncating a long text never needs tokenizing all of it.

        ``tokens`` times the longest token's length always holds enough, but that bound is
        loose (a vocabulary's longest token may be 50 bytes, a CJK character takes 3 byte
        tokens, and llama.cpp's tokenizer is quadratic on such runs): starts that double from
        ``_CHEAP_BYTES_PER_TOKEN`` characters a token are counted first, so the work is a few
        times the head's length, never the text's."""
        want = tokens + _HEAD_MARGIN
        most = want * self.longest_token_bytes()  # a token is at most this many characters
        keep = want * _CHEAP_BYTES_PER_TOKEN
        while keep < min(len(text), most):
            if len(self.tokenize(text[:keep], add_bos=False, special=True)) >= want:
                return text[:keep]
            keep *= 2
        return text[:most] if len(text) > most else text

    def piece(self, token: int) -> bytes:
        """The bytes a token adds to generated text (control tokens add none); cached."""
        piece = self._pieces.get(token)
        if piece is None:
            piece = self._pieces[token] = self._render(token, special=False)
        return piece

    def token_bytes(self, token: int) -> bytes:
        """The token as text, control tokens included (for logprobs and tokenizer views)."""
        return self._render(token, special=True)

    def _render(self, token: int, special: bool) -> bytes:
        buf = ctypes.create_string_buffer(64)
        n = lc.llama_token_to_piece(self.vocab, token, buf, 64, 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = lc.llama_token_to_piece(self.vocab, token, buf, -n, 0, special)
        return buf.raw[:n]

    def logits(self, ctx: lc.llama_context_p, row: int) -> npt.NDArray[np.float32]:
        """The logits of batch row ``row`` of ``ctx``'s last decode, as a numpy view (writable:
        the sampler adjusts them in place). Building a view costs 40 µs a token on a CPU
        whose caches the decode just emptied; llama.cpp keeps its output rows where they were
        from one decode to the next, so a view is made once per address and kept."""
        address = ctypes.cast(lc.llama_get_logits_ith(ctx, row), ctypes.c_void_p).value
        if not address:
            raise RuntimeError(f"llama.cpp has no logits for batch row {row}")
        view = self._logit_views.get(address)
        if view is None:
            if len(self._logit_views) >= _MOST_LOGIT_VIEWS:
                self._logit_views.clear()
            row_type = ctypes.c_float * self.n_vocab
            view = np.frombuffer(row_type.from_address(address), dtype=np.float32)
            self._logit_views[address] = view
        return view

    def special_tokens(self, texts: tuple[str, ...]) -> frozenset[int]:
        """The ids of those ``texts`` that are one token each (the others are not tokens)."""
        ids = (self.tokenize(text, add_bos=False, special=True) for text in texts)
        return frozenset(one[0] for one in ids if len(one) == 1)

    def is_eog(self, token: int) -> bool:
        return bool(lc.llama_vocab_is_eog(self.vocab, token))

    def eog_tokens(self) -> list[int]:
        if self._eog is None:
            self._eog = [t for t in range(self.n_vocab) if lc.llama_vocab_is_eog(self.vocab, t)]
        return self._eog

    def close(self) -> None:
        """Free the model; llama.cpp frees its adapters with it."""
        if self.handle:
            self._adapters.clear()
            lc.llama_model_free(self.handle)
            self.handle = None


def _check_gguf(path: Path) -> None:
    """Catch the common mistakes before llama.cpp does, with a clearer message."""
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except FileNotFoundError:
        raise LoadError(f"model file not found: {path}") from None
    except OSError as exc:
        raise LoadError(f"cannot read model file {path}: {exc.strerror}") from None
    if magic != _GGUF_MAGIC:
        raise LoadError(f"{path.name} is not a GGUF model file (it does not start with 'GGUF')")
