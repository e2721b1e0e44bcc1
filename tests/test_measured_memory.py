"""llama.cpp's measured buffers, kept per model and settings: after one load the next plan for
the same model and settings is llama.cpp's figures to the byte; the file is private, bounded
and written whole, and one that is corrupt is ignored. And the scheduler sizes loads by the
plan: what it checks free memory against, what ``ps`` reports and the default context."""

from __future__ import annotations

import asyncio
import json
import stat

import pytest

from localllm.daemon.errors import InsufficientMemoryError
from localllm.daemon.runners.process import RunnerProcess
from localllm.daemon.runners.types import LlamaBuffer, RunnerSpec
from localllm.daemon.scheduler import (
    LoadTarget,
    MemoryInfo,
    ModelFootprint,
    RunnerOptions,
    Scheduler,
    SchedulerConfig,
)
from localllm.daemon.scheduler import measured as measured_module
from localllm.daemon.scheduler.loader import RunnerLoader
from localllm.daemon.scheduler.measured import MeasuredBuffers
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.model_writers.gemma3 import write_tiny_gemma3

GIB = 1 << 30
MIB = 1 << 20
OPTIONS = RunnerOptions(num_ctx=1024, num_parallel=2, num_threads=1, host_cache_bytes=0)
BUFFERS = (
    LlamaBuffer("model", "CPU_Mapped", "weights", 1234),
    LlamaBuffer("context", "CPU", "kv", 5678),
)


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 120))


async def start_runner(spec: RunnerSpec, log_path):
    return await RunnerProcess.start(spec, log_path=log_path)


def scheduler(memory_file, factory=start_runner, **probes) -> Scheduler:
    config = SchedulerConfig(memory_file=memory_file, keep_alive=-1)
    return Scheduler(config, factory, gpu_probe=lambda: [], **probes)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = write_tiny_model(tmp_path_factory.mktemp("m") / "tiny.gguf", n_head=2, seed=21)
    return LoadTarget("tiny", (str(path),), ModelFootprint(path.stat().st_size))


def by_kind(parts) -> dict[str, int]:
    found: dict[str, int] = {}
    for part in parts:
        found[part.kind] = found.get(part.kind, 0) + part.bytes
    return found


def test_after_one_load_the_plan_is_llama_cpps_figures(model, tmp_path):
    memory_file = tmp_path / "memory.json"

    async def scenario():
        sched = scheduler(memory_file)
        before = (await sched.plan(model, OPTIONS)).memory
        async with sched.lease(model, OPTIONS) as lease:
            buffers = lease.runner.info.buffers
        after = (await sched.plan(model, OPTIONS)).memory
        loaded = sched.status()[0]
        await sched.shutdown()
        return before, buffers, after, loaded

    before, buffers, after, loaded = run(scenario())
    assert not before.measured and after.measured
    real: dict[str, int] = {}
    for buffer in buffers:
        kind = "weights" if buffer.part == "model" else buffer.kind
        real[kind] = real.get(kind, 0) + buffer.bytes
    assert by_kind(after.parts) == {k: v for k, v in real.items() if v}  # to the byte
    assert after.total() == sum(b.bytes for b in buffers)
    assert loaded.memory == before and loaded.estimate_bytes == before.total()  # ps's size
    # another daemon on the same data folder starts with them
    again = run(scheduler(memory_file).plan(model, OPTIONS)).memory
    assert again == after
    assert stat.S_IMODE(memory_file.stat().st_mode) == 0o600
    # other settings are planned, not measured
    other = run(scheduler(memory_file).plan(model, RunnerOptions(num_ctx=2048))).memory
    assert not other.measured


@pytest.mark.parametrize(
    "content",
    [b"\x00\xffnot json", b"[1, 2, 3]", b'{"version": 1, "entries": [["k", [[1, 2]]]]}', b""],
)
def test_a_corrupt_file_is_ignored_and_replaced(tmp_path, content):
    path = tmp_path / "memory.json"
    path.write_bytes(content)
    store = MeasuredBuffers(path)
    assert store.lookup("k") is None
    store.record("k", BUFFERS)
    assert MeasuredBuffers(path).lookup("k") == BUFFERS


