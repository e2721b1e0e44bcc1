"""Flash attention on or off, on the CPU, by head size: raw llama.cpp decode and prefill times.

The measurements behind ``daemon/runners/attention.py``: models of one shape (8 layers,
n_embd 1024, Q8_0) whose heads hold 64, 128 or 256 values, with and without grouped KV heads;
1 and 4 sequences, each holding 150 or 1,000 tokens; the runner's context settings (one KV
buffer per sequence, 2,048 cells each, batch 512). Prefill: one sequence's 1,000 tokens.

    python bench/flash_attention_cpu.py [--threads 2] [--steps 12] 2>/dev/null
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
from decode_scaling import fill_batch, median_step_seconds

from localllm.model_registry.tiny_gguf import write_tiny_model

SHAPES = [(16, 16), (16, 4), (8, 8), (8, 2), (4, 4), (4, 1)]  # (heads, KV heads), n_embd 1024
FLASH = {"on": lc.LLAMA_FLASH_ATTN_TYPE_ENABLED, "off": lc.LLAMA_FLASH_ATTN_TYPE_DISABLED}


def step_ms(
    model, sequences: int, held: int, flash: str, threads: int, steps: int
) -> tuple[float, float]:
    """Median time of a decode step advancing ``sequences`` sequences that hold ``held``, and
    the time it took to prefill the first sequence's ``held`` tokens."""
    params = lc.llama_context_default_params()
    params.n_ctx, params.n_seq_max = 2048 * sequences, sequences
    params.n_threads = params.n_threads_batch = threads
    params.n_batch = params.n_ubatch = 512
    params.kv_unified = False
    params.flash_attn_type = FLASH[flash]
    ctx = lc.llama_init_from_model(model, params)
    batch = lc.llama_batch_init(512, 0, 1)
    try:
        prefill = _prefill(ctx, batch, 0, held)  # the first sequence's is the one reported
        for seq in range(1, sequences):
            _prefill(ctx, batch, seq, held)
        step = median_step_seconds(ctx, batch, sequences, held, steps, warmup=2)
    finally:
        lc.llama_batch_free(batch)
        lc.llama_free(ctx)
    return step * 1000, prefill * 1000


def _prefill(ctx, batch, seq: int, held: int) -> float:
    """Seconds to read ``held`` tokens into sequence ``seq``, 512 at a time."""
    started = time.perf_counter()
    for start in range(0, held, 512):
        positions = range(start, min(held, start + 512))
        fill_batch(batch, [(100 + p % 50, p, seq, False) for p in positions])
        lc.llama_decode(ctx, batch)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    lc.llama_backend_init()
    cells = [(1, 150), (1, 1000), (4, 150), (4, 1000)]
    header = " | ".join(f"{n} seq, {held} held: on / off" for n, held in cells)
    print(f"| head size (heads / KV heads) | {header} | prefill 1,000: on / off |")
    print("| --- |" + " --- |" * (len(cells) + 1))
    with tempfile.TemporaryDirectory() as tmp:
        for heads, kv_heads in SHAPES:
            path = write_tiny_model(
                Path(tmp) / f"h{heads}-{kv_heads}.gguf",
                **{"n_layer": 8, "n_embd": 1024, "n_ff": 2816, "vocab_size": 32000},
                **{"n_head": heads, "n_head_kv": kv_heads, "file_type": "Q8_0"},
            )
            params = lc.llama_model_default_params()
            model = lc.llama_model_load_from_file(os.fsencode(path), params)
            row, prefills = [], None
            for sequences, held in cells:
                (on, fill_on), (off, fill_off) = (
                    step_ms(model, sequences, held, flash, args.threads, args.steps)
                    for flash in ("on", "off")
                )
                row.append(f"{on:.1f} / {off:.1f} ms ({on / off:.2f}x)")
                if (sequences, held) == (1, 1000):
                    prefills = f"{fill_on:.0f} / {fill_off:.0f} ms ({fill_on / fill_off:.2f}x)"
            row.append(prefills)
            lc.llama_model_free(model)
            print(
                f"| {1024 // heads} ({heads} / {kv_heads}) | " + " | ".join(row) + " |", flush=True
            )


if __name__ == "__main__":
    main()
