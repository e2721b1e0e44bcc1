"""Sampling inside the decode (llama.cpp's backend samplers) against the host path (the
narrowing of ``daemon/runners/worker/candidates.py``), on this machine's backend: aggregate
tokens/s of the runner's engine for 1 and 4 streams, in this process.

``backend_sampling`` "auto" keeps whichever this measures faster on each backend: on a CPU
the host path, on a GPU that holds the whole model the graph (where the logits already are).

    python bench/backend_sampling.py MODEL.gguf [MODEL.gguf ...] [--threads 2] [--tokens 64]
        [--rounds 3] [--gpu-layers 0] 2>/dev/null
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import llama_cpp as lc

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import decode_apart  # noqa: E402

from daemon.runners.protocol import FrameWriter  # noqa: E402
from daemon.runners.types import RunnerSpec  # noqa: E402
from daemon.runners.worker.engine import Engine  # noqa: E402
from daemon.runners.worker.model import Model  # noqa: E402

WAYS = ("host", "backend")
# Ollama's defaults without penalties (the bench against llama-server samples so too)
SAMPLING = dict(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0)


def tokens_per_second(engine: Engine, out: FrameWriter, streams: int, tokens: int, run: int):
    """Every stream runs its ``tokens`` (end of generation never sampled)."""
    return decode_apart.tokens_per_second(
        engine, out, streams, tokens, run, ignore_eos=True, **SAMPLING
    )


def bench(path: Path, args: argparse.Namespace, out: FrameWriter) -> dict[int, dict[str, float]]:
    base = RunnerSpec(
        model_name="bench", model_paths=(str(path),), num_ctx=2048, num_parallel=4,
        num_threads=args.threads, num_batch=512, num_gpu_layers=args.gpu_layers, num_draft=0,
    )  # fmt: skip
    specs = {
        way: replace(base, backend_sampling="on" if way == "backend" else "off") for way in WAYS
    }
    model = Model.load(specs["host"])
    engines = {way: Engine(model, spec, args.threads, out) for way, spec in specs.items()}
    for engine in engines.values():
        engine.warm_up()
        tokens_per_second(engine, out, 4, 8, -1)  # every slot's chain attached once
    best: dict[int, dict[str, float]] = {}
    for streams in (1, 4):
        best[streams] = dict.fromkeys(WAYS, 0.0)
        for run in range(args.rounds):  # interleaved, so load changes hit both ways
            for way in WAYS if run % 2 == 0 else WAYS[::-1]:
                rate = tokens_per_second(engines[way], out, streams, args.tokens, run)
                best[streams][way] = max(best[streams][way], rate)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", type=Path, nargs="+")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gpu-layers", type=int, default=0, help="-1: all (a GPU build)")
    args = parser.parse_args()
    lc.llama_backend_init()
    load = " / ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"{args.threads} threads, {args.tokens} tokens per stream, best of {args.rounds} "
          f"rounds; load average before: {load}. Aggregate tokens/s:")  # fmt: skip
    print("| model | streams | host | backend | backend / host |")
    print("| --- | --- | ---: | ---: | ---: |")
    with tempfile.TemporaryFile() as sink:
        out = FrameWriter(sink.fileno())
        for path in args.models:
            for streams, rates in bench(path, args, out).items():
                host, backend = rates["host"], rates["backend"]
                print(f"| {path.name} | {streams} | {host:.1f} | {backend:.1f} "
                      f"| {backend / host:.2f}x |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
