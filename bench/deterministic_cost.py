"""What the ``deterministic`` request option costs, default against deterministic, through the
real daemon over HTTP.

    python bench/deterministic_cost.py [--rounds 3] [--threads 2] [--system-tokens 2000]
        [--model PATH] [--write]

A deterministic request gets a runner with one slot and flash attention off, which resumes a
prompt only after the whole batches (512 tokens) it read from the prompt's start (docs/memory.md,
"Deterministic answers"). On Gemma 3 270M Q4_K_M (the real model tier,
``tests/support/real_model.py``) unless ``--model`` names another GGUF, one daemon (4 slots
by default, ``--threads`` threads) serves both modes; every round unloads the model and loads
it afresh in each mode (the modes alternate in order), then times, all streamed through
``/v1/chat/completions``:

  1. the first token of a chat with a ~``--system-tokens`` system prompt (cold: nothing cached);
  2. the first token of a second chat with that system prompt and a new question (default
     resumes from the whole cached system prompt; deterministic from its last whole batch,
     and reads the rest again);
  3. the decode speed of a 128-token answer, one stream (tokens/s after the first token);
  4. the tokens/s of 4 concurrent streams of 64 tokens each (default serves them at once in 4
     slots; deterministic one at a time), from the first request sent to the last token.

End-of-generation tokens are biased away (``logit_bias`` -100) so every answer runs its full
length; greedy sampling. Each figure is the median of ``--rounds`` rounds. ``--write`` replaces
"## Deterministic mode: what it costs" in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_long_prompt import agent_text, cut  # noqa: E402
from bench_serving import describe, machine, stop  # noqa: E402
from bench_vs_llama_server import (  # noqa: E402
    HTTP,
    eog_tokens,
    load,
    sse_events,
    start_ours,
    write_results,
)

SECTION = "Deterministic mode: what it costs"
MODES = {"default": {}, "deterministic": {"deterministic": True}}
FIRST_QUESTION = "Summarize the instructions above in one sentence."
SECOND_QUESTION = "Which tools are named above? List three."
STORY = "Write a long story about a fox who learns to sail."
STREAM_QUESTIONS = (
    "Describe a lighthouse at night.",
    "Explain how bread rises.",
    "Tell a story about a clockmaker.",
    "Describe a walk through a pine forest.",
)
ANSWER_TOKENS = 4  # the first two chats only time their first token


@dataclass
class Answer:
    """One streamed chat as the client saw it."""

    started: float
    token_times: list[float]  # when each chunk with text arrived
    ended: float
    usage: dict = field(default_factory=dict)

    @property
    def ttft(self) -> float:
        return self.token_times[0] - self.started

    @property
    def decode_rate(self) -> float:
        """Tokens/s after the first one."""
        tokens = self.usage.get("completion_tokens", len(self.token_times))
        return (tokens - 1) / (self.token_times[-1] - self.token_times[0])

    @property
    def cached(self) -> int:
        return (self.usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)


@dataclass
class Round:
    """One mode's figures from one round, and what its runner reported."""

    first_ttft: float
    second_ttft: float
    decode_rate: float
    concurrent_rate: float
    prompt_tokens: int
    second_cached: int
    runner: dict
    full_length: bool  # every answer of 3 and 4 ran to its token limit


# -- requests ---------------------------------------------------------------------------------
def chat(url: str, messages: list[dict], tokens: int, options: dict, bias: dict) -> Answer:
    """One streamed, greedy chat completion with the daemon's ``options`` extra."""
    body = {
        "model": "bench",
        "messages": messages,
        "max_tokens": tokens,
        "temperature": 0,
        "stream": True,
        "stream_options": {"include_usage": True},
        "options": options,
        **({"logit_bias": bias} if bias else {}),
    }
    times, usage = [], {}
    started = time.perf_counter()
    for data in sse_events(url, "/v1/chat/completions", body):
        usage = data.get("usage") or usage
        if any((c.get("delta") or {}).get("content") for c in data.get("choices") or ()):
            times.append(time.perf_counter())
    if not times:
        raise RuntimeError(f"{url}: an answer with no text ({usage})")
    return Answer(started, times, time.perf_counter(), usage)


