"""Memory benchmark: the memory plan against llama.cpp's own buffers, and the old estimate.

    python bench/memory_plan.py [--no-rss] [--threads 2]

1. The matrix of ``tests/test_memory_matrix.py`` (generated models x cache type x flash
   attention x slots x context), each cell's model loaded and context made in this process as
   the runner makes them: the plan's total, llama.cpp's (weights, caches, output, compute),
   the error, and what the old formula said (weights file + a full-size cache in every layer
   + 96 MiB, + the attention scores where flash attention was off).
2. Gemma 3 270M Q4_K_M (the real-model tier) at 4 slots x 4,096 and x 32,768 tokens, f16: the
   same columns.

For every row, the runner process's resident memory (``/proc/<pid>/status`` VmRSS, and its
peak VmHWM) after four long generations at once (prompts of up to 2,000 tokens and 256 tokens
each), in the real runner subprocess (``--no-rss``: without those columns).

Prints a Markdown table for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from localllm.daemon.runners.attention import attention_scores_bytes  # noqa: E402
from localllm.daemon.runners.process import RunnerProcess  # noqa: E402
from localllm.daemon.runners.types import DoneEvent, GenerateCall, RunnerSpec, SamplingParams  # noqa: E402
from localllm.daemon.scheduler.memory_plan import plan_memory, plan_settings  # noqa: E402
from localllm.daemon.scheduler.repack import repacked_types  # noqa: E402
from localllm.model_registry.gguf_info import read_gguf_info  # noqa: E402
from localllm.model_registry.model_shape import read_model_shape  # noqa: E402
from tests.support.llama_buffers import MeasuredModel  # noqa: E402
from tests.test_memory_matrix import CELLS, MODELS, spec_for  # noqa: E402

MIB = 1 << 20
OLD_MARGIN_BYTES = 96 << 20  # the old formula's fixed allowance for compute and the runner
OLD_BYTES_PER_VALUE = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}
LONG = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=256, ignore_eos=True)


def old_estimate(path: Path, spec: RunnerSpec, flash: bool) -> int:
    """What the scheduler estimated before the plan (kept here for the table's history):
    the file's size + K and V of every layer for every cell of every slot + a fixed 96 MiB,
    + one layer's attention scores without flash attention."""
    info = read_gguf_info(path)
    n_head = info.head_count or 0
    head = (info.key_length or (info.embedding_length or 0) // n_head) if n_head else 0
    width = head * (info.head_count_kv or n_head) if n_head else info.embedding_length or 0
    values = 2 * (info.block_count or 0) * spec.num_ctx * spec.num_parallel * width
    kv = int(values * OLD_BYTES_PER_VALUE[spec.kv_cache_type])
    batch = max(spec.num_batch, spec.num_parallel)
    scores = 0 if flash else attention_scores_bytes(n_head, spec.num_ctx, batch)
    return path.stat().st_size + kv + OLD_MARGIN_BYTES + scores


def row(name: str, cell: str, path: Path, spec: RunnerSpec, measured: MeasuredModel) -> list:
    shape = read_model_shape(path)
    plan = plan_memory(shape, plan_settings(spec, shape, repack_types=repacked_types()))
    buffers, _ = measured.context(spec)
    real = sum(b.bytes for b in buffers)
    compute = sum(b.bytes for b in buffers if b.kind == "compute")
    old = old_estimate(path, spec, plan.settings.flash_attention)
    return [
        name,
        cell,
        plan.total() / MIB,
        real / MIB,
        100 * (plan.total() / real - 1),
        plan.kind_bytes("compute") / MIB,
        compute / MIB,
        old / MIB,
        100 * (old / real - 1),
    ]


def matrix(root: Path, threads: int, rss: bool) -> list[list]:
    rows = []
    for i, (name, write) in enumerate(MODELS.items()):
        path = write(root / f"{i}.gguf")
        measured = MeasuredModel(spec_for(path, *CELLS[0]))
        try:
            for cell in CELLS:
                kv, flash, slots, ctx = cell
                label = f"{kv}, flash {flash}, {slots} x {ctx:,}"
                spec = spec_for(path, *cell)
                found = row(name, label, path, spec, measured)
                if rss:
                    found += _resident(spec, threads)
                rows.append(found)
        finally:
            measured.close()
    return rows


def _resident(spec: RunnerSpec, threads: int) -> list[float]:
    """The runner's resident and peak memory, in MiB, after four long generations."""
    threaded = dataclasses.replace(spec, num_threads=threads)
    resident, peak = asyncio.run(resident_after_generation(threaded))
    return [resident / MIB, peak / MIB]


async def resident_after_generation(spec: RunnerSpec) -> tuple[int, int]:
    """VmRSS and VmHWM of the runner after four long generations at once (prompts of up to
    2,000 tokens, fewer where the context is short, and 256 tokens each)."""
    runner = await RunnerProcess.start(spec)
    try:
        sentence = "Once upon a time, in a land far away, there lived a king. "
        room = min(2000, spec.num_ctx - LONG.max_tokens - 64)  # the context is per slot
        prompt = sentence * max(1, room // len(await runner.tokenize(sentence, add_bos=False)))

        async def one(i: int) -> None:
            async for event in runner.generate(GenerateCall(f"{i}. {prompt}", LONG)):
                if isinstance(event, DoneEvent):
                    return

        await asyncio.gather(*(one(i) for i in range(4)))
        status = Path(f"/proc/{runner.info.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        return (int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024)
    finally:
        await runner.stop()


def gemma(threads: int, rss: bool) -> list[list]:
    from tests.support.real_model import gemma_path

    path = gemma_path()
    rows = []
    for ctx in (4096, 32768):
        spec = spec_for(path, "f16", "auto", 4, ctx)
        measured = MeasuredModel(spec)
        try:
            found = row("Gemma 3 270M Q4_K_M", f"f16, auto, 4 x {ctx:,}", path, spec, measured)
        finally:
            measured.close()
        if rss:
            found += _resident(spec, threads)
        rows.append(found)
    return rows


def markdown(rows: list[list], with_rss: bool) -> str:
    head = "| model | cache, flash, slots x context | plan MiB | llama.cpp MiB | plan error "
    head += "| plan compute | llama.cpp compute | old estimate MiB | old error |"
    rule = "|---|---|---:|---:|---:|---:|---:|---:|---:|"
    if with_rss:
        head += " runner RSS MiB | peak RSS MiB |"
        rule += "---:|---:|"
    lines = [head, rule]
    for r in rows:
        cells = [r[0], r[1], f"{r[2]:,.1f}", f"{r[3]:,.1f}", f"{r[4]:+.1f}%"]
        cells += [f"{r[5]:,.1f}", f"{r[6]:,.1f}", f"{r[7]:,.1f}", f"{r[8]:+.0f}%"]
        if with_rss:
            cells += [f"{x:,.0f}" for x in r[9:11]] if len(r) > 9 else ["", ""]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-rss", action="store_true", help="skip the runners' RSS columns")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        rows = matrix(Path(root), args.threads, not args.no_rss)
    rows += gemma(args.threads, not args.no_rss)
    print(markdown(rows, not args.no_rss))


if __name__ == "__main__":
    main()
