"""Scheduler logic with fake runners and a fake clock: loading, keep-alive, eviction, queue,
reloads, crashes and GPU placement. (The real runner is covered by the end-to-end suites.)"""

from __future__ import annotations

import asyncio

import pytest

from localllm.daemon.errors import InsufficientMemoryError, ModelLoadError, ServerBusyError
from localllm.daemon.runners.types import DoneEvent, RunnerError, RunnerInfo, TokenEvent
from localllm.daemon.scheduler import (
    LoadTarget,
    MemoryInfo,
    ModelFootprint,
    RunnerOptions,
    Scheduler,
    SchedulerConfig,
    describe_placement,
)
from localllm.daemon.scheduler.memory import parse_nvidia_smi

GIB = 1 << 30


class FakeRunner:
    def __init__(self, spec, gpu_backend: bool = False):
        self.spec = spec
        layers = spec.num_gpu_layers if gpu_backend else 0
        self.info = RunnerInfo(
            backend="cuda" if gpu_backend else "cpu",
            gpu_layers=layers,
            total_layers=3,
            n_ctx=spec.num_ctx,
            n_ctx_train=2048,
            n_parallel=spec.num_parallel,
            n_vocab=100,
            n_embd=64,
            memory_bytes=0,
            vram_bytes=0,
            pid=0,
            load_seconds=0.0,
        )
        self.crashed = False
        self.stopped = False

    @property
    def alive(self) -> bool:
        return not (self.crashed or self.stopped)

    async def generate(self, request):
        yield TokenEvent("x", (1,))
        yield DoneEvent("stop", 1, 1, 1, 0.0, 0.0, 0.0)

    async def stop(self) -> None:
        self.stopped = True

    def last_log_lines(self, n: int = 20) -> list[str]:
        return []


class Harness:
    """A scheduler with a fake clock, fake memory and a factory that records its runners."""

    def __init__(self, gpu_backend: bool = False, free_vram: list[int] | None = None, **config):
        self.now = 1000.0
        self.memory = MemoryInfo(total=16 * GIB, available=12 * GIB)
        self.resident = 0  # what each live runner takes out of "available"
        self.started: list[FakeRunner] = []
        self.gate: asyncio.Event | None = None
        self.fail_next = False
        self.gpu_backend = gpu_backend
        self.scheduler = Scheduler(
            SchedulerConfig(**config),
            self.factory,
            memory_probe=self.probe,
            gpu_probe=lambda: list(free_vram or []),
            clock=lambda: self.now,
        )

    def probe(self) -> MemoryInfo:
        live = sum(1 for runner in self.started if runner.alive)
        return MemoryInfo(self.memory.total, self.memory.available - live * self.resident)

    async def factory(self, spec, log_path):
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_next:
            self.fail_next = False
            raise RunnerError("bad model file")
        runner = FakeRunner(spec, self.gpu_backend)
        self.started.append(runner)
        return runner

    def live(self) -> list[str]:
        return sorted(status.name for status in self.scheduler.status())


def target(name: str, weights: int = GIB) -> LoadTarget:
    footprint = ModelFootprint(weights, n_layer=2, n_embd=64, n_head=4, n_head_kv=4)
    return LoadTarget(name, (f"/models/{name}.gguf",), footprint)


OPTIONS = RunnerOptions(num_ctx=512, num_parallel=2)


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 10))


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_loads_on_first_request_and_reuses_the_runner():
    async def scenario():
        h = Harness()
        async with h.scheduler.lease(target("a"), OPTIONS) as lease:
            assert lease.name == "a" and lease.processor == "100% CPU"
        async with h.scheduler.lease(target("a"), OPTIONS):
            pass
        assert len(h.started) == 1 and h.live() == ["a"]

    run(scenario())


def test_keep_alive_expires_after_the_last_request():
    async def scenario():
        h = Harness(keep_alive=300)
        async with h.scheduler.lease(target("a"), OPTIONS):
            h.now += 1000  # time in use never counts
            await h.scheduler.reap()
            assert h.live() == ["a"]
        h.now += 299
        await h.scheduler.reap()
        assert h.live() == ["a"]
        h.now += 2
        await h.scheduler.reap()
        assert h.live() == [] and h.started[0].stopped

    run(scenario())