def concurrent_rate(url: str, tokens: int, options: dict, bias: dict) -> tuple[float, bool]:
    """Completion tokens/s of one stream per question, all sent at once, and whether every
    stream ran to ``tokens``."""

    def one(question: str) -> Answer:
        return chat(url, [{"role": "user", "content": question}], tokens, options, bias)

    with ThreadPoolExecutor(len(STREAM_QUESTIONS)) as pool:
        answers = list(pool.map(one, STREAM_QUESTIONS))
    wall = max(a.ended for a in answers) - min(a.started for a in answers)
    done = [a.usage["completion_tokens"] for a in answers]
    return sum(done) / wall, all(n == tokens for n in done)


def reload(url: str, options: dict) -> dict:
    """Unload the model, then load it in the mode ``options`` asks for: a fresh runner with
    nothing cached. Returns that runner as ``/api/ps`` shows it."""
    for extra in ({"keep_alive": 0}, {"options": options}):
        HTTP.post(url + "/api/generate", json={"model": "bench", **extra}).raise_for_status()
    (runner,) = HTTP.get(url + "/api/ps").json()["models"]
    return runner


# -- one round of one mode --------------------------------------------------------------------
def measure(url: str, system: str, options: dict, bias: dict, args) -> Round:
    runner = reload(url, options)

    def ask(question: str) -> Answer:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
        return chat(url, messages, ANSWER_TOKENS, options, {})

    first, second = ask(FIRST_QUESTION), ask(SECOND_QUESTION)
    story = chat(url, [{"role": "user", "content": STORY}], args.decode_tokens, options, bias)
    rate, streams_full = concurrent_rate(url, args.stream_tokens, options, bias)
    return Round(
        first_ttft=first.ttft,
        second_ttft=second.ttft,
        decode_rate=story.decode_rate,
        concurrent_rate=rate,
        prompt_tokens=second.usage.get("prompt_tokens", 0),
        second_cached=second.cached,
        runner=runner,
        full_length=streams_full and story.usage["completion_tokens"] == args.decode_tokens,
    )


def import_model(work: Path, model: Path, template: str | None) -> None:
    """``model`` as "bench" in the store ``start_ours`` serves from ``work``, with ``template``
    as its chat template where given: the Gemma 3 270M file has none, and the ChatML fallback's
    text stop strings would end its answers early."""
    from localllm.model_registry.importer import ModelExtras, import_gguf
    from localllm.model_registry.store import Store

    import_gguf(Store(work / "store"), "bench", model, extras=ModelExtras(template=template))


def run(model: Path, template: str | None, args) -> dict[str, list[Round]]:
    work = Path(tempfile.mkdtemp(prefix="bench-deterministic-"))
    text = cut(model, agent_text(), args.system_tokens)
    bias = {str(t): -100 for t in eog_tokens(model)}
    rounds: dict[str, list[Round]] = {mode: [] for mode in MODES}
    import_model(work, model, template)
    proc, url = start_ours(work, model, args.threads, args.ctx, parallel=4)
    try:
        for r in range(args.rounds):
            system = f"Session {r}. {text}"  # its own start: no round finds another's prefix
            for mode in MODES if r % 2 == 0 else list(MODES)[::-1]:
                got = measure(url, system, MODES[mode], bias, args)
                rounds[mode].append(got)
                print(
                    f"round {r} {mode:13} first {got.first_ttft:.2f} s, second "
                    f"{got.second_ttft:.2f} s ({got.second_cached}/{got.prompt_tokens} cached), "
                    f"decode {got.decode_rate:.1f} tok/s, 4 streams {got.concurrent_rate:.1f} "
                    f"tok/s{'' if got.full_length else ' (ANSWERS CUT SHORT)'}", flush=True
                )  # fmt: skip
    finally:
        stop(proc)
        shutil.rmtree(work, ignore_errors=True)
    return rounds


