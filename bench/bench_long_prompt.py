"""A coding agent's first turn: time to first token on a prompt of ~30,000 tokens, our daemon
against llama.cpp's own ``llama-server`` (bench/llama_server_build.py), and what the prefix
cache makes of the turns after it.

    python bench/bench_long_prompt.py [--tokens 30000] [--rounds 2] [--threads 2]
        [--models gemma,small] [--cache-dir DIR] [--write]

The prompt is the three recorded agents' first turns (tests/agents/fixtures: system prompts,
tools, messages) as text, cut to ``--tokens`` of each model's own vocabulary, sent raw to
``/v1/completions`` with 32 tokens to generate: the time to first token is the time to read
the prompt, the tokens/s after it what decoding costs with that much in the cache. Every
round's prompt starts with its own number, so no cache serves it. One slot and a context of
32,768 on each server, 2 threads. Ours runs twice: flash attention ``auto`` (what it picks)
and ``off`` (what ``auto`` picked for small heads before long contexts counted), so the table
shows what the choice is worth (where ``auto`` could pick ``off``: heads of 64 values or
fewer). llama-server runs as it does by default (flash attention ``auto``: on, on a CPU) with
``cache_prompt`` false.

Then, on ours only: a second turn (the last prompt and a few hundred tokens more), a new
session with the same start after another conversation took the one slot (the first one's
cache moved to the host cache), and through the chat API a new chat with the same system
prompt after a first chat whose long question moved the sliding window far past it (Gemma:
it resumes from the checkpoint where the system prompt ends). llama-server takes the same
second turn with its prompt cache on, for what reading the new tokens costs here.
``--write`` replaces "## Long prompts" in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_serving import describe, free_port, machine, stop  # noqa: E402
from bench_vs_llama_server import (  # noqa: E402
    HTTP,
    Stream,
    llama_server_command,
    load,
    model_path,
    start_llama_server,
    start_ours,
    stream,
    write_results,
)
from llama_server_build import build, pinned_version  # noqa: E402

CTX = 32768
DECODE = 32
SECTION = "Long prompts"
# 32-value heads, 4 of them: llama.cpp's CPU flash-attention kernel is slow for such heads, and
# their scores for a whole 32k context fit the 256 MiB ``auto`` allows, so ``auto`` used to
# leave flash attention off here (daemon/runners/attention.py)
SMALL_MODEL = {"n_layer": 8, "n_embd": 128, "n_head": 4, "vocab_size": 32000, "context_length": CTX}
VARIANTS = ("ours (auto)", "ours (off)", "llama-server")
TOOL_ANSWER = "\n\nThe tool answered: 42 files changed." * 20  # a second turn: ~200 tokens


def agent_text() -> str:
    """The agents' first turns as one text: what a coding agent's prompt is made of."""
    parts = []
    for agent in ("claude", "codex", "opencode"):
        fixture = json.loads((ROOT / "tests/agents/fixtures" / f"{agent}.json").read_text())
        (first,) = [r["body"] for r in fixture["requests"] if r["kind"] == "first"]
        fields = ("system", "instructions", "tools", "messages", "input")
        parts.append(json.dumps({k: first[k] for k in fields if k in first}, ensure_ascii=False))
    return "\n\n".join(parts)


def cut(model: Path, text: str, tokens: int) -> str:
    """The start of ``text`` (repeated if need be) that is ``tokens`` of the model's tokens."""
    import llama_cpp

    vocab = llama_cpp.Llama(model_path=str(model), vocab_only=True, verbose=False)
    ids = vocab.tokenize(text.encode(), add_bos=False)
    while len(ids) < tokens:
        ids += ids
    return vocab.detokenize(ids[:tokens]).decode(errors="ignore")


def completion(url: str, prompt: str, tokens: int, **extra) -> Stream:
    """One streamed raw completion, greedy (``stream`` times it and keeps its usage)."""
    body = {"model": "bench", "prompt": prompt, "max_tokens": tokens, "stream": True}
    body |= {"stream_options": {"include_usage": True}, "temperature": 0, **extra}
    return stream(url, body)