def test_each_request_resets_the_expiry_with_its_own_keep_alive():
    async def scenario():
        h = Harness(keep_alive=300)
        async with h.scheduler.lease(target("a"), OPTIONS):
            pass
        h.now += 200
        async with h.scheduler.lease(target("a"), OPTIONS, keep_alive=60):
            pass
        h.now += 59
        await h.scheduler.reap()
        assert h.live() == ["a"]
        h.now += 2
        await h.scheduler.reap()
        assert h.live() == []

    run(scenario())


def test_keep_alive_zero_unloads_right_after_the_request_and_negative_never():
    async def scenario():
        h = Harness()
        async with h.scheduler.lease(target("a"), OPTIONS, keep_alive=0):
            pass
        await settle()
        assert h.live() == [] and h.started[0].stopped
        async with h.scheduler.lease(target("b"), OPTIONS, keep_alive=-1):
            pass
        h.now += 10**9
        await h.scheduler.reap()
        assert h.live() == ["b"]
        assert h.scheduler.status()[0].expires_in is None

    run(scenario())


def test_a_model_in_use_is_never_unloaded_by_keep_alive_zero_of_another_request():
    async def scenario():
        h = Harness()
        first = await h.scheduler.acquire(target("a"), OPTIONS)
        async with h.scheduler.lease(target("a"), OPTIONS, keep_alive=0):
            pass
        await settle()
        assert h.live() == ["a"]  # the first request still holds it
        first.release()
        await settle()
        assert h.live() == []  # now idle, and the last keep_alive was 0

    run(scenario())


def test_max_loaded_models_evicts_the_least_recently_used_idle_model():
    async def scenario():
        h = Harness(max_loaded_models=2)
        for name in ("a", "b"):
            async with h.scheduler.lease(target(name), OPTIONS):
                h.now += 1
        async with h.scheduler.lease(target("a"), OPTIONS):  # a is now the most recent
            h.now += 1
        async with h.scheduler.lease(target("c"), OPTIONS):
            pass
        assert h.live() == ["a", "c"]

    run(scenario())


def test_memory_pressure_evicts_idle_models_and_keeps_busy_ones():
    async def scenario():
        h = Harness()
        h.resident = 3 * GIB
        busy = await h.scheduler.acquire(target("busy", 3 * GIB), OPTIONS)
        async with h.scheduler.lease(target("idle", 3 * GIB), OPTIONS):
            pass
        h.memory = MemoryInfo(total=16 * GIB, available=9 * GIB)  # 3 GiB left, 2.4 usable
        async with h.scheduler.lease(target("new", 3 * GIB), OPTIONS):
            assert h.live() == ["busy", "new"]
        busy.release()

    run(scenario())


def test_a_model_that_cannot_fit_is_refused_with_both_numbers():
    async def scenario():
        h = Harness()
        h.memory = MemoryInfo(total=8 * GIB, available=2 * GIB)
        with pytest.raises(InsufficientMemoryError) as caught:
            await h.scheduler.acquire(target("huge", 6 * GIB), OPTIONS)
        assert "GiB" in str(caught.value) and caught.value.needed > caught.value.available
        assert h.scheduler.pending == 0

    run(scenario())


def test_eviction_waits_for_a_busy_model_to_become_idle():
    async def scenario():
        h = Harness(max_loaded_models=1)
        held = await h.scheduler.acquire(target("a"), OPTIONS)
        waiter = asyncio.ensure_future(h.scheduler.acquire(target("b"), OPTIONS))
        await settle()
        assert not waiter.done() and h.live() == ["a"]
        held.release()
        lease = await waiter
        assert lease.name == "b" and h.live() == ["b"]
        lease.release()

    run(scenario())