# -- report -----------------------------------------------------------------------------------
def table(rounds: dict[str, list[Round]], args) -> str:
    prompt = rounds["default"][-1].prompt_tokens
    rows = (
        (f"1. first chat, {prompt}-token prompt: time to first token, s", "first_ttft", 2),
        ("2. second chat, same system prompt: time to first token, s", "second_ttft", 2),
        (f"3. decode, 1 stream of {args.decode_tokens} tokens: tokens/s", "decode_rate", 1),
        (f"4. 4 concurrent streams of {args.stream_tokens} tokens: tokens/s", "concurrent_rate", 1),
    )
    lines = [
        "| measurement | default | deterministic | deterministic / default |",
        "| --- | --- | --- | --- |",
    ]
    for label, metric, digits in rows:
        default, deterministic = (
            statistics.median(getattr(r, metric) for r in rounds[mode]) for mode in MODES
        )
        lines.append(
            f"| {label} | {default:.{digits}f} | {deterministic:.{digits}f} "
            f"| {deterministic / default:.2f}x |"
        )
    return "\n".join(lines)


def runner_line(rounds: dict[str, list[Round]]) -> str:
    """Each mode's runner as the daemon ran it, and what the second chat found cached."""
    parts = []
    for mode, got in rounds.items():
        runner = got[-1].runner
        cached = "/".join(str(r.second_cached) for r in got)
        parts.append(
            f"{mode}: `num_parallel` {runner.get('num_parallel')}, flash attention "
            f"{runner.get('flash_attention')}, second chat's prompt tokens found cached "
            f"{cached} (per round)"
        )
    return "Runners: " + "; ".join(parts) + ".  "


def all_full_length(rounds: dict[str, list[Round]]) -> bool:
    return all(got.full_length for mode_rounds in rounds.values() for got in mode_rounds)


def chat_template(template: str | None) -> str:
    if template is None:
        return "The model's own chat template."
    return (
        "Chat template: Gemma 3's (`tests/support/model_writers/gemma3.py` `GEMMA_TEMPLATE`; the "
        "GGUF file carries none)."
    )


def report(
    rounds: dict[str, list[Round]], model: Path, template: str | None, args, loads: tuple[str, str]
) -> str:
    lines = [
        f"Machine: {machine()}. Load average (1/5/15 min) before: {loads[0]}; after: "
        f"{loads[1]} (the run's own {args.threads} threads count there).  ",
        f"Model: {describe(model)}. One daemon, {args.threads} threads, 4 slots by default, "
        f"`LOCALLLM_CONTEXT_LENGTH={args.ctx}`; each round unloads the model and loads it "
        "fresh in each mode (the order alternating). Streamed `/v1/chat/completions`, greedy, "
        "end-of-generation tokens biased away for 3 and 4; TTFT client side. Median of "
        f"{args.rounds} rounds. {chat_template(template)} Every answer of 3 and 4 ran to its "
        f"token limit: {'yes' if all_full_length(rounds) else 'NO'}.  ",
        runner_line(rounds),
        f"Command: `{' '.join(['python bench/deterministic_cost.py', *sys.argv[1:]])}`",
    ]
    return "\n".join(lines) + "\n\n" + table(rounds, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a GGUF (default: Gemma 3 270M Q4_K_M)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx", type=int, default=4096, help="context per slot")
    parser.add_argument("--system-tokens", type=int, default=2000)
    parser.add_argument("--decode-tokens", type=int, default=128)
    parser.add_argument("--stream-tokens", type=int, default=64, help="per concurrent stream")
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    template = None
    if args.model is None:
        from tests.support.model_writers.gemma3 import GEMMA_TEMPLATE
        from tests.support.real_model import gemma_path

        args.model, template = gemma_path(), GEMMA_TEMPLATE
    before = load()
    rounds = run(args.model, template, args)
    text = report(rounds, args.model, template, args, (before, load()))
    print("\n" + text)
    if args.write:
        write_results(text, SECTION)


if __name__ == "__main__":
    main()
