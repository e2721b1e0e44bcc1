"""The ceiling for batching on this machine: raw llama.cpp decode time per step against the
number of sequences decoded together, with no runner, daemon or Python sampling in the way.

If one ``llama_decode`` of 4 tokens (one per sequence) costs as much as 4 decodes of one token,
no server can make 4 streams faster than 1 on that model and build; this script shows whether
that is the case, for Q8_0, F16 and Q4_K_M models of the same shape.

    python bench/decode_scaling.py [--threads 2] [--steps 20] 2>/dev/null  # logs go to stderr
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import llama_cpp as lc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from localllm.daemon.runners.worker.quantize import quantize
from localllm.model_registry.tiny_gguf import write_tiny_model

BENCH_SHAPE = {"n_layer": 16, "n_embd": 1024, "n_head": 16, "n_ff": 2816, "vocab_size": 32000}


def step_seconds(model_path: Path, sequences: int, threads: int, steps: int) -> float:
    """Median time of one decode step that advances ``sequences`` sequences by one token."""
    model = lc.llama_model_load_from_file(os.fsencode(model_path), lc.llama_model_default_params())
    params = lc.llama_context_default_params()
    params.n_ctx, params.n_seq_max = 256 * sequences, sequences
    params.n_threads = params.n_threads_batch = threads
    params.kv_unified = False  # the runner's setting
    ctx = lc.llama_init_from_model(model, params)
    batch = lc.llama_batch_init(sequences, 0, sequences)
    try:
        return median_step_seconds(ctx, batch, sequences, 0, steps, warmup=3)
    finally:
        lc.llama_batch_free(batch)
        lc.llama_free(ctx)
        lc.llama_model_free(model)


def median_step_seconds(
    ctx, batch, sequences: int, position: int, steps: int, warmup: int
) -> float:
    """Median time of a decode that advances sequences 0..``sequences``-1 by one token each,
    from ``position`` on, the first ``warmup`` steps left out."""
    times = []
    for step in range(steps):
        fill_batch(batch, [(100 + seq, position + step, seq, True) for seq in range(sequences)])
        started = time.perf_counter()
        lc.llama_decode(ctx, batch)
        times.append(time.perf_counter() - started)
    warm = sorted(times[warmup:])
    return warm[len(warm) // 2]


def fill_batch(batch, rows: list[tuple[int, int, int, bool]]) -> None:
    """Put ``(token, position, sequence, logits)`` rows into a ``llama_batch``."""
    batch.n_tokens = len(rows)
    for i, (token, pos, seq, logits) in enumerate(rows):
        batch.token[i], batch.pos[i], batch.n_seq_id[i] = token, pos, 1
        batch.seq_id[i][0], batch.logits[i] = seq, logits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    lc.llama_backend_init()
    print(f"threads={args.threads}; {lc.llama_print_system_info().decode().strip()}")
    print("| model | sequences | ms per step | tokens/s | vs 1 sequence |")
    print("| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for file_type in ("Q8_0", "F16", "Q4_K_M"):
            path = Path(tmp) / f"{file_type}.gguf"
            if file_type == "Q4_K_M":  # the quantization most users pull
                quantize(Path(tmp) / "F16.gguf", path, file_type, args.threads)
            else:
                write_tiny_model(path, file_type=file_type, **BENCH_SHAPE)
            single = None
            for sequences in (1, 2, 4, 8):
                seconds = step_seconds(path, sequences, args.threads, args.steps)
                rate = sequences / seconds
                single = single or rate
                cells = (file_type, sequences, f"{seconds * 1000:.1f}", f"{rate:.1f}")
                print("| {} | {} | {} | {} |".format(*cells), f"{rate / single:.2f}x |")


if __name__ == "__main__":
    main()