def test_changed_runner_options_reload_after_running_requests_finish():
    async def scenario():
        h = Harness()
        old = await h.scheduler.acquire(target("a"), OPTIONS)
        bigger = RunnerOptions(num_ctx=1024, num_parallel=2)
        waiter = asyncio.ensure_future(h.scheduler.acquire(target("a"), bigger))
        await settle()
        assert not waiter.done() and not h.started[0].stopped
        old.release()
        lease = await waiter
        assert h.started[0].stopped and lease.spec.num_ctx == 1024 and len(h.started) == 2
        lease.release()

    run(scenario())


def test_full_queue_answers_busy_immediately():
    async def scenario():
        h = Harness(max_queue=2)
        leases = [await h.scheduler.acquire(target("a"), OPTIONS) for _ in range(2)]
        with pytest.raises(ServerBusyError, match="server busy"):
            await h.scheduler.acquire(target("a"), OPTIONS)
        leases[0].release()
        (await h.scheduler.acquire(target("a"), OPTIONS)).release()
        leases[1].release()
        assert h.scheduler.pending == 0

    run(scenario())


def test_requests_beyond_the_slots_wait_for_a_free_slot():
    async def scenario():
        h = Harness()
        leases = [await h.scheduler.acquire(target("a"), OPTIONS) for _ in range(2)]
        third = asyncio.ensure_future(h.scheduler.acquire(target("a"), OPTIONS))
        await settle()
        assert not third.done() and h.scheduler.pending == 3
        assert h.scheduler.status()[0].busy_slots == 2
        leases[0].release()
        (await third).release()
        leases[1].release()
        assert h.scheduler.status()[0].busy_slots == 0

    run(scenario())


def test_a_crashed_runner_is_dropped_and_the_next_request_starts_a_fresh_one():
    async def scenario():
        h = Harness()
        lease = await h.scheduler.acquire(target("a"), OPTIONS)
        h.started[0].crashed = True
        lease.release(crashed=True)
        assert h.live() == []
        async with h.scheduler.lease(target("a"), OPTIONS):
            pass
        assert len(h.started) == 2 and h.live() == ["a"]

    run(scenario())


def test_a_runner_found_dead_before_use_is_replaced():
    async def scenario():
        h = Harness()
        async with h.scheduler.lease(target("a"), OPTIONS):
            pass
        h.started[0].crashed = True
        async with h.scheduler.lease(target("a"), OPTIONS):
            pass
        assert len(h.started) == 2

    run(scenario())


def test_one_load_at_a_time_while_loaded_models_keep_serving():
    async def scenario():
        h = Harness()
        async with h.scheduler.lease(target("a"), OPTIONS):
            pass
        h.gate = asyncio.Event()
        loading_b = asyncio.ensure_future(h.scheduler.acquire(target("b"), OPTIONS))
        loading_c = asyncio.ensure_future(h.scheduler.acquire(target("c"), OPTIONS))
        await settle()
        async with h.scheduler.lease(target("a"), OPTIONS):  # not blocked by the loads
            pass
        assert not loading_b.done() and not loading_c.done()
        h.gate.set()
        for lease in await asyncio.gather(loading_b, loading_c):
            lease.release()
        assert h.live() == ["a", "b", "c"]

    run(scenario())


def test_concurrent_requests_for_one_model_share_one_load():
    async def scenario():
        h = Harness()
        h.gate = asyncio.Event()
        waiters = [
            asyncio.ensure_future(h.scheduler.acquire(target("a"), OPTIONS)) for _ in range(2)
        ]
        await settle()
        h.gate.set()
        for lease in await asyncio.gather(*waiters):
            lease.release()
        assert len(h.started) == 1

    run(scenario())


def test_a_failed_load_is_reported_and_not_cached():
    async def scenario():
        h = Harness()
        h.fail_next = True
        with pytest.raises(ModelLoadError, match="bad model file"):
            await h.scheduler.acquire(target("a"), OPTIONS)
        assert h.scheduler.pending == 0
        async with h.scheduler.lease(target("a"), OPTIONS):
            pass

    run(scenario())