def chat(url: str, system: str, question: str) -> tuple[float, dict]:
    """One chat turn of one token: its time (reading the prompt, mostly) and its usage."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    body = {"model": "bench", "messages": messages, "max_tokens": 1, "temperature": 0}
    started = time.perf_counter()
    answer = HTTP.post(url + "/v1/chat/completions", json=body)
    answer.raise_for_status()
    return time.perf_counter() - started, answer.json()["usage"]


def decode_rate(answer: Stream) -> float:
    """Tokens/s after the first one."""
    return (answer.tokens - 1) / (answer.ended - answer.started - answer.ttft)


# -- one model --------------------------------------------------------------------------------
def variants(model: Path) -> tuple[str, ...]:
    """The servers to compare: ours with flash attention ``off`` too where ``auto`` could pick
    it (heads of 64 values or fewer: daemon/runners/attention.py)."""
    from localllm.daemon.runners.attention import SMALL_HEAD
    from localllm.model_registry.gguf_info import read_gguf_info

    info = read_gguf_info(model)
    head = info.key_length or info.embedding_length // info.head_count
    return VARIANTS if head <= SMALL_HEAD else ("ours (auto)", "llama-server")


def bench_model(name: str, model: Path, binary: Path, args: argparse.Namespace) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench-long-prompt-"))
    prompt = cut(model, agent_text(), args.tokens)
    compared, procs, urls = variants(model), [], {}
    try:
        for variant, flash in (("ours (auto)", "auto"), ("ours (off)", "off")):
            if variant in compared:
                proc, urls[variant] = start_ours(
                    work, model, args.threads, CTX, 1, LOCALLLM_FLASH_ATTENTION=flash
                )
                procs.append(proc)
        command = llama_server_command(binary, model, args.threads, CTX, free_port(), 1)
        proc, urls["llama-server"] = start_llama_server(work, command)
        procs.append(proc)
        for url in urls.values():  # load the model and page its weights in
            completion(url, "Hello", 2, cache_prompt=False)
        cells = {variant: {"ttft": [], "rate": [], "prompt": None} for variant in compared}
        for r in range(args.rounds):
            for variant in compared if r % 2 == 0 else compared[::-1]:
                answer = completion(urls[variant], f"{r}. {prompt}", DECODE, cache_prompt=False)
                cell = cells[variant]
                cell["ttft"].append(answer.ttft)
                cell["rate"].append(decode_rate(answer))
                cell["prompt"] = answer.prompt_tokens
                print(
                    f"{name} round {r} {variant:13} prompt {cell['prompt']} tokens: "
                    f"ttft {answer.ttft:.1f} s, {cell['rate'][-1]:.1f} tok/s", flush=True
                )  # fmt: skip
        held, question = f"{args.rounds - 1}. {prompt}", cut(model, agent_text(), 1500)
        reuse = prefix_reuse(urls["ours (auto)"], held, prompt, question)
        reuse["peer second"] = peer_second_turn(urls["llama-server"], held)
    finally:
        for proc in procs:
            stop(proc)
    shutil.rmtree(work, ignore_errors=True)
    return {"model": model, "cells": cells, "reuse": reuse, "command": command}


def prefix_reuse(url: str, held: str, system: str, question: str) -> dict:
    """The turns after a first one on ours (whose prompt ``held`` its one slot holds): the
    next turn, a new session with the same start once another conversation has taken the
    slot (the first one waits in the host cache), and a new chat with ``system`` as its
    system prompt after a first one whose long ``question`` moved on from it."""
    second = completion(url, held + TOOL_ANSWER, 1)
    completion(url, "Another conversation, short. " * 50, 1)
    session = completion(url, held + "\n\nA new question.", 1)
    turns = {"second": (second.ttft, second.usage), "session": (session.ttft, session.usage)}
    chat(url, system, "Review this file:\n" + question)
    turns["chat"] = chat(url, system, "A new question: what changed?")
    return turns


def peer_second_turn(url: str, held: str) -> tuple[float, dict]:
    """llama-server's time for the same second turn, its prompt cache holding ``held``:
    what reading the new tokens against that much cache costs on this machine."""
    completion(url, held, 1, cache_prompt=True)
    second = completion(url, held + TOOL_ANSWER, 1, cache_prompt=True)
    return second.ttft, second.usage


# -- report -----------------------------------------------------------------------------------
def table(results: list[tuple[str, dict]]) -> str:
    lines = [
        "| model | prompt tokens | measurement | ours, flash auto | ours, flash off "
        "| llama-server | ours auto / llama-server |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, result in results:
        cells = result["cells"]
        prompt = cells["ours (auto)"]["prompt"]
        for metric, label, lower in (
            ("ttft", "TTFT s (lower wins)", True),
            ("rate", "tok/s", False),
        ):
            best = min if lower else max
            values = {v: cells[v][metric] for v in cells}
            shown = [
                f"{best(values[v]):.2f} ({statistics.median(values[v]):.2f})" if v in values
                else "-"
                for v in VARIANTS
            ]  # fmt: skip
            ratio = best(values["ours (auto)"]) / best(values["llama-server"])
            lines.append(
                f"| {name} | {prompt} | {label} | " + " | ".join(shown) + f" | {ratio:.2f}x |"
            )
    return "\n".join(lines)


def reuse_lines(results: list[tuple[str, dict]]) -> list[str]:
    lines = [
        "",
        "| model | turn | TTFT s | prompt tokens read from a cache |",
        "| --- | --- | --- | --- |",
    ]
    words = {
        "second": "second turn (+~200 tokens)",
        "peer second": "llama-server, the same second turn (its prompt cache on)",
        "session": "new session, same start, after another took the slot (host cache)",
        "chat": "new chat, same system prompt, after a chat whose question ran 1,500 tokens on",
    }
    for name, result in results:
        for label in words:
            ttft, usage = result["reuse"][label]
            cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
            total = usage.get("prompt_tokens", 0)
            lines.append(f"| {name} | {words[label]} | {ttft:.2f} | {cached} of {total} |")
    return lines


def report(results, args, loads, binary: Path) -> str:
    info = json.loads((binary.parents[2] / "build-info.json").read_text())
    lines = [
        f"Machine: {machine()}, shared with other work while this ran: compare within this "
        f"table only. Load average (1/5/15 min) before: {loads[0]}; after: {loads[1]}.  ",
        f"llama-server: built from llama-cpp-python {info['version']}'s vendored llama.cpp, "
        f"`-t {args.threads} -np 1 -c {CTX} -b 512 -ub 512`, `cache_prompt: false`.  ",
        f"Ours: {args.threads} threads, 1 slot, `LOCALLLM_CONTEXT_LENGTH={CTX}`; each round's "
        "prompt starts with its own number, so nothing is reused. TTFT client side; tok/s: the "
        f"{DECODE} tokens after it. Best of {args.rounds} rounds "
        "(median in brackets), the servers alternating.  ",
    ]
    for name, result in results:
        lines.append(f"{name}: {describe(result['model'])}.  ")
    lines.append(f"Command: `python bench/bench_long_prompt.py {' '.join(sys.argv[1:])}`")
    return "\n".join(lines) + "\n\n" + table(results) + "\n" + "\n".join(reuse_lines(results))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="gemma,small", help="comma-separated: gemma, small")
    parser.add_argument("--tokens", type=int, default=30000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cache-dir", type=Path, help="where llama-server is built")
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    binary = build(pinned_version(), args.cache_dir)
    work = Path(tempfile.mkdtemp(prefix="bench-long-prompt-models-"))
    before, results = load(), []
    for name in args.models.split(","):
        name = name.strip()
        if name == "small":
            from localllm.model_registry.tiny_gguf import write_tiny_model

            model = write_tiny_model(work / "small-heads.gguf", **SMALL_MODEL, file_type="Q8_0")
        else:
            model = model_path(name, work)
        results.append((name, bench_model(name, model, binary, args)))
    text = report(results, args, (before, load()), binary)
    shutil.rmtree(work)
    print("\n" + text)
    if args.write:
        write_results(text, SECTION)


if __name__ == "__main__":
    main()
