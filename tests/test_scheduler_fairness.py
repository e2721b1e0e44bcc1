"""A load that needs an eviction is served in turn, however busy the model it evicts.

Fake runners and memory from ``test_scheduler``; the probes run inline (``InlineExecutor``),
so the order of events depends on the event loop alone and every run is the same. A model
under continuous traffic (one request for it always in flight) must still give way: it is
drained (no new requests), its running requests finish, the waiting load goes first, and its
own later requests load it again after. A wait that could never end is refused at once."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from localllm.daemon.errors import EvictionBlockedError, InsufficientMemoryError
from localllm.daemon.runners.types import DoneEvent, GenerateCall
from localllm.daemon.scheduler import MemoryInfo, RunnerOptions
from localllm.daemon.server.errors import error_status
from tests.test_scheduler import GIB, OPTIONS, Harness, run, target

TRAFFIC = 100  # requests for the busy model; the old scheduler served all of them first


class InlineExecutor(ThreadPoolExecutor):
    """Runs ``asyncio.to_thread`` work (the fake probes) at once, on the loop's thread."""

    def submit(self, fn, /, *args, **kwargs):
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:  # handed to the awaiting coroutine, as a thread would
            future.set_exception(error)
        return future


def scenario(coroutine_function):
    """Run ``coroutine_function()`` on a loop whose probes run inline (``run``'s bound is
    only a guard: a scheduler that never serves fails the test instead of hanging it)."""

    async def inline():
        asyncio.get_running_loop().set_default_executor(InlineExecutor())
        await coroutine_function()

    run(inline())


def room_for_one(kind: str) -> tuple[Harness, int]:
    """A harness with room for one model (by count or by memory) and the models' weights."""
    if kind == "max_loaded_models":
        return Harness(max_loaded_models=1), GIB
    h = Harness()
    h.resident = 3 * GIB  # each runner takes what its estimate says, about
    h.memory = MemoryInfo(total=16 * GIB, available=5 * GIB)  # 4 GiB usable: one 3 GiB model
    return h, 3 * GIB


async def until(condition) -> None:
    """Yield to the loop until ``condition()`` holds."""
    while not condition():
        await asyncio.sleep(0)


def draining(h: Harness, name: str) -> bool:
    return any(status.name == name and status.draining for status in h.scheduler.status())


async def acquire_entered(h: Harness, model, options=OPTIONS) -> asyncio.Future:
    """Issue a request; return once the scheduler has it (served, or waiting its turn)."""
    entered = asyncio.Event()

    async def request():
        entered.set()  # acquire runs on at once, up to the point where it waits
        return await h.scheduler.acquire(model, options)

    task = asyncio.ensure_future(request())
    await entered.wait()
    return task


@pytest.mark.parametrize("kind", ["max_loaded_models", "memory"])
def test_a_model_under_continuous_traffic_gives_way_to_a_waiting_load(kind):
    async def body():
        h, weights = room_for_one(kind)
        a, b = target("a", weights), target("b", weights)
        served: list[str] = []
        lease = await h.scheduler.acquire(a, OPTIONS)
        served.append("a0")

        async def other():
            async with h.scheduler.lease(b, OPTIONS):
                served.append("b")

        waiting_b = asyncio.ensure_future(other())
        for k in range(1, TRAFFIC):  # each next request is issued before the last lets go
            following = await acquire_entered(h, a)
            lease.release()
            lease = await following
            served.append(f"a{k}")
        lease.release()
        await waiting_b

        turn = served.index("b")
        assert turn < 20  # B waited for the few A requests issued before it, not for all
        assert served == [f"a{k}" for k in range(turn)] + ["b"] + [
            f"a{k}" for k in range(turn, TRAFFIC)
        ]  # A's later requests, each in order, after B
        assert [runner.spec.model_name for runner in h.started] == ["a", "b", "a"]
        assert h.live() == ["a"] and h.scheduler.pending == 0

    scenario(body)