def test_cancelled_waiter_gives_back_its_place_in_the_queue():
    async def scenario():
        h = Harness(max_queue=2)
        h.gate = asyncio.Event()
        waiter = asyncio.ensure_future(h.scheduler.acquire(target("a"), OPTIONS))
        await settle()
        waiter.cancel()
        await settle()
        assert h.scheduler.pending == 0
        h.gate.set()
        while h.live() != ["a"]:  # the load itself finishes for the next request (run's guard)
            await asyncio.sleep(0)

    run(scenario())


def test_gpu_layers_are_chosen_from_free_vram_and_reported():
    async def scenario():
        h = Harness(gpu_backend=True, free_vram=[8 * GIB])
        async with h.scheduler.lease(target("a"), OPTIONS) as lease:
            assert lease.spec.num_gpu_layers == 3
            assert lease.processor == "100% GPU"

    run(scenario())


def test_a_cpu_build_is_reported_as_cpu_even_when_gpu_layers_were_planned(caplog):
    async def scenario():
        h = Harness(gpu_backend=False, free_vram=[8 * GIB])
        async with h.scheduler.lease(target("a"), OPTIONS) as lease:
            assert lease.processor == "100% CPU"

    run(scenario())
    assert "no GPU backend" in caplog.text


def test_placement_words_and_the_gpu_probes_figures():
    assert describe_placement(0, 17, "cuda") == "100% CPU"
    assert describe_placement(17, 17, "cuda") == "100% GPU"
    assert describe_placement(5, 20, "cuda") == "75%/25% CPU/GPU"
    assert describe_placement(17, 17, "cpu") == "100% CPU"
    assert parse_nvidia_smi("8000\n 512 \nN/A\n") == [8000 << 20, 512 << 20]


@pytest.mark.parametrize("num_gpu", [-1, 999])
def test_an_explicit_gpu_layer_count_that_placement_changes_is_loaded_once(num_gpu):
    """``num_gpu: -1`` on a CPU build (or more layers than fit) is placed as something else;
    the next identical request must reuse the runner, not reload it forever."""

    async def scenario():
        h = Harness(gpu_backend=False)
        options = RunnerOptions(num_ctx=512, num_parallel=2, num_gpu=num_gpu)
        for _ in range(3):
            async with h.scheduler.lease(target("a"), options):
                pass
        assert len(h.started) == 1

    run(scenario())


# -- peers: runners of other kinds (transcription) that share the memory ----------------------
class Peer:
    """Another kind of runner taking ``held`` bytes of the memory the harness reports: the
    scheduler under test asks it to let go."""

    def __init__(self, harness: Harness, held: int):
        self.harness, self.held, self.released = harness, held, 0
        harness.memory = MemoryInfo(harness.memory.total, harness.memory.available - held)

    async def release_idle(self) -> bool:
        if not self.held:
            return False
        memory = self.harness.memory
        self.harness.memory = MemoryInfo(memory.total, memory.available + self.held)
        self.held, self.released = 0, self.released + 1
        return True


def test_a_load_that_needs_room_stops_an_idle_peer_runner_before_unloading_a_model():
    async def scenario():
        h = Harness()
        h.resident = 3 * GIB
        async with h.scheduler.lease(target("a", 3 * GIB), OPTIONS):
            pass
        peer = Peer(h, 6 * GIB)  # 12 - 3 - 6 = 3 GiB free, 2.4 usable: "b" does not fit
        h.scheduler.peers.add(peer)
        async with h.scheduler.lease(target("b", 3 * GIB), OPTIONS):
            assert h.live() == ["a", "b"] and peer.released == 1

    run(scenario())


def test_a_peer_about_to_start_a_runner_gets_room_from_idle_models_only():
    async def scenario():
        h = Harness()
        h.resident = 3 * GIB
        busy = await h.scheduler.acquire(target("busy", 3 * GIB), OPTIONS)
        async with h.scheduler.lease(target("idle", 3 * GIB), OPTIONS):
            pass
        await h.scheduler.free_up("whisper:base", 7 * GIB)  # 6 free, 4.8 usable: not enough
        assert h.live() == ["busy"]  # the idle one went; the busy one is never waited for
        await h.scheduler.free_up("whisper:base", 100 * GIB)  # cannot fit: nothing refused
        assert h.live() == ["busy"]
        busy.release()

    run(scenario())
