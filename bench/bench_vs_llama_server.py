"""Our daemon against llama.cpp's own ``llama-server``, built from the same vendored llama.cpp
(bench/llama_server_build.py), both on 2 threads with 4 parallel slots.

    python bench/bench_vs_llama_server.py [--rounds 5] [--tokens 128] [--threads 2]
        [--models gemma,tiny] [--cache-dir DIR] [--write]

Both servers get the same raw prompts over ``/v1/completions`` (streaming; no chat template),
the same sampling (temperature, top_k, top_p, min_p, seed; repeat/presence/frequency penalties
off) and a -100 ``logit_bias`` on every end-of-generation token, so every stream runs its full
``--tokens``. Per model and per concurrency (1 stream, 4 streams) it measures aggregate
completion tokens/s (all tokens / wall time from the first request to the last token) and the
time to first token (client side, median over the streams of a round). The two servers take
turns, in alternating order, over ``--rounds`` rounds; the table shows best and median, and
ours/llama-server. ``--write`` replaces "## Against llama-server" in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_serving import describe, free_port, machine, stop, wait_http  # noqa: E402
from llama_server_build import build, pinned_version  # noqa: E402

# One client (building one costs ~30 ms), but a new loopback connection per request: a kept-alive
# one that llama-server closes after 5 s idle races the next request ("Server disconnected").
HTTP = httpx.Client(timeout=3600, limits=httpx.Limits(max_keepalive_connections=0))
PROMPT = "Once upon a time, in a small village by the sea, there lived an old fisherman who"
SAMPLING = {
    "temperature": 0.8,
    "top_k": 40,
    "top_p": 0.95,
    "min_p": 0.05,
    "repeat_penalty": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
}
# the generated model: the shape bench/bench_serving.py uses
TINY_MODEL = {"n_layer": 16, "n_embd": 1024, "n_head": 16, "n_ff": 2816, "vocab_size": 32000}
CONCURRENCY = (1, 4)
SERVERS = ("ours", "llama-server")
SECTION = "Against llama-server"


@dataclass
class Stream:
    ttft: float
    tokens: int
    prompt_tokens: int | None
    started: float
    ended: float
    usage: dict = field(default_factory=dict)  # as the server reported it


@dataclass
class Cell:
    rates: list[float]  # aggregate completion tokens/s, one per round
    ttfts: list[float]  # median time to first token of the round's streams
    complete: bool = True
    prompt_tokens: int | None = None


# -- requests ---------------------------------------------------------------------------------
def eog_tokens(model: Path) -> list[int]:
    """Every token llama.cpp ends generation on, from the model's own vocabulary."""
    import llama_cpp as lc

    params = lc.llama_model_default_params()
    params.vocab_only = True
    handle = lc.llama_model_load_from_file(os.fsencode(model), params)
    if not handle:
        raise RuntimeError(f"llama.cpp cannot read the vocabulary of {model.name}")
    try:
        vocab = lc.llama_model_get_vocab(handle)
        n_vocab = lc.llama_vocab_n_tokens(vocab)
        return [t for t in range(n_vocab) if lc.llama_vocab_is_eog(vocab, t)]
    finally:
        lc.llama_model_free(handle)


