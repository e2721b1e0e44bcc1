"""Memory benchmark: the host-RAM prompt cache, and what each KV cache type costs and gives.

    python bench/bench_prompt_cache.py [--model PATH] [--threads 2] [--history 1200]

Runs the real runner process (``daemon.runners.process``) on Gemma 3 270M Q4_K_M (the real
model tier, ``tests/support/real_model.py``) unless ``--model`` names another GGUF:

  1. five conversations over four slots (``num_parallel`` 4), each with a ~``--history``-token
     history; every first turn, then every second turn. The 5th conversation's second turn has
     lost its slot to the others: its time to first token with the host cache on vs off
     (target: at least 5x faster), and the prompt tokens it found cached.
  2. each KV cache type (f16, q8_0, q4_0): the runner's resident memory after load, the
     memory plan's caches (its kv and window kv parts), and single-stream tokens/s.

Every measurement of a table comes from the same run, so the ratios hold on a busy machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from localllm.daemon.runners.process import RunnerProcess  # noqa: E402
from localllm.daemon.runners.types import DoneEvent, GenerateCall, RunnerSpec, SamplingParams  # noqa: E402
from localllm.daemon.scheduler.memory_plan import plan_memory, plan_settings  # noqa: E402
from localllm.model_registry.model_shape import ModelShape, read_model_shape  # noqa: E402

GREEDY = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=16)
WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "while",
    "seven",
    "wizards",
    "quietly",
    "hum",
]
MIB = 1 << 20


def _history(seed: int, words: int) -> str:
    rng = random.Random(seed)
    text = " ".join(rng.choice(WORDS) for _ in range(words))
    return f"<start_of_turn>user\nRemember this text: {text}<end_of_turn>\n"


def _turn(history: str, question: str) -> str:
    return f"{history}<start_of_turn>user\n{question}<end_of_turn>\n<start_of_turn>model\n"


async def _generate(runner: RunnerProcess, prompt: str, params=GREEDY) -> tuple[str, DoneEvent]:
    text, done = [], None
    async for event in runner.generate(GenerateCall(prompt, params, add_bos=True)):
        if isinstance(event, DoneEvent):
            done = event
        else:
            text.append(event.text)
    return "".join(text), done


async def _interleaved(spec: RunnerSpec, history_words: int) -> tuple[DoneEvent, str]:
    """First turns of five conversations, then second turns; the 5th's second turn."""
    runner = await RunnerProcess.start(spec)
    try:
        histories = [_history(seed, history_words) for seed in range(5)]
        for i, history in enumerate(histories):
            prompt = _turn(history, "What is the third word?")
            reply, _ = await _generate(runner, prompt)
            histories[i] = prompt + reply + "<end_of_turn>\n"
        last = None
        for history in histories:
            last = await _generate(runner, _turn(history, "And the fifth word?"))
        return last[1], last[0]
    finally:
        await runner.stop()


async def _kv_type(spec: RunnerSpec, kind: str, shape: ModelShape) -> dict:
    flash = "on" if kind != "f16" else "auto"
    spec = replace(spec, kv_cache_type=kind, flash_attention=flash)
    runner = await RunnerProcess.start(spec)
    try:
        params = replace(GREEDY, max_tokens=96, ignore_eos=True)
        await _generate(runner, _turn("", "Write a story."), replace(params, max_tokens=8))
        _, done = await _generate(runner, _turn("", "Write a long story about a fox."), params)
        return {
            "type": kind,
            "rss": runner.info.memory_bytes,
            "kv": _planned_cache(shape, spec),
            "tps": done.completion_tokens / done.generation_seconds,
        }
    finally:
        await runner.stop()


def _planned_cache(shape: ModelShape, spec: RunnerSpec) -> int:
    """The memory plan's K and V caches for the runner ``spec`` starts (full-attention and
    sliding-window layers, every slot)."""
    plan = plan_memory(shape, plan_settings(spec, shape))
    return sum(plan.kind_bytes(kind) for kind in ("kv", "window kv", "recurrent"))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--history", type=int, default=1200, help="words per history")
    parser.add_argument("--ctx", type=int, default=4096, help="context per slot")
    args = parser.parse_args()
    if args.model is None:
        from tests.support.real_model import gemma_path

        args.model = gemma_path()
    base = RunnerSpec(
        model_name=args.model.name,
        model_paths=(str(args.model),),
        num_ctx=args.ctx,
        num_parallel=4,
        num_threads=args.threads,
    )
    print(f"model {args.model.name}, {args.threads} threads, load {os.getloadavg()[0]:.2f}")
    warm, warm_text = await _interleaved(replace(base, host_cache_bytes=1 << 30), args.history)
    cold, cold_text = await _interleaved(replace(base, host_cache_bytes=0), args.history)
    cached = warm.prompt_tokens - warm.prompt_evaluated
    speedup = cold.first_token_seconds / warm.first_token_seconds
    print("| measurement | host cache on | off | result | target |")
    print("| --- | --- | --- | --- | --- |")
    print(
        f"| 5th of 5 conversations, 2nd turn ({warm.prompt_tokens} prompt tokens): time to "
        f"first token, ms | {warm.first_token_seconds * 1000:.1f} | "
        f"{cold.first_token_seconds * 1000:.1f} | {speedup:.1f}x faster | >= 5x |"
    )
    print(
        f"| prompt tokens found cached | {cached} | "
        f"{cold.prompt_tokens - cold.prompt_evaluated} | same answer: "
        f"{'yes' if warm_text == cold_text else 'NO'} | |"
    )
    shape = read_model_shape(args.model)
    rows = [await _kv_type(base, kind, shape) for kind in ("f16", "q8_0", "q4_0")]
    print(f"\nKV cache types, {args.ctx} tokens x 4 slots, load {os.getloadavg()[0]:.2f}")
    print("| KV cache | planned KV, MiB | runner RSS, MiB | tokens/s (1 stream, 96 tokens) |")
    print("| --- | --- | --- | --- |")
    for row in rows:
        print(
            f"| {row['type']} | {row['kv'] / MIB:.0f} | {row['rss'] / MIB:.0f} | {row['tps']:.1f} |"
        )


if __name__ == "__main__":
    asyncio.run(main())
