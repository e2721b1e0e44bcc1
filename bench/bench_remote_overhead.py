"""What a front daemon adds when it serves a remote's model: the same chat requests sent
straight to a localllm daemon and through a second daemon that has it as a remote.

    python bench/bench_remote_overhead.py [--model PATH] [--threads N] [--tokens 128] [--write]

Measures, trials interleaved (direct, front, direct, front...):
  1. one stream: decode tokens/s through the front vs direct (target: under 5% lower)
  2. one stream: time to first token through the front vs direct (target: under +10 ms)
  3. 4 concurrent streams: aggregate tokens/s through the front vs direct (target: under 5%)
``--write`` puts the table into bench/RESULTS.md under "## Remote overhead".
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_serving import free_port, start_daemon, stop, stream, wait_http  # noqa: E402

SECTION = "## Remote overhead"
MESSAGES = [{"role": "user", "content": "Hello world, this is a benchmark prompt."}]


def start_front(work: Path) -> tuple[subprocess.Popen, str]:
    """A daemon with no models of its own, its config in ``work``."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALLLM_")}
    env |= {
        "LOCALLLM_MODELS": str(work / "front-store"),
        "LOCALLLM_LOGS": str(work / "front-logs"),
        "LOCALLLM_CONFIG": str(work / "front-config"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
    }
    (work / "front-logs").mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "localllm.daemon", "serve", "--host", f"127.0.0.1:{port}"]
    log = (work / "front-logs" / "out.log").open("wb")
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    wait_http(url + "/", proc)
    return proc, url


def chat(model: str, tokens: int, seed: int = 0) -> dict:
    return {
        "model": model,
        "messages": MESSAGES,
        "max_tokens": tokens,
        "seed": seed,
        "temperature": 0.0,
    }


def single(direct: str, front: str, tokens: int, trials: int) -> dict:
    runs: dict[str, list] = {"direct": [], "front": []}
    stream(direct, chat("bench", tokens), "/v1/chat/completions")  # load the model, warm up
    stream(front, chat("team/bench", tokens), "/v1/chat/completions")
    for _ in range(trials):
        runs["direct"].append(stream(direct, chat("bench", tokens), "/v1/chat/completions"))
        runs["front"].append(stream(front, chat("team/bench", tokens), "/v1/chat/completions"))
    return {
        side: {
            "rate": [r.decode_rate for r in streams],
            "ttft": [r.ttft * 1000 for r in streams],
            "tokens": [r.tokens for r in streams],
        }
        for side, streams in runs.items()
    }


def four(direct: str, front: str, tokens: int, trials: int) -> dict:
    def bodies(model: str) -> list[dict]:
        return [chat(model, tokens, seed) for seed in range(4)]

    rates: dict[str, list[float]] = {"direct": [], "front": []}
    for _ in range(trials):
        for side, url, model in (("direct", direct, "bench"), ("front", front, "team/bench")):
            rates[side].append(concurrent_chat(url, bodies(model)))
    return rates


def concurrent_chat(url: str, bodies: list[dict]) -> float:
    """Aggregate tokens/s of ``bodies`` streamed at once."""
    with ThreadPoolExecutor(len(bodies)) as pool:
        results = list(pool.map(lambda b: stream(url, b, "/v1/chat/completions"), bodies))
    wall = max(r.ended for r in results) - min(r.started for r in results)
    return sum(r.tokens for r in results) / wall


def table(one: dict, agg: dict) -> list[str]:
    def pair(values: dict, key: str, best) -> tuple[float, float, float, float]:
        d, f = values["direct"][key], values["front"][key]
        return best(d), best(f), statistics.median(d), statistics.median(f)

    rate = pair(one, "rate", max)
    ttft = pair(one, "ttft", min)
    agg_best = (max(agg["direct"]), max(agg["front"]))
    rows = [
        "| measurement | direct | through the front | result | target |",
        "| --- | --- | --- | --- | --- |",
        f"| 1 stream decode tokens/s (best; median) | {rate[0]:.1f} ({rate[2]:.1f}) | "
        f"{rate[1]:.1f} ({rate[3]:.1f}) | {100 * (1 - rate[3] / rate[2]):+.1f}% lower "
        f"(median) | < 5% |",
        f"| 1 stream time to first token, ms (best; median) | {ttft[0]:.1f} ({ttft[2]:.1f}) | "
        f"{ttft[1]:.1f} ({ttft[3]:.1f}) | {ttft[3] - ttft[2]:+.1f} ms (median) | < +10 ms |",
        f"| 4 streams aggregate tokens/s (best; median) | {agg_best[0]:.1f} "
        f"({statistics.median(agg['direct']):.1f}) | {agg_best[1]:.1f} "
        f"({statistics.median(agg['front']):.1f}) | "
        f"{100 * (1 - statistics.median(agg['front']) / statistics.median(agg['direct'])):.1f}%"
        " lower (median) | < 5% |",
    ]
    return rows


def write_results(lines: list[str]) -> None:
    path = ROOT / "bench" / "RESULTS.md"
    text = path.read_text()
    block = "\n".join([SECTION, "", *lines]) + "\n"
    if SECTION in text:
        head, _, rest = text.partition(SECTION)
        tail = rest.split("\n## ", 1)
        text = head + block + ("\n## " + tail[1] if len(tail) > 1 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    path.write_text(text)


def _command() -> str:
    """This run's command line, as RESULTS.md records it (without ``--write``)."""
    return " ".join(
        ["python bench/bench_remote_overhead.py"] + [a for a in sys.argv[1:] if a != "--write"]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a GGUF to use (default: generate one)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="update bench/RESULTS.md")
    args = parser.parse_args()
    from localllm.model_registry.importer import import_gguf
    from localllm.model_registry.store import Store
    from localllm.model_registry.tiny_gguf import write_tiny_model

    work = Path(tempfile.mkdtemp(prefix="bench-remote-"))
    model = args.model or write_tiny_model(
        work / "bench-q8.gguf", n_layer=8, n_embd=512, n_head=8, n_ff=1408,
        vocab_size=32000, file_type="Q8_0",
    )  # fmt: skip
    import_gguf(Store(work / "store"), "bench", model)
    back, direct = start_daemon(work / "store", args.threads, work / "back-logs" / "out.log")
    front_proc, front = start_front(work)
    try:
        added = httpx.post(
            front + "/api/remotes", json={"name": "team", "urls": [direct]}, timeout=60
        )
        added.raise_for_status()
        one = single(direct, front, args.tokens, args.trials)
        agg = four(direct, front, args.tokens, args.trials)
    finally:
        stop(front_proc)
        stop(back)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        f"Machine: {os.cpu_count()} CPUs, {platform.system()} {platform.release()}; load "
        f"average {load:.2f} at the end (other work shares the machine).  ",
        f"Model: {model.name} ({model.stat().st_size / 1e6:.0f} MB); {args.threads} threads; "
        f"{args.tokens} tokens per stream, greedy; {args.trials} interleaved trials.  ",
        "The remote is a localllm daemon on loopback; the front daemon has it as remote `team`.  ",
        f"Command: `{_command()}`",
        "",
        *table(one, agg),
    ]
    print("\n".join(lines))
    if args.write:
        write_results(lines)


if __name__ == "__main__":
    main()
