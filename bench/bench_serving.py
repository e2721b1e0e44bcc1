"""Serving benchmark: the daemon's HTTP API against an in-process llama.cpp loop and against
``python -m llama_cpp.server``, on one generated ~250M-parameter Q8_0 model, same threads.

    python bench/bench_serving.py [--model PATH] [--threads N] [--tokens 128] [--write]

Measures, in one run:
  1. one stream through the HTTP API vs the minimal in-process loop (tokens/s; target >= 90%)
  2. time to first token for a short prompt, API vs loop (target: within 15 ms)
  3. 4 concurrent streams vs 1 stream, aggregate tokens/s (target >= 1.2x, every answer complete);
     2 streams vs 1 as well
  4. 4 concurrent clients, the daemon vs llama_cpp.server, completed tokens/s (target >= 3x)
  5. the second turn of a ~1,500-token conversation: time to first token with the history
     cached vs the same prompt cold (target >= 5x faster)
``--write`` puts the table into bench/RESULTS.md under "## Serving".
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

# One kept-alive client, as real clients hold: building an httpx.Client costs ~30 ms here
# (its TLS context), which would otherwise be counted in every time to first token.
_HTTP = httpx.Client(timeout=600, limits=httpx.Limits(max_connections=16))
SHORT_PROMPT = "Hello world, this is a benchmark prompt."
WORDS = [
    "the",
    "and",
    "to",
    "of",
    "in",
    "is",
    "it",
    "you",
    "that",
    "for",
    "on",
    "with",
    "are",
    "this",
    "be",
    "as",
    "have",
    "not",
    "was",
    "at",
    "or",
    "but",
]


@dataclass
class Stream:
    ttft: float  # request sent -> first token received
    tokens: int
    decode_rate: float  # tokens/s after the first token
    finish: str | None
    started: float
    ended: float


# -- processes --------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


def start_daemon(store: Path, threads: int, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALLLM_")}
    env |= {"LOCALLLM_MODELS": str(store), "LOCALLLM_LOGS": str(log.parent)}
    env |= {"LOCALLLM_NUM_THREADS": str(threads), "LOCALLLM_NUM_PARALLEL": "4"}
    command = [sys.executable, "-m", "localllm.daemon", "serve", "--host", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT
    )
    url = f"http://127.0.0.1:{port}"
    wait_http(url + "/", proc)
    return proc, url


def start_llama_server(model: Path, threads: int, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--port",
        str(port),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        "--n_ctx",
        "2048",
    ]
    proc = subprocess.Popen(command, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_http(url + "/v1/models", proc)
    return proc, url


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()


# -- clients ----------------------------------------------------------------------------------
def stream(url: str, body: dict, path: str = "/v1/completions") -> Stream:
    """Send one streaming request; time every token chunk as it arrives."""
    times, finish = [], None
    started = time.perf_counter()
    try:
        with _HTTP.stream("POST", url + path, json={**body, "stream": True}) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                data = json.loads(line[6:])
                if "error" in data:
                    break
                for choice in data.get("choices") or ():
                    text = choice.get("text") or (choice.get("delta") or {}).get("content")
                    if text:
                        times.append(time.perf_counter())
                    finish = choice.get("finish_reason") or finish
    except httpx.TransportError:  # llama_cpp.server drops a stream when another request comes
        finish = "cut off"
    ended = time.perf_counter()
    ttft = times[0] - started if times else float("nan")
    rate = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else 0.0
    return Stream(ttft, len(times), rate, finish, started, ended)


def completion(prompt: str, tokens: int, seed: int = 0, **extra) -> dict:
    return {
        "model": "bench",
        "prompt": prompt,
        "max_tokens": tokens,
        "seed": seed,
        "temperature": 0.0,
        "repeat_penalty": 1.0,
        **extra,
    }


def concurrent(url: str, bodies: list[dict]) -> tuple[list[Stream], float]:
    with ThreadPoolExecutor(len(bodies)) as pool:
        results = list(pool.map(lambda body: stream(url, body), bodies))
    wall = max(r.ended for r in results) - min(r.started for r in results)
    return results, sum(r.tokens for r in results) / wall


# -- the measurements --------------------------------------------------------------------------
def inprocess_once(model: Path, threads: int, tokens: int, prompt: str) -> dict:
    """The floor: ``bench/inprocess_loop.py`` in its own process (llama.cpp logs discarded)."""
    command = [
        sys.executable,
        str(ROOT / "bench" / "inprocess_loop.py"),
        str(model),
        "--tokens",
        str(tokens),
        "--threads",
        str(threads),
        "--prompt",
        prompt,
    ]
    return json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


def bench_single(url: str, model: Path, threads: int, tokens: int, trials: int) -> dict:
    """One stream, API vs loop, interleaved so both see the same machine load."""
    stream(url, completion("warm up", 4))  # loads the model
    loop_rates, loop_ttfts, api_rates, api_ttfts = [], [], [], []
    for i in range(trials):
        prompt = f"{i} {SHORT_PROMPT}"  # a new first token: no prefix-cache help
        loop = inprocess_once(model, threads, tokens, prompt)
        loop_rates.append(loop["decode_tokens_per_second"])
        loop_ttfts.append(loop["first_token_seconds"])
        api = stream(url, completion(prompt, tokens))
        api_rates.append(api.decode_rate)
        api_ttfts.append(
            min(stream(url, completion(f"t{i}{j} {SHORT_PROMPT}", 1)).ttft for j in range(3))
        )
    return {
        "loop_rate": max(loop_rates),
        "api_rate": max(api_rates),
        "loop_rate_median": statistics.median(loop_rates),
        "api_rate_median": statistics.median(api_rates),
        "loop_ttft": min(loop_ttfts),
        "api_ttft": min(api_ttfts),
        "loop_ttft_median": statistics.median(loop_ttfts),
        "api_ttft_median": statistics.median(api_ttfts),
    }


def bench_four(url: str, tokens: int, trials: int) -> dict:
    """4 and 2 concurrent streams (sampled, different seeds) vs 1, interleaved: aggregate
    tokens/s, best of ``trials``."""
    best, complete = {1: 0.0, 2: 0.0, 4: 0.0}, True
    for t in range(trials):
        for count in best:
            bodies = [
                completion(f"{t}{i} {SHORT_PROMPT}", tokens, seed=i, temperature=0.8)
                for i in range(count)
            ]
            results, aggregate = concurrent(url, bodies)
            complete &= all(r.tokens == tokens and r.finish == "length" for r in results)
            best[count] = max(best[count], aggregate)
    return {
        "four_aggregate": best[4],
        "two_aggregate": best[2],
        "single_aggregate": best[1],
        "four_complete": complete,
    }


def bench_llama_server(model: Path, threads: int, tokens: int, trials: int, log: Path) -> dict:
    """The same 4 concurrent clients against llama_cpp.server: completed tokens per second."""
    proc, url = start_llama_server(model, threads, log)
    best, counts = 0.0, []
    try:
        stream(url, {**completion("warm up", 4), "model": str(model)})
        for t in range(trials):
            bodies = [
                {
                    **completion(f"{t}{i} {SHORT_PROMPT}", tokens, i, temperature=0.8),
                    "model": str(model),
                }
                for i in range(4)
            ]
            results, aggregate = concurrent(url, bodies)
            if aggregate > best:
                best, counts = aggregate, [r.tokens for r in results]
    finally:
        stop(proc)
    return {"four_aggregate": best, "tokens": counts}


def conversation(turn_tokens: int) -> list[dict]:
    filler = " ".join(WORDS[i % len(WORDS)] for i in range(turn_tokens))
    return [
        {"role": "system", "content": "You are a helpful assistant. " + filler},
        {"role": "user", "content": "Please summarise everything above."},
    ]


def bench_prefix(url: str) -> dict:
    history = conversation(1400)
    first = httpx.post(
        url + "/v1/chat/completions",
        timeout=600,
        json={"model": "bench", "messages": history, "max_tokens": 32, "temperature": 0.0},
    ).json()
    history += [
        {"role": "assistant", "content": first["choices"][0]["message"]["content"]},
        {"role": "user", "content": "And in one word?"},
    ]
    body = {"model": "bench", "messages": history, "max_tokens": 4, "temperature": 0.0}
    warm = stream(url, body, "/v1/chat/completions")
    # unload (keep_alive 0), reload with an unrelated prompt, then the same second turn cold
    stream(url, {**completion("bye", 1), "keep_alive": 0})
    deadline = time.monotonic() + 30
    while "localllm_models_loaded 1.0" in httpx.get(url + "/metrics").text:
        if time.monotonic() > deadline:
            raise RuntimeError("the model did not unload")
        time.sleep(0.1)
    stream(url, completion("reload", 1))
    cold = stream(url, body, "/v1/chat/completions")
    return {"prompt_tokens": first["usage"]["prompt_tokens"], "warm": warm.ttft, "cold": cold.ttft}


# -- report -----------------------------------------------------------------------------------
def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = int(Path("/proc/meminfo").read_text().split()[1]) / (1 << 20)
    except OSError:
        mem = float("nan")
    system = f"{platform.system()} {platform.release()}"
    return f"{os.cpu_count()} CPUs ({cpu}), {mem:.1f} GiB RAM, {system}"


def table(ours: dict, server: dict | None, prefix: dict) -> str:
    rate, loop = ours["api_rate"], ours["loop_rate"]
    rows = [
        (
            "1 stream tokens/s: API vs in-process loop (best; median)",
            f"{rate:.1f} vs {loop:.1f} "
            f"({ours['api_rate_median']:.1f} vs {ours['loop_rate_median']:.1f})",
            f"{rate / loop:.0%}",
            ">= 90%",
        ),
        (
            "TTFT short prompt: API (client-side) vs loop, ms (best; median)",
            f"{ours['api_ttft'] * 1e3:.1f} vs {ours['loop_ttft'] * 1e3:.1f} "
            f"({ours['api_ttft_median'] * 1e3:.1f} vs {ours['loop_ttft_median'] * 1e3:.1f})",
            f"{(ours['api_ttft'] - ours['loop_ttft']) * 1e3:+.1f} ms",
            "<= +15 ms",
        ),
        (
            "aggregate tokens/s: 4 streams vs 1 stream",
            f"{ours['four_aggregate']:.1f} vs {ours['single_aggregate']:.1f}",
            f"{ours['four_aggregate'] / ours['single_aggregate']:.2f}x"
            + ("" if ours["four_complete"] else " (INCOMPLETE)"),
            ">= 1.2x",
        ),
        (
            "aggregate tokens/s: 2 streams vs 1 stream",
            f"{ours['two_aggregate']:.1f} vs {ours['single_aggregate']:.1f}",
            f"{ours['two_aggregate'] / ours['single_aggregate']:.2f}x",
            "(none)",
        ),
    ]
    if server:
        rows.append(
            (
                "4 clients completed tokens/s: localllm vs llama_cpp.server",
                f"{ours['four_aggregate']:.1f} vs {server['four_aggregate']:.1f} "
                f"(its tokens per client: {server['tokens']})",
                f"{ours['four_aggregate'] / max(server['four_aggregate'], 1e-9):.1f}x",
                ">= 3x",
            )
        )
    rows.append(
        (
            f"2nd turn TTFT, {prefix['prompt_tokens']}-token history: cached vs cold, ms",
            f"{prefix['warm'] * 1e3:.1f} vs {prefix['cold'] * 1e3:.1f}",
            f"{prefix['cold'] / prefix['warm']:.1f}x faster",
            ">= 5x",
        )
    )
    lines = ["| measurement | values | result | target |", "| --- | --- | --- | --- |"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    return "\n".join(lines)


def write_results(text: str) -> None:
    path = ROOT / "bench" / "RESULTS.md"
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    head, marker, rest = old.partition("\n## Serving\n")
    tail = ""
    if marker and "\n## " in rest:
        tail = "\n## " + rest.split("\n## ", 1)[1]
    path.write_text(head.rstrip() + "\n\n## Serving\n\n" + text.strip() + "\n" + tail)


def describe(model: Path) -> str:
    """What the model is, read from its own metadata (a ``--model`` may be any GGUF)."""
    from localllm.model_registry.gguf_info import read_gguf_info

    info = read_gguf_info(model)
    return (
        f"{info.architecture}, {info.block_count} layers, n_embd {info.embedding_length}, "
        f"{info.vocab_size} vocab, {info.parameter_size} parameters, {info.file_type}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a GGUF to use (default: generate one)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--skip-llama-server", action="store_true")
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    from localllm.model_registry.importer import import_gguf
    from localllm.model_registry.store import Store
    from localllm.model_registry.tiny_gguf import write_tiny_model

    work = Path(tempfile.mkdtemp(prefix="bench-serving-"))
    model = args.model or write_tiny_model(
        work / "bench-250m-q8.gguf",
        n_layer=16,
        n_embd=1024,
        n_head=16,
        n_ff=2816,
        vocab_size=32000,
        file_type="Q8_0",
    )
    import_gguf(Store(work / "store"), "bench", model)
    print(
        f"model {model} ({model.stat().st_size / 1e6:.0f} MB), {args.threads} threads", flush=True
    )
    proc, url = start_daemon(work / "store", args.threads, work / "logs" / "daemon.log")
    try:
        ours = bench_single(url, model, args.threads, args.tokens, args.trials)
        ours |= bench_four(url, args.tokens, args.trials)
        print("localllm", ours, flush=True)
        prefix = bench_prefix(url)
        print("prefix reuse", prefix, flush=True)
    finally:
        stop(proc)
    server = None
    if not args.skip_llama_server:
        server = bench_llama_server(
            model, args.threads, args.tokens, args.trials, work / "llama-server.log"
        )
        print("llama_cpp.server", server, flush=True)
    command = "python bench/bench_serving.py " + " ".join(sys.argv[1:])
    report = (
        f"Machine: {machine()}.  \nModel: {describe(model)} "
        f"({model.stat().st_size / 1e6:.0f} MB); {args.threads} threads for "
        f"every engine; {args.tokens} tokens per stream, greedy for single streams.  \n"
        f"Trials are interleaved; throughput is the best of {args.trials} (median in brackets), "
        "since other processes share the machine.  \n"
        f"Command: `{command.strip()}`\n\n" + table(ours, server, prefix)
    )
    print("\n" + report)
    if args.write:
        write_results(report)


if __name__ == "__main__":
    main()