def test_a_file_too_big_to_be_ours_is_not_read(tmp_path):
    path = tmp_path / "memory.json"
    entry = [["k", [["model", "CPU", "weights", 1]]]]
    path.write_text(json.dumps({"version": 1, "entries": entry}) + " " * (5 << 20))
    assert MeasuredBuffers(path).lookup("k") is None


def test_the_file_keeps_the_most_recent_entries(tmp_path, monkeypatch):
    monkeypatch.setattr(measured_module, "MOST_ENTRIES", 3)
    store = MeasuredBuffers(tmp_path / "memory.json")
    for key in "abcd":
        store.record(key, BUFFERS)
    store.record("b", BUFFERS)  # used again: the newest
    reread = MeasuredBuffers(tmp_path / "memory.json")
    assert [reread.lookup(k) is not None for k in "abcd"] == [False, True, True, True]
    store.record("e", BUFFERS)
    reread = MeasuredBuffers(tmp_path / "memory.json")
    assert [reread.lookup(k) is not None for k in "bcde"] == [True, False, True, True]


class FakeRunner:
    """A runner that loads nothing: the scheduler's decisions are what these tests check."""

    def __init__(self, spec: RunnerSpec):
        from localllm.daemon.runners.types import RunnerInfo

        self.spec = spec
        info = ("cpu", 0, 3, spec.num_ctx, 32768, spec.num_parallel, 0, 0, 0, 0, 0, 0.0)
        self.info = RunnerInfo(*info)

    @property
    def alive(self) -> bool:
        return True

    async def stop(self) -> None:
        pass


async def fake_factory(spec, log_path):
    return FakeRunner(spec)


@pytest.fixture(scope="module")
def big_vocabulary(tmp_path_factory):
    """Gemma-3-like, 262k tokens: 36 MB of weights, but a 512 MiB compute buffer (logits)."""
    path = write_tiny_gemma3(tmp_path_factory.mktemp("v") / "v.gguf", vocab_size=262_144)
    return LoadTarget("big", (str(path),), ModelFootprint(path.stat().st_size, 6, 64, 4, 1))


def test_a_load_is_checked_against_its_plan_not_its_file_size(big_vocabulary):
    """400 MiB free would hold the weights and caches many times over (the old estimate:
    weights + KV + 96 MiB), not the 512 MiB of logits llama.cpp reserves: refused."""
    free = MemoryInfo(total=8 * GIB, available=500 * MIB)  # 400 MiB after the headroom
    sched = scheduler(None, fake_factory, memory_probe=lambda: free)
    with pytest.raises(InsufficientMemoryError):
        run(sched.acquire(big_vocabulary, OPTIONS))
    assert sched.status() == []
    plenty = scheduler(None, fake_factory, memory_probe=lambda: MemoryInfo(8 * GIB, 4 * GIB))

    async def load():
        async with plenty.lease(big_vocabulary, OPTIONS):
            return plenty.status()[0]

    planned = run(load())
    assert 512 * MIB < planned.estimate_bytes < 600 * MIB  # what ps reports as its size
    assert planned.memory.kind_bytes("compute") > 512 * MIB


def test_the_default_context_is_the_largest_the_plan_fits(big_vocabulary):
    """A Gemma-3-like model with a 32k training context and 4 slots: the context per slot is
    the largest whose whole plan fits free RAM, not one step more."""
    loader = RunnerLoader(None, lambda: [])
    spec = RunnerSpec("big", big_vocabulary.model_paths, num_ctx=0, num_parallel=4)
    target = LoadTarget(
        "big", big_vocabulary.model_paths, big_vocabulary.footprint, n_ctx_train=32768
    )
    at = {}
    for ctx in (4096, 8192):
        fixed = RunnerSpec("big", target.model_paths, num_ctx=ctx, num_parallel=4)
        at[ctx] = run(loader.plan(target, fixed)).ram_bytes
    free = (at[4096] + at[8192]) / 2
    plan = run(loader.plan(target, spec, free))
    chosen = plan.spec.num_ctx
    assert 4096 <= chosen < 8192
    assert plan.context_reason.startswith(f"the largest context that fits: {chosen:,} tokens")
    assert plan.ram_bytes <= free
    one_more = RunnerSpec("big", target.model_paths, num_ctx=chosen + 256, num_parallel=4)
    assert run(loader.plan(target, one_more)).ram_bytes > free
