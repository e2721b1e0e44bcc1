"""Memory benchmark: the host-RAM prompt cache, and what each KV cache type costs and gives.

    python bench/bench_prompt_cache.py [--model PATH] [--threads 2] [--history 1200]
    python bench/bench_prompt_cache.py --disk [--threads 2] [--rounds 2]

Runs the real runner process (``daemon.runners.process``) on Gemma 3 270M Q4_K_M (the real
model tier, ``tests/support/real_model.py``) unless ``--model`` names another GGUF:

  1. five conversations over four slots (``num_parallel`` 4), each with a ~``--history``-token
     history; every first turn, then every second turn. The 5th conversation's second turn has
     lost its slot to the others: its time to first token with the host cache on vs off
     (target: at least 5x faster), and the prompt tokens it found cached.
  2. each KV cache type (f16, q8_0, q4_0): the runner's resident memory after load, the
     memory plan's caches (its kv and window kv parts), and single-stream tokens/s.

  3. ``--disk``: the prompt cache on disk, through the real daemon over HTTP, with Claude Code's
     recorded first request (``tests/agents/fixtures/claude.json``, ~11,700 tokens of system
     prompt and tools) sent to ``/v1/messages`` as Claude Code streams it (greedy, 8 tokens):
     time to first token of a cold read (model load included) with the cache off and on (a
     miss: each read starts with its own session line, so nothing is found; off and on
     alternate, ``--rounds`` each), then after ``localllm stop`` (unloaded, a fresh runner)
     and after a daemon restart, in the default and the deterministic mode (whose answer must
     be the cold one's); the file's bytes per prompt token.

Every measurement of a table comes from the same run, so the ratios hold on a busy machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

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


# -- the prompt cache on disk, through the daemon -------------------------------------------
CLAUDE = ROOT / "tests" / "agents" / "fixtures" / "claude.json"


def _claude_first(session: str) -> tuple[dict, dict]:
    """Claude Code's recorded first request (headers, body), greedy and 8 tokens long, its
    system prompt opened by ``session`` (a line of its own: another session finds nothing)."""
    (request,) = [r for r in json.loads(CLAUDE.read_text())["requests"] if r["kind"] == "first"]
    body = {**request["body"], "max_tokens": 8, "temperature": 0}
    system = [dict(block) for block in body["system"]]
    system[0]["text"] = f"{session}\n{system[0]['text']}" if session else system[0]["text"]
    return request["headers"], body | {"system": system}


def _first_token(url: str, model: str, request: tuple[dict, dict]) -> tuple[float, str, dict]:
    """Time to the first text of a streamed ``/v1/messages`` answer, the text, its usage."""
    from bench_vs_llama_server import HTTP

    headers, body = request
    text, usage, first = "", {}, None
    started = time.perf_counter()
    with HTTP.stream(
        "POST", f"{url}/v1/messages", json=body | {"model": model}, headers=headers
    ) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            if event["type"] == "content_block_delta" and event["delta"].get("text"):
                first = first or time.perf_counter()
                text += event["delta"]["text"]
            usage |= event.get("usage") or (event.get("message") or {}).get("usage") or {}
    return (first or time.perf_counter()) - started, text, usage


def _unload(url: str, model: str) -> None:
    """``localllm stop``: unloaded, and its runner gone (it writes what it holds first)."""
    from bench_vs_llama_server import HTTP

    HTTP.post(f"{url}/api/generate", json={"model": model, "keep_alive": 0}).raise_for_status()
    while HTTP.get(f"{url}/api/ps").json()["models"]:
        time.sleep(0.2)


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def _disk_rows(model: Path, args) -> str:
    from bench_serving import machine, stop
    from bench_vs_llama_server import HTTP, start_ours

    from localllm.model_registry.importer import ModelExtras, import_gguf
    from localllm.model_registry.store import Store
    from tests.support.model_writers.gemma3 import GEMMA_TEMPLATE

    work = Path(tempfile.mkdtemp(prefix="bench-disk-cache-"))
    store = Store(work / "store")
    for name, extra in (("bench", {}), ("bench-det", {"deterministic": True})):
        extras = ModelExtras(template=GEMMA_TEMPLATE, parameters=extra)
        import_gguf(store, name, model, extras=extras)
    start = lambda **env: start_ours(work, model, args.threads, 16384, parallel=4, **env)  # noqa: E731
    cold: dict[str, list[float]] = {"off": [], "on": []}
    found: dict[str, list[int]] = {"off": [], "on": []}  # prompt tokens a cold read found cached
    rows, per_token = [], []
    try:
        for r in range(args.rounds):
            for mode in ("off", "on") if r % 2 == 0 else ("on", "off"):
                proc, url = start(LOCALLLM_PROMPT_CACHE_GB="0" if mode == "off" else "8")
                try:
                    request = _claude_first(f"Session {r}{mode}.")
                    seconds, _, usage = _first_token(url, "bench", request)
                finally:
                    stop(proc)
                cold[mode].append(seconds)
                found[mode].append(usage.get("cache_read_input_tokens", 0))
                print(f"round {r} cache {mode}: cold first token {seconds:.2f} s, "
                      f"{found[mode][-1]} tokens cached", flush=True)  # fmt: skip
        for name in ("bench", "bench-det"):
            request = _claude_first("")
            proc, url = start(LOCALLLM_PROMPT_CACHE_GB="8")
            try:
                reads = [_first_token(url, name, request)]
                _unload(url, name)
                reads.append(_first_token(url, name, request))
                runs = [HTTP.get(f"{url}/api/ps").json()["models"][0]["prompt_cache"]]
            finally:
                stop(proc)
            proc, url = start(LOCALLLM_PROMPT_CACHE_GB="8")
            try:
                reads.append(_first_token(url, name, request))
                runs.append(HTTP.get(f"{url}/api/ps").json()["models"][0]["prompt_cache"])
            finally:
                stop(proc)
            usage = reads[0][2]
            prompt = usage["input_tokens"] + usage.get("cache_read_input_tokens", 0)
            for stored in (work / "data" / "prompt-cache").glob("*/*.kv"):
                per_token.append(stored.stat().st_size / prompt)
            rows.append((name, prompt, reads, runs))
            print(f"{name}: " + ", ".join(f"{t:.2f} s" for t, _, _ in reads), flush=True)
            shutil.rmtree(work / "data" / "prompt-cache", ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    off, on = statistics.median(cold["off"]), statistics.median(cold["on"])
    lines = [
        f"Machine: {machine()}. `python bench/bench_prompt_cache.py --disk --threads "
        f"{args.threads} --rounds {args.rounds}`, {model.name}, context 16384, 4 slots.",
        "",
        "| Claude Code's first request | time to first token | prompt tokens from disk |",
        "| --- | --- | --- |",
        f"| cold, cache off (median of {args.rounds}, load included) | {off:.2f} s "
        f"({_seconds(cold['off'])}) | {max(found['off'])} |",
        f"| cold, cache on: a miss (median of {args.rounds}) | {on:.2f} s "
        f"({_seconds(cold['on'])}; {on / off:.3f}x, target <= 1.03x) | {max(found['on'])} |",
    ]
    for name, prompt, reads, runs in rows:
        mode = "deterministic" if name == "bench-det" else "default"
        (first, text, usage), *warm = reads
        same = all(answer == text for _, answer, _ in warm)
        lines.append(
            f"| {mode}: cold ({prompt} prompt tokens) | {first:.2f} s | "
            f"{usage.get('cache_read_input_tokens', 0)} |"
        )
        after = ("`localllm stop`", "a daemon restart")
        for when, (seconds, _, _), run in zip(after, warm, runs, strict=True):
            lines.append(
                f"| {mode}: after {when} | {seconds:.2f} s ({first / seconds:.0f}x faster; "
                f"restore {run['restore_seconds']:.2f} s) | {run['tokens']} |"
            )
        lines.append(f"| {mode}: the same answer all three times | {'yes' if same else 'NO'} | |")
    lines += ["", f"Disk: {statistics.median(per_token) / 1024:.1f} KiB per prompt token."]
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--history", type=int, default=1200, help="words per history")
    parser.add_argument("--ctx", type=int, default=4096, help="context per slot")
    parser.add_argument("--disk", action="store_true", help="the prompt cache on disk only")
    parser.add_argument("--rounds", type=int, default=2, help="cold reads per mode (--disk)")
    args = parser.parse_args()
    if args.model is None:
        from tests.support.real_model import gemma_path

        args.model = gemma_path()
    if args.disk:
        print(_disk_rows(args.model, args))
        return
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