def body(prompt: str, tokens: int, seed: int, eog: list[int]) -> dict:
    """One request, sent unchanged to both servers (each ignores the other's extras)."""
    return {
        "model": "bench",
        "prompt": prompt,
        "max_tokens": tokens,
        "seed": seed,
        **SAMPLING,
        "logit_bias": {str(t): -100 for t in eog},
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def sse_events(url: str, path: str, body: dict) -> Iterator[dict]:
    """The data of each event an OpenAI-style stream sends, as it comes; an error event raises."""
    with HTTP.stream("POST", url + path, json=body) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            data = json.loads(line[6:])
            if "error" in data:
                raise RuntimeError(f"{url}: {data['error']}")
            yield data


def stream(url: str, request: dict) -> Stream:
    """One streaming completion: time to the first text, completion tokens from ``usage``."""
    first, usage, chunks = None, {}, 0
    started = time.perf_counter()
    for data in sse_events(url, "/v1/completions", request):
        usage = data.get("usage") or usage
        if any(choice.get("text") for choice in data.get("choices") or ()):
            chunks += 1
            first = first or time.perf_counter()
    ended = time.perf_counter()
    tokens = usage.get("completion_tokens", chunks)
    ttft = (first or ended) - started
    return Stream(ttft, tokens, usage.get("prompt_tokens"), started, ended, usage)


def run_cell(url: str, requests: list[dict]) -> tuple[float, float, list[Stream]]:
    """All ``requests`` at once: aggregate tokens/s and the median time to first token."""
    with ThreadPoolExecutor(len(requests)) as pool:
        results = list(pool.map(lambda r: stream(url, r), requests))
    wall = max(r.ended for r in results) - min(r.started for r in results)
    rate = sum(r.tokens for r in results) / wall
    return rate, statistics.median(r.ttft for r in results), results


# -- servers ----------------------------------------------------------------------------------
def start_ours(
    work: Path, model: Path, threads: int, ctx: int, parallel: int = 4, **settings: str
) -> tuple[subprocess.Popen, str]:
    """Our daemon serving ``model`` as "bench" (one store per ``work``, shared by the daemons
    started on it); ``settings`` are more ``LOCALLLM_*`` variables."""
    from localllm.model_registry.importer import import_gguf
    from localllm.model_registry.store import Store

    store = work / "store"
    if not (store / "manifests").exists():
        import_gguf(Store(store), "bench", model)
    port = free_port()
    logs = work / f"logs-{port}"
    logs.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALLLM_")}
    env |= {
        "LOCALLLM_MODELS": str(store),
        "LOCALLLM_LOGS": str(logs),
        "LOCALLLM_DATA": str(work / "data"),
        "LOCALLLM_CONFIG": str(work / "config"),
        "LOCALLLM_NUM_THREADS": str(threads),
        "LOCALLLM_NUM_PARALLEL": str(parallel),
        "LOCALLLM_CONTEXT_LENGTH": str(ctx),
        "LOCALLLM_KEEP_ALIVE": "3600",
        **settings,
    }
    command = [sys.executable, "-m", "localllm.daemon", "serve", "--host", f"127.0.0.1:{port}"]
    out = (logs / "daemon.out").open("wb")
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_http(url + "/", proc)
    return proc, url


def llama_server_command(
    binary: Path, model: Path, threads: int, ctx: int, port: int, parallel: int = 4, extra=()
) -> list:
    return [
        str(binary),
        *("-m", str(model), "-t", str(threads), "-np", str(parallel)),
        *("-c", str(parallel * ctx)),
        *("-b", "512", "-ub", "512"),  # our runner's batch; llama-server's default is 2048
        *("--host", "127.0.0.1", "--port", str(port)),
        *extra,
    ]


def start_llama_server(work: Path, command: list) -> tuple[subprocess.Popen, str]:
    port = command[command.index("--port") + 1]
    out = (work / "llama-server.log").open("wb")
    proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_http(url + "/health", proc)
    return proc, url


def per_stream_ctx(model: Path, wanted: int) -> int:
    """What our daemon gives each stream: ``wanted``, capped at the model's training context."""
    from localllm.model_registry.gguf_info import read_gguf_info

    trained = read_gguf_info(model).context_length
    return min(wanted, trained) if trained else wanted


# -- one model --------------------------------------------------------------------------------
def run_rounds(urls: dict[str, str], eog: list[int], args: argparse.Namespace) -> dict:
    """``args.rounds`` rounds; in each, both servers (alternating which goes first) serve
    1 stream and then 4, with the same prompts and seeds."""
    cells = {(s, n): Cell([], []) for s in SERVERS for n in CONCURRENCY}
    for r in range(args.rounds):
        for server in SERVERS if r % 2 == 0 else SERVERS[::-1]:
            for n in CONCURRENCY:
                prompts = [f"{r}-{n}-{i}. {PROMPT}" for i in range(n)]
                requests = [body(p, args.tokens, 1000 * r + i, eog) for i, p in enumerate(prompts)]
                rate, ttft, streams = run_cell(urls[server], requests)
                cell = cells[server, n]
                cell.rates.append(rate)
                cell.ttfts.append(ttft)
                cell.complete &= all(s.tokens == args.tokens for s in streams)
                cell.prompt_tokens = streams[0].prompt_tokens
                print(f"round {r} {server:12} {n} stream(s): {rate:6.1f} tok/s, ", end="")
                print(f"ttft {ttft * 1e3:6.1f} ms", flush=True)
    return cells


def bench_model(model: Path, binary: Path, args: argparse.Namespace) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench-vs-llama-server-"))
    ctx = per_stream_ctx(model, args.ctx)
    eog = eog_tokens(model)
    command = llama_server_command(binary, model, args.threads, ctx, free_port())
    procs, urls, done = [], {}, False
    try:
        ours = start_ours(work, model, args.threads, ctx)
        procs.append(ours[0])
        theirs = start_llama_server(work, command)
        procs.append(theirs[0])
        urls = {"ours": ours[1], "llama-server": theirs[1]}
        for url in urls.values():  # load the model, page the weights in, fill all 4 slots
            run_cell(url, [body(f"warm {i}", 8, i, eog) for i in range(4)])
        cells, done = run_rounds(urls, eog, args), True
    finally:
        for proc in procs:
            stop(proc)
        if done:
            shutil.rmtree(work)
        else:
            print(f"the servers' logs are in {work}", file=sys.stderr)
    return {"model": model, "ctx": ctx, "eog": eog, "command": command, "cells": cells}


# -- report -----------------------------------------------------------------------------------
def row(label: str, n: int, metric: str, ours: list[float], theirs: list[float], lower: bool):
    best = min if lower else max
    o_best, t_best = best(ours), best(theirs)
    o_med, t_med = statistics.median(ours), statistics.median(theirs)
    unit = 1e3 if lower else 1.0
    fmt = "{:.1f}".format
    return (
        f"| {label} | {n} | {metric} | {fmt(o_best * unit)} ({fmt(o_med * unit)}) "
        f"| {fmt(t_best * unit)} ({fmt(t_med * unit)}) "
        f"| {o_best / t_best:.2f}x ({o_med / t_med:.2f}x) |"
    )


def table(results: list[tuple[str, dict]]) -> str:
    lines = [
        "| model | streams | measurement | ours: best (median) | llama-server: best (median) "
        "| ours / llama-server: best (median) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for label, result in results:
        for n in CONCURRENCY:
            ours, theirs = result["cells"]["ours", n], result["cells"]["llama-server", n]
            flag = "" if ours.complete and theirs.complete else " (INCOMPLETE)"
            lines.append(row(label, n, "tokens/s" + flag, ours.rates, theirs.rates, False))
            lines.append(row(label, n, "TTFT ms (lower wins)", ours.ttfts, theirs.ttfts, True))
    return "\n".join(lines)


def load() -> str:
    """The 1, 5 and 15 minute load averages: how busy the machine was."""
    return " / ".join(Path("/proc/loadavg").read_text().split()[:3])


def write_results(text: str, section: str = SECTION) -> None:
    """``text`` as bench/RESULTS.md's section ``section`` (replaced, or added at the end)."""
    path = ROOT / "bench" / "RESULTS.md"
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    head, marker, rest = old.partition(f"\n## {section}\n")
    tail = "\n## " + rest.split("\n## ", 1)[1] if marker and "\n## " in rest else ""
    path.write_text(head.rstrip() + f"\n\n## {section}\n\n" + text.strip() + "\n" + tail)


def model_path(name: str, work: Path) -> Path:
    if name == "gemma":
        from tests.support.real_model import gemma_path

        return gemma_path()
    if name == "tiny":
        from localllm.model_registry.tiny_gguf import write_tiny_model

        return write_tiny_model(work / "bench-250m-q8.gguf", **TINY_MODEL, file_type="Q8_0")
    raise SystemExit(f"unknown model {name!r}: use gemma, tiny")


def report(results: list[tuple[str, dict]], args, loads: tuple[str, str], binary: Path) -> str:
    info = json.loads((binary.parents[2] / "build-info.json").read_text())
    lines = [
        f"Machine: {machine()}. Load average (1/5/15 min) before: {loads[0]}; after: {loads[1]} "
        f"(the run's own {args.threads} threads count there).  ",
        f"llama-server: built from llama-cpp-python {info['version']}'s vendored llama.cpp "
        f"(sdist sha256 `{info['sdist_sha256'][:16]}...`), `{' '.join(info['cmake_flags'])}`.  ",
        f"{args.threads} threads and 4 slots on both; {args.tokens} tokens per stream (EOS "
        f"suppressed by logit_bias -100), sampling {json.dumps(SAMPLING)}, seed per stream; "
        f"{args.rounds} rounds, the servers alternating; TTFT is client-side.  ",
    ]
    for label, result in results:
        model = result["model"]
        command = " ".join(Path(c).name if c.startswith("/") else c for c in result["command"])
        command = command.rsplit(" ", 1)[0] + " PORT"  # the port is free_port()'s pick
        prompts = {s: result["cells"][s, 1].prompt_tokens for s in SERVERS}
        lines.append(
            f"{label}: {describe(model)} ({model.stat().st_size / 1e6:.0f} MB), "
            f"{result['ctx']} tokens of context per stream, {len(result['eog'])} EOG token(s) "
            f"biased, prompt tokens ours/llama-server {prompts['ours']}/"
            f"{prompts['llama-server']}; `{command}`.  "
        )
    lines.append(f"Command: `python bench/bench_vs_llama_server.py {' '.join(sys.argv[1:])}`")
    return "\n".join(lines).strip() + "\n\n" + table(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="gemma,tiny", help="comma-separated: gemma, tiny")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx", type=int, default=4096, help="context per stream (both)")
    parser.add_argument("--cache-dir", type=Path, help="where llama-server is built")
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    binary = build(pinned_version(), args.cache_dir)
    work = Path(tempfile.mkdtemp(prefix="bench-vs-llama-server-models-"))
    before, results = load(), []
    for name in args.models.split(","):
        model = model_path(name.strip(), work)
        print(f"== {name}: {model.name}", flush=True)
        results.append((name.strip(), bench_model(model, binary, args)))
    text = report(results, args, (before, load()), binary)
    shutil.rmtree(work)
    print("\n" + text)
    if args.write:
        write_results(text)


if __name__ == "__main__":
    main()
