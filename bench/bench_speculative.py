"""Speculative decoding (prompt lookup) on the real model: tokens/s with and without.

One daemon serves the Gemma 3 270M Q4_K_M file under two names, so both configurations stay
loaded and their requests interleave in one run (the machine is shared: its load drifts, and
interleaving puts both sides under the same drift): ``gemma`` with the default ``num_draft``
and ``gemma-plain`` with ``num_draft`` 0. Two tasks, greedy, the same settings on both sides:

* copy: rewrite a given piece of code with one change (a rename): most of the answer is in
  the prompt, which is where guessing pays;
* free: a story from a one-line start: little to copy, where guessing must cost nothing.

Tokens/s is the daemon's own generation rate (``eval_count / eval_duration``); the answers of
both sides are compared token for token (they must be identical).

With ``--draft`` the "on" side guesses with a draft model instead of prompt lookup: Gemma 3
270M has no smaller model of its vocabulary, so it is its own draft (the ``draft`` option naming
the other name). That is a correctness smoke (same text, every guess accepted), not a speed-up:
a draft as big as the target costs as much as it saves.

Run: ``.venv/bin/python bench/bench_speculative.py [--rounds 3] [--tokens 256] [--draft]
[--write]``.
Results go to bench/RESULTS.md under "## Speculative decoding".
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from tests.support.daemon import Daemon, make_store  # noqa: E402
from tests.support.real_model import gemma_path  # noqa: E402

SOURCE = (ROOT / "daemon" / "runners" / "worker" / "text.py").read_text()
TASKS = {
    "copy": (
        f"Original code:\n```python\n{SOURCE}```\n\n"
        "The same code, with the class TextStream renamed to TextEvents and nothing else "
        "changed:\n```python\n"
    ),
    "free": "Once upon a time, in a small village by the sea, there lived an old lighthouse keeper",
}
SIDES = {"on": "gemma", "off": "gemma-plain"}
HEADING = "## Speculative decoding"


def generate(url: str, model: str, prompt: str, tokens: int, draft: bool = False) -> dict:
    options = {"temperature": 0, "repeat_penalty": 1.0, "num_predict": tokens, "num_ctx": 2048}
    if model == SIDES["off"]:
        options["num_draft"] = 0
    elif draft:
        options["draft"] = SIDES["off"]  # the same file under the other name
    body = {"model": model, "prompt": prompt, "raw": True, "stream": False, "options": options}
    reply = httpx.post(url + "/api/generate", json=body, timeout=600)
    reply.raise_for_status()
    return reply.json()


def rate(reply: dict) -> float:
    return reply["eval_count"] / (reply["eval_duration"] / 1e9)


def run(args: argparse.Namespace) -> tuple[dict, dict]:
    rates: dict[tuple[str, str], list[float]] = {}
    same: dict[str, bool] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        model = gemma_path()
        store = make_store(root / "models", {name: model for name in SIDES.values()})
        env = {"LOCALLLM_NUM_THREADS": str(args.threads), "LOCALLLM_MAX_LOADED_MODELS": "2"}
        with Daemon(store, root / "logs", env=env) as daemon:
            for prompt in TASKS.values():  # load both and warm up
                for side in SIDES.values():
                    generate(daemon.url, side, prompt, 8, args.draft)
            for round_ in range(args.rounds):
                for task, prompt in TASKS.items():
                    order = list(SIDES.items())
                    if round_ % 2:
                        order.reverse()  # neither side always goes first
                    texts = {}
                    for side, name in order:
                        reply = generate(daemon.url, name, prompt, args.tokens, args.draft)
                        rates.setdefault((task, side), []).append(rate(reply))
                        texts[side] = reply["response"]
                    same[task] = same.get(task, True) and texts["on"] == texts["off"]
                    print(task, round_, {k: f"{v[-1]:.1f}" for k, v in rates.items()}, flush=True)
    return rates, same


def table(rates: dict, same: dict) -> str:
    lines = [
        "| task | tok/s off (median) | tok/s on (median) | on / off | same text |",
        "|---|---|---|---|---|",
    ]
    for task in TASKS:
        off = statistics.median(rates[(task, "off")])
        on = statistics.median(rates[(task, "on")])
        lines.append(f"| {task} | {off:.1f} | {on:.1f} | {on / off:.2f}x | {same[task]} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--draft", action="store_true", help="guess with Gemma as its own draft")
    parser.add_argument("--write", action="store_true", help="append to bench/RESULTS.md")
    args = parser.parse_args()
    before = os.getloadavg()[0]
    rates, same = run(args)
    after = os.getloadavg()[0]
    drafted = " (its own draft model)" if args.draft else ""
    text = (
        f"{table(rates, same)}\n\nGemma 3 270M Q4_K_M{drafted}, greedy, "
        f"{args.tokens} tokens per answer, "
        f"{args.rounds} interleaved rounds, {args.threads} threads; load average "
        f"{before:.1f} before, {after:.1f} after (on {os.cpu_count()} cores).\n"
    )
    print(text)
    if args.write:
        with (ROOT / "bench" / "RESULTS.md").open("a") as results:
            results.write(f"\n{HEADING}\n\n`{' '.join(['python', *sys.argv])}`\n\n{text}")


if __name__ == "__main__":
    main()
