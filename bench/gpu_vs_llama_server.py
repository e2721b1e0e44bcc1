"""Our daemon against llama.cpp's ``llama-server`` and ``llama-server -bs`` (its GPU sampling)
on a GPU: generated models of real shapes, every layer offloaded, the same slots and context.

    python bench/gpu_vs_llama_server.py --server PATH/llama-server [--shapes 1b,8b]
        [--streams 1,4,16,64] [--slots 64] [--ctx 2048] [--rounds 2] [--tokens 128]
        [--threads 8] [--host-sampling] [--write]

``--server`` is a llama-server built for this GPU from the llama.cpp that the pinned
llama-cpp-python vendors, and the interpreter's ``llama_cpp`` must be a GPU build of the same
(the GPU kit carries both; bench/llama_server_build.py builds for the CPU only). The models are
written by ``model_registry.tiny_gguf`` in the shapes of Llama 3.2 1B / 3B and Llama 3.1 8B
(128,256-token vocabulary, Q8_0, one layer's random weights in every layer: throughput does not
care). All servers get the same streamed ``/v1/completions`` requests as
bench/bench_vs_llama_server.py (same sampling and seeds, end-of-generation tokens biased -100
so every stream runs ``--tokens``), ``--slots`` slots of ``--ctx`` tokens each; per shape and
number of streams: aggregate tokens/s and time to first token, best and median over rounds in
alternating order. ``--host-sampling`` adds our daemon with LOCALLLM_BACKEND_SAMPLING=off.
``--write`` replaces "## On a GPU against llama-server" in bench/RESULTS.md, naming the card.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import bench_vs_llama_server as peer  # noqa: E402
from bench_serving import describe, free_port, machine, stop  # noqa: E402

SHAPES = {  # writer arguments: Llama 3.2 1B / 3B, Llama 3.1 8B; tiny for a dry run anywhere
    "tiny": dict(n_layer=2, n_embd=256, n_head=4, n_head_kv=2, n_ff=512, vocab_size=32000),
    "1b": dict(n_layer=16, n_embd=2048, n_head=32, n_head_kv=8, n_ff=8192, vocab_size=128256),
    "3b": dict(n_layer=28, n_embd=3072, n_head=24, n_head_kv=8, n_ff=8192, vocab_size=128256),
    "8b": dict(n_layer=32, n_embd=4096, n_head=32, n_head_kv=8, n_ff=14336, vocab_size=128256),
}
SECTION = "On a GPU against llama-server"
BS = "llama-server -bs"


def card() -> str:
    """The GPU as nvidia-smi names it (name, memory, driver)."""
    query = ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"]
    try:
        lines = subprocess.run(query, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "no NVIDIA GPU found (nvidia-smi did not answer)"
    return "; ".join(line.strip() for line in lines.splitlines() if line.strip()) or "none"


def write_model(shape: str, work: Path) -> Path:
    from localllm.model_registry.tiny_gguf import write_tiny_model

    started = time.monotonic()
    path = write_tiny_model(
        work / f"{shape}.gguf",
        file_type="Q8_0",
        context_length=8192,
        shared_layers=True,
        **SHAPES[shape],
    )
    print(f"== {shape}: {path.stat().st_size / 1e9:.2f} GB written in "
          f"{time.monotonic() - started:.0f} s", flush=True)  # fmt: skip
    return path


def start_all(work: Path, model: Path, args) -> tuple[list, dict[str, str]]:
    """Our daemon (twice with ``--host-sampling``), llama-server and llama-server -bs."""
    procs, urls = [], {}
    ours = {"ours": "auto"} | ({"ours, host sampling": "off"} if args.host_sampling else {})
    try:
        for index, (name, sampling) in enumerate(ours.items()):
            env = {"LOCALLLM_BACKEND_SAMPLING": sampling}
            where = work / f"ours-{index}"
            proc, urls[name] = peer.start_ours(
                where, model, args.threads, args.ctx, args.slots, **env
            )
            procs.append(proc)
        for index, (name, extra) in enumerate((("llama-server", ()), (BS, ("-bs",))), 1):
            command = peer.llama_server_command(
                args.server, model, args.threads, args.ctx, free_port(), args.slots,
                ("-ngl", "999", *extra),
            )  # fmt: skip
            print(" ".join(command), flush=True)
            where = work / f"llama-server-{index}"
            where.mkdir(parents=True)
            proc, urls[name] = peer.start_llama_server(where, command)
            procs.append(proc)
    except BaseException:
        for proc in procs:
            stop(proc)
        raise
    return procs, urls


def run_rounds(urls: dict[str, str], eog: list[int], args) -> dict:
    cells = {(name, n): peer.Cell([], []) for name in urls for n in args.streams}
    for r in range(args.rounds):
        for name in list(urls) if r % 2 == 0 else list(urls)[::-1]:
            for n in args.streams:
                prompts = [f"{r}-{n}-{i}. {peer.PROMPT}" for i in range(n)]
                requests = [
                    peer.body(p, args.tokens, 1000 * r + i, eog) for i, p in enumerate(prompts)
                ]
                rate, ttft, streams = peer.run_cell(urls[name], requests)
                cell = cells[name, n]
                cell.rates.append(rate)
                cell.ttfts.append(ttft)
                cell.complete &= all(s.tokens == args.tokens for s in streams)
                print(f"round {r} {name:20} {n:3} streams: {rate:8.1f} tok/s, "
                      f"ttft {ttft * 1e3:7.1f} ms", flush=True)  # fmt: skip
    return cells


def bench_shape(shape: str, work: Path, args) -> dict:
    model = write_model(shape, work)
    eog = peer.eog_tokens(model)
    procs, urls = start_all(work / shape, model, args)
    try:
        for url in urls.values():  # load, page in, fill the first slots
            peer.run_cell(url, [peer.body(f"warm {i}", 8, i, eog) for i in range(4)])
        running = httpx.get(urls["ours"] + "/api/ps", timeout=30).json()["models"][0]
        cells = run_rounds(urls, eog, args)
    finally:
        for proc in procs:
            stop(proc)
    info = {"model": describe(model), "bytes": model.stat().st_size, "eog": len(eog)}
    model.unlink()
    return {"info": info, "ps": running, "cells": cells, "servers": list(urls)}


def best(cell, ttft: bool) -> float:
    """Tokens/s: the highest; time to first token (ms): the lowest."""
    return min(cell.ttfts) * 1e3 if ttft else max(cell.rates)


def cell_text(cell, ttft: bool) -> str:
    median = statistics.median(cell.ttfts) * 1e3 if ttft else statistics.median(cell.rates)
    flag = "" if cell.complete else " (INCOMPLETE)"
    return f"{best(cell, ttft):.1f} ({median:.1f}){flag}"


def table(results: dict[str, dict], streams: list[int]) -> str:
    servers = next(iter(results.values()))["servers"]
    others = [s for s in servers if not s.startswith("ours")]
    head = ["shape", "streams", "measurement", *servers, *(f"ours / {s}" for s in others)]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for shape, result in results.items():
        cells = result["cells"]
        for n in streams:
            for metric, ttft in (("tokens/s", False), ("TTFT ms (lower wins)", True)):
                row = [shape, str(n), metric] + [cell_text(cells[s, n], ttft) for s in servers]
                ours = best(cells["ours", n], ttft)
                row += [f"{ours / best(cells[other, n], ttft):.2f}x" for other in others]
                lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def report(results: dict[str, dict], args, loads: tuple[str, str]) -> str:
    lines = [
        f"Card: {card()}. Machine: {machine()}. Load average (1/5/15 min) before: {loads[0]}; "
        f"after: {loads[1]}.  ",
        f"{args.slots} slots of {args.ctx} tokens on every server, all layers on the GPU "
        f"(llama-server `-ngl 999`), {args.threads} threads, {args.tokens} tokens per stream "
        f"(EOG biased -100), sampling {json.dumps(peer.SAMPLING)}, seed per stream; "
        f"{args.rounds} rounds, the servers alternating; best (median).  ",
    ]
    for shape, result in results.items():
        ps, info = result["ps"], result["info"]
        lines.append(
            f"{shape}: {info['model']} ({info['bytes'] / 1e9:.2f} GB), {info['eog']} EOG "
            f"token(s); ours ran {ps.get('processor')} with {ps.get('num_parallel')} slots.  "
        )
    lines.append(f"Command: `python bench/gpu_vs_llama_server.py {' '.join(sys.argv[1:])}`")
    return "\n".join(lines) + "\n\n" + table(results, args.streams)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", type=Path, required=True, help="a GPU build of llama-server")
    parser.add_argument("--shapes", default="1b,8b", help=f"comma-separated: {', '.join(SHAPES)}")
    parser.add_argument("--streams", default="1,4,16,64")
    parser.add_argument("--slots", type=int, default=64)
    parser.add_argument("--ctx", type=int, default=2048, help="context per slot")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--host-sampling", action="store_true", help="also ours, host sampling")
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    args.streams = [int(n) for n in args.streams.split(",")]
    if max(args.streams) > args.slots:
        parser.error("--slots must cover the most --streams")
    work = Path(tempfile.mkdtemp(prefix="gpu-vs-llama-server-"))
    before, results = peer.load(), {}
    try:
        for shape in args.shapes.split(","):
            results[shape.strip()] = bench_shape(shape.strip(), work, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = report(results, args, (before, peer.load()))
    print("\n" + text)
    if args.write:
        peer.write_results(text, SECTION)


if __name__ == "__main__":
    main()
