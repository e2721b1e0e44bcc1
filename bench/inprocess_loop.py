"""The floor to compare the runner against: the smallest in-process llama.cpp decode loop.

One sequence, greedy sampling, llama-cpp-python's low-level API, no IPC, no batching logic.
The runner (one stream) should reach about 90% of its tokens/s, and a time to first token
within a few milliseconds of it.

    python bench/inprocess_loop.py MODEL.gguf [--tokens 128] [--threads 2] [--prompt TEXT]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import time
from dataclasses import asdict, dataclass

import llama_cpp as lc

__all__ = ["LoopResult", "run_inprocess"]


@dataclass(frozen=True)
class LoopResult:
    prompt_tokens: int
    completion_tokens: int
    first_token_seconds: float  # prompt decode + first sample, from tokenized prompt
    decode_tokens_per_second: float  # after the first token
    load_seconds: float
    text: str


def run_inprocess(
    model_path: str,
    prompt: str = "Hello world, this is a benchmark prompt.",
    max_tokens: int = 128,
    n_threads: int | None = None,
    n_ctx: int = 2048,
    n_batch: int = 512,
    warmup: bool = True,
) -> LoopResult:
    """Load ``model_path``, generate ``max_tokens`` greedy tokens, and time it."""
    n_threads = n_threads or os.cpu_count() or 1
    started = time.perf_counter()
    lc.llama_backend_init()
    mparams = lc.llama_model_default_params()
    mparams.n_gpu_layers = 0
    model = lc.llama_model_load_from_file(os.fsencode(model_path), mparams)
    if not model:
        raise RuntimeError(f"cannot load {model_path}")
    cparams = lc.llama_context_default_params()
    cparams.n_ctx, cparams.n_batch, cparams.n_ubatch = n_ctx, n_batch, n_batch
    cparams.n_threads = cparams.n_threads_batch = n_threads
    ctx = lc.llama_init_from_model(model, cparams)
    vocab = lc.llama_model_get_vocab(model)
    batch = lc.llama_batch_init(n_batch, 0, 1)
    sampler = lc.llama_sampler_chain_init(lc.llama_sampler_chain_default_params())
    lc.llama_sampler_chain_add(sampler, lc.llama_sampler_init_greedy())
    try:
        if warmup:
            _decode(ctx, batch, [lc.llama_vocab_bos(vocab)], 0)
            lc.llama_memory_clear(lc.llama_get_memory(ctx), True)
        load_seconds = time.perf_counter() - started
        tokens = _tokenize(vocab, prompt)
        t0 = time.perf_counter()
        for i in range(0, len(tokens), n_batch):
            _decode(ctx, batch, tokens[i : i + n_batch], i)
        token = lc.llama_sampler_sample(sampler, ctx, -1)
        t1 = time.perf_counter()
        out, pos = [token], len(tokens)
        while len(out) < max_tokens and not lc.llama_vocab_is_eog(vocab, token):
            _decode(ctx, batch, [token], pos)
            pos += 1
            token = lc.llama_sampler_sample(sampler, ctx, -1)
            out.append(token)
        t2 = time.perf_counter()
    finally:
        lc.llama_sampler_free(sampler)
        lc.llama_batch_free(batch)
        lc.llama_free(ctx)
        lc.llama_model_free(model)
    rate = (len(out) - 1) / (t2 - t1) if len(out) > 1 else 0.0
    text = b"".join(_piece(vocab, t) for t in out).decode(errors="replace")
    return LoopResult(len(tokens), len(out), t1 - t0, rate, load_seconds, text)


def _decode(ctx, batch, tokens: list[int], start: int) -> None:
    for i, token in enumerate(tokens):
        batch.token[i] = token
        batch.pos[i] = start + i
        batch.n_seq_id[i] = 1
        batch.seq_id[i][0] = 0
        batch.logits[i] = i == len(tokens) - 1
    batch.n_tokens = len(tokens)
    if lc.llama_decode(ctx, batch) != 0:
        raise RuntimeError("llama_decode failed")


def _tokenize(vocab, text: str) -> list[int]:
    data = text.encode()
    out = (lc.llama_token * (len(data) + 8))()
    n = lc.llama_tokenize(vocab, data, len(data), out, len(out), True, True)
    return out[:n]


def _piece(vocab, token: int) -> bytes:
    buf = ctypes.create_string_buffer(64)
    n = lc.llama_token_to_piece(vocab, token, buf, 64, 0, False)
    return buf.raw[: max(n, 0)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--prompt", default="Hello world, this is a benchmark prompt.")
    parser.add_argument("--ctx", type=int, default=2048)
    args = parser.parse_args()
    result = run_inprocess(args.model, args.prompt, args.tokens, args.threads, args.ctx)
    print(json.dumps({k: v for k, v in asdict(result).items() if k != "text"}, indent=2))


if __name__ == "__main__":
    main()