def test_a_draining_models_running_requests_finish_and_new_ones_wait_their_turn():
    async def body():
        h = Harness(max_loaded_models=1)
        a, b = target("a"), target("b")
        first, second = [await h.scheduler.acquire(a, OPTIONS) for _ in range(2)]
        queued = await acquire_entered(h, a)  # holds "a", waits for one of its 2 slots
        loading_b = await acquire_entered(h, b)
        await until(lambda: draining(h, "a"))
        late = await acquire_entered(h, a)  # arrives while "a" drains: waits for B first

        first.release()
        running = await queued  # a request that held "a" before the drain still runs
        call = GenerateCall("hello")
        events = [event async for event in running.runner.generate(call)]
        assert isinstance(events[-1], DoneEvent)
        assert not late.done() and not loading_b.done() and h.live() == ["a"]

        second.release()
        running.release()
        b_lease = await loading_b
        assert h.live() == ["b"] and not late.done()
        b_lease.release()
        (await late).release()
        assert [runner.spec.model_name for runner in h.started] == ["a", "b", "a"]

    scenario(body)


def test_only_the_least_recently_used_model_needed_is_drained():
    async def body():
        h = Harness(max_loaded_models=2)
        older = await h.scheduler.acquire(target("c"), OPTIONS)
        h.now += 1
        newer = await h.scheduler.acquire(target("a"), OPTIONS)
        h.now += 1
        older.release()  # its last use is now the latest: the LRU is by last use
        older = await h.scheduler.acquire(target("c"), OPTIONS)
        loading_b = await acquire_entered(h, target("b"))
        await until(lambda: draining(h, "a"))
        assert not draining(h, "c")
        (await h.scheduler.acquire(target("c"), OPTIONS)).release()  # c takes requests
        newer.release()
        (await loading_b).release()
        assert h.live() == ["b", "c"]
        older.release()

    scenario(body)


def test_a_model_that_would_not_fit_even_alone_is_refused_without_draining_any():
    async def body():
        h, weights = room_for_one("memory")
        held = await h.scheduler.acquire(target("a", weights), OPTIONS)
        with pytest.raises(InsufficientMemoryError) as caught:
            await h.scheduler.acquire(target("huge", 6 * GIB), OPTIONS)
        message = str(caught.value)
        assert "even after unloading the 1 loaded model" in message and "GiB" in message
        assert caught.value.needed > caught.value.available
        assert error_status(caught.value) == 507  # as when nothing is loaded
        (await h.scheduler.acquire(target("a", weights), OPTIONS)).release()  # not drained
        held.release()
        assert h.scheduler.pending == 0

    scenario(body)


def test_a_load_that_needs_a_model_its_own_request_holds_is_a_503_with_the_reason():
    async def body():
        h = Harness(max_loaded_models=1)
        held = await h.scheduler.acquire(target("a"), OPTIONS)
        with pytest.raises(EvictionBlockedError) as caught:
            await h.scheduler.acquire(target("b"), OPTIONS)  # the same task still holds "a"
        message = str(caught.value)
        assert "'b'" in message and "'a'" in message
        assert "LOCALLLM_MAX_LOADED_MODELS is 1" in message
        assert error_status(caught.value) == 503
        assert not draining(h, "a")
        (await h.scheduler.acquire(target("a"), OPTIONS)).release()  # "a" still serves
        held.release()
        assert h.live() == ["a"] and h.scheduler.pending == 0

    scenario(body)


def test_a_reload_that_needs_a_model_its_own_request_holds_is_a_503_with_the_reason():
    async def body():
        h = Harness()
        held = await h.scheduler.acquire(target("a"), OPTIONS)
        bigger = RunnerOptions(num_ctx=1024, num_parallel=2)
        with pytest.raises(EvictionBlockedError, match="it runs with other options") as caught:
            await h.scheduler.acquire(target("a"), bigger)
        assert error_status(caught.value) == 503
        (await h.scheduler.acquire(target("a"), OPTIONS)).release()  # not left stale
        held.release()
        assert len(h.started) == 1 and h.scheduler.pending == 0

    scenario(body)
