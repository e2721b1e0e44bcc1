"""The runner's engine with its streams' tokens decoded in one batch, one at a time, or as its
decode plan chooses: aggregate tokens/s for 1, 2 and 4 streams, in this process.

Shows what ``daemon/runners/worker/decode_plan.py`` buys where a build batches badly (Q8_0 on
some CPUs) and that it costs nothing where batching wins (F16, Q4_K_M).

    python bench/decode_apart.py MODEL.gguf [--threads 2] [--tokens 64] 2>/dev/null
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import llama_cpp as lc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from localllm.daemon.runners.protocol import FrameWriter  # noqa: E402
from localllm.daemon.runners.types import GenerateCall, RunnerSpec, SamplingParams  # noqa: E402
from localllm.daemon.runners.worker.decode_plan import DecodePlan  # noqa: E402
from localllm.daemon.runners.worker.engine import Engine  # noqa: E402
from localllm.daemon.runners.worker.model import Model  # noqa: E402


class FixedPlan(DecodePlan):
    """Always batched, or always one at a time."""

    def __init__(self, apart: bool):
        super().__init__()
        self.apart = apart

    def one_at_a_time(self, count: int) -> bool:
        return self.apart and count > 1


def tokens_per_second(
    engine: Engine, out: FrameWriter, streams: int, tokens: int, run: int, **sampling
) -> float:
    """Aggregate tokens/s of ``streams`` requests run together (``sampling``: more
    ``SamplingParams`` fields; temperature 0.8 unless set)."""
    sampling = {"temperature": 0.8} | sampling
    for rid in range(1, streams + 1):
        params = SamplingParams(seed=rid, max_tokens=tokens, **sampling)
        engine.submit(rid, GenerateCall(f"{run} {rid} Hello world, this is", params))
    started = time.perf_counter()
    while engine.busy:
        engine.step()
        out.flush()
    return streams * tokens / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    lc.llama_backend_init()
    spec = RunnerSpec(
        model_name="bench", model_paths=(str(args.model),), num_ctx=2048, num_parallel=4,
        num_threads=args.threads, num_batch=512,
    )  # fmt: skip
    model = Model.load(spec)
    plans = {"batched": lambda: FixedPlan(False), "apart": lambda: FixedPlan(True)}
    plans["plan"] = DecodePlan
    print(f"{args.model.name}, {args.threads} threads, {args.tokens} tokens per stream, best of "
          f"{args.rounds}: aggregate tokens/s")  # fmt: skip
    print("| streams | " + " | ".join(plans) + " |")
    print("| --- |" + " ---: |" * len(plans))
    with tempfile.TemporaryFile() as sink:
        out = FrameWriter(sink.fileno())
        engines = {name: Engine(model, spec, args.threads, out) for name in plans}
        for name, engine in engines.items():
            engine.plan = plans[name]()
            engine.warm_up()
        for streams in (1, 2, 4):
            best = dict.fromkeys(plans, 0.0)
            for run in range(args.rounds):  # interleaved, so load changes hit every way
                for name, engine in engines.items():
                    rate = tokens_per_second(engine, out, streams, args.tokens, run)
                    best[name] = max(best[name], rate)
            print(f"| {streams} | " + " | ".join(f"{best[n]:.1f}" for n in plans) + " |")


if __name__ == "__main__":
    main()
