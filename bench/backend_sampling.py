"""Sampling inside the decode (llama.cpp's backend samplers) against the host path (the
narrowing of ``daemon/runners/worker/candidates.py``), on this machine's backend: aggregate
tokens/s of the runner's engine for 1 and 4 streams, in this process, and the CPU time it
spent per token (all its threads: on a machine other programs load, the steadier number).

``backend_sampling`` "auto" keeps whichever this measures faster on each backend: on a CPU
the host path, on a GPU that holds the whole model the graph (where the logits already are).

    python bench/backend_sampling.py MODEL.gguf [MODEL.gguf ...] [--threads 2] [--tokens 64]
        [--rounds 3] [--gpu-layers 0] 2>/dev/null
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import llama_cpp as lc

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import decode_apart  # noqa: E402

from localllm.daemon.runners.protocol import FrameWriter  # noqa: E402
from localllm.daemon.runners.types import RunnerSpec  # noqa: E402
from localllm.daemon.runners.worker.engine import Engine  # noqa: E402
from localllm.daemon.runners.worker.model import Model  # noqa: E402

WAYS = ("host", "backend")
# Ollama's defaults without penalties (the bench against llama-server samples so too)
SAMPLING = dict(temperature=0.8, top_k=40, top_p=0.95, min_p=0.05, repeat_penalty=1.0)


def measure(engine: Engine, out: FrameWriter, streams: int, tokens: int, run: int):
    """Aggregate tokens/s and CPU milliseconds per token; every stream runs its ``tokens``
    (end of generation never sampled)."""
    cpu = time.process_time()
    rate = decode_apart.tokens_per_second(
        engine, out, streams, tokens, run, ignore_eos=True, **SAMPLING
    )
    return rate, (time.process_time() - cpu) * 1e3 / (streams * tokens)


def bench(path: Path, args: argparse.Namespace, out: FrameWriter) -> dict[int, dict[str, tuple]]:
    """Per number of streams and way: the best tokens/s and the least CPU ms per token."""
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
        measure(engine, out, 4, 8, -1)  # every slot's chain attached once
    best: dict[int, dict[str, tuple]] = {}
    for streams in (1, 4):
        best[streams] = dict.fromkeys(WAYS, (0.0, float("inf")))
        for run in range(args.rounds):  # interleaved, so load changes hit both ways
            for way in WAYS if run % 2 == 0 else WAYS[::-1]:
                rate, cpu = measure(engines[way], out, streams, args.tokens, run)
                old_rate, old_cpu = best[streams][way]
                best[streams][way] = (max(old_rate, rate), min(old_cpu, cpu))
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
          f"rounds; load average before: {load}.")  # fmt: skip
    print("| model | streams | tokens/s host | backend | backend / host "
          "| CPU ms/token host | backend | backend / host |")  # fmt: skip
    print("| --- | --- |" + " ---: |" * 6)
    with tempfile.TemporaryFile() as sink:
        out = FrameWriter(sink.fileno())
        for path in args.models:
            for streams, ways in bench(path, args, out).items():
                (host, host_cpu), (backend, backend_cpu) = ways["host"], ways["backend"]
                print(f"| {path.name} | {streams} | {host:.1f} | {backend:.1f} "
                      f"| {backend / host:.2f}x | {host_cpu:.1f} | {backend_cpu:.1f} "
                      f"| {backend_cpu / host_cpu:.2f}x |", flush=True)  # fmt: skip
        load = " / ".join(Path("/proc/loadavg").read_text().split()[:3])
        print(f"Load average after: {load}.")


if __name__ == "__main__":
    main()
