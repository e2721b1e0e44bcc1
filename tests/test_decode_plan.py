"""The choice between one batched decode and one decode per stream, from timings alone."""

from __future__ import annotations

import pytest

from localllm.daemon.runners.worker.decode_plan import DecodePlan


def plan_with(single: float | None, batched: dict[int, float]) -> DecodePlan:
    """A plan that has seen these decode times (each twice: the first of a size is ignored)."""
    plan = DecodePlan()
    for count, seconds in ([(1, single)] if single else []) + list(batched.items()):
        plan.record(count, seconds)
        plan.record(count, seconds)
    return plan


def choices(plan: DecodePlan, count: int, steps: int) -> list[bool]:
    return [plan.one_at_a_time(count) for _ in range(steps)]


def test_with_no_timings_the_batch_is_used_and_timed_first():
    assert choices(DecodePlan(), 4, 300) == [False] * 300


def test_a_single_stream_is_never_split():
    assert choices(plan_with(0.001, {2: 1.0}), 1, 300) == [False] * 300


@pytest.mark.parametrize(
    ("single", "batched", "count", "apart_per_256"),
    [
        # Q8_0 on the bench CPU: 2 tokens in one batch cost 2.9x one token: apart, timing
        # the batch again every 32nd step.
        (0.0099, {2: 0.0290}, 2, 248),
        # F16: 4 tokens in 21 ms against 14 ms for one: batched, never tried apart.
        (0.0140, {4: 0.0210}, 4, 0),
        # A close call (apart 1.2x the batch): batched, tried apart every 256th step.
        (0.0100, {4: 0.0333}, 4, 1),
        # Apart only 5% cheaper: within the margin, so the batch stays.
        (0.0100, {4: 0.0420}, 4, 1),
    ],
)
def test_the_cheaper_way_is_chosen(single, batched, count, apart_per_256):
    assert sum(choices(plan_with(single, batched), count, 256)) == apart_per_256


def test_without_a_single_token_timing_it_is_learned_now_and_then():
    plan = plan_with(None, {3: 0.030})
    assert sum(choices(plan, 3, 512)) == 2


def test_the_first_timing_of_a_size_is_left_out():
    plan = DecodePlan()
    plan.record(1, 0.010)
    plan.record(1, 0.010)
    plan.record(2, 5.0)  # the first batch of 2 builds its compute graph
    plan.record(2, 0.015)
    assert choices(plan, 2, 10) == [False] * 10


def test_timings_follow_a_change():
    plan = plan_with(0.010, {2: 0.015})
    assert not plan.one_at_a_time(2)
    for _ in range(10):  # the machine got busy: the batch is now slow
        plan.record(2, 0.040)
    assert plan.one_at_a_time(2)


def test_one_slow_batch_does_not_switch_to_one_at_a_time():
    """A batch caught by a burst of load (10x its usual time) moves the average a little."""
    plan = plan_with(0.010, {4: 0.015})
    plan.record(4, 0.150)
    assert sum(choices(plan, 4, 256)) == 0


def test_after_a_busy_spell_the_first_recheck_brings_the_batch_back():
    """Load made batches look slow, so streams decode one at a time; once the load has gone,
    the batch timed at the next re-check replaces the stale average at once."""
    plan = plan_with(0.010, {4: 0.015})
    for _ in range(20):  # a busy spell: every batch slow
        plan.record(4, 0.200)
    apart = choices(plan, 4, 32)
    assert apart[:-1] == [True] * 31 and apart[-1] is False  # the 32nd step times the batch
    plan.record(4, 0.015)  # the machine is quiet again
    assert choices(plan, 4, 256) == [False] * 256


class FakeDevice:
    """A device whose decode call returns once the work is queued (``launch`` seconds of host
    work) and whose wait takes the rest (``work`` seconds), both by decode size, on a fake
    clock: the way a GPU build behaves."""

    def __init__(self, launch: dict[int, float], work: dict[int, float]):
        self.now = 0.0
        self.launch, self.work = launch, work
        self.queued = 0.0
        self.decodes: list[int] = []

    def clock(self) -> float:
        return self.now

    def decode(self, count: int) -> None:
        self.now += self.launch[count]
        self.queued += self.work[count]
        self.decodes.append(count)

    def wait(self) -> None:
        self.now += self.queued
        self.queued = 0.0


def run_steps(plan: DecodePlan, device: FakeDevice, streams: int, steps: int) -> None:
    """Drive ``plan`` as the engine does: ask, then decode (and time) as it says."""
    for _ in range(steps):
        if plan.one_at_a_time(streams):
            for _ in range(streams):
                plan.timed(1, lambda: device.decode(1), device.wait)
        else:
            plan.timed(streams, lambda: device.decode(streams), device.wait)


def test_a_timing_includes_the_wait_for_the_result():
    """On a GPU a lone token's call returns fast and a batch's call does more host work, while
    the device needs about as long for 4 tokens as for one. Timed through the wait, the batch
    wins; timed by the calls alone (0.2 ms x 4 against 2 ms) one at a time would have won."""
    device = FakeDevice(launch={1: 0.0002, 4: 0.002}, work={1: 0.005, 4: 0.0055})
    plan = DecodePlan(clock=device.clock)
    run_steps(plan, device, 4, 1024)
    # one at a time only on the 256th steps that learn what a lone token costs, and once
    # learned (5.2 ms, against 7.5 ms for all 4), no more
    assert device.decodes.count(1) == 4
    assert device.queued == 0.0  # every timed decode waited for its work


def test_cpu_timings_still_decode_apart():
    """A CPU whose batch of 2 costs 2.9x one token (the Q8_0 case): the decode is the work,
    and the plan keeps choosing one at a time, re-timing the batch now and then."""
    device = FakeDevice(launch={1: 0.0099, 2: 0.029}, work={1: 0.0, 2: 0.0})
    plan = DecodePlan(clock=device.clock)
    run_steps(plan, device, 2, 256)  # batched and timed, then a lone token's cost learned
    device.decodes.clear()
    run_steps(plan, device, 2, 512)
    assert device.decodes.count(2) == 512 // 32  # the re-checks of the batch
    assert device.decodes.count(1) == 2 * (512 - 512 // 32)


def test_where_the_batch_is_free_nothing_is_split_or_timed():
    """The whole model on a GPU: every step one batch, even after timings that would say
    otherwise, and no clock read nor wait (whatever reads the logits waits for them)."""
    device = FakeDevice(launch={4: 0.0}, work={4: 0.005})

    def no_clock() -> float:
        raise AssertionError("a free batch is not timed")

    plan = DecodePlan(batch_is_free=True, clock=no_clock)
    for count, seconds in ((1, 0.001), (1, 0.001), (4, 0.5), (4, 0.5)):
        plan.record(count, seconds)
    run_steps(plan, device, 4, 300)
    assert device.decodes == [4] * 300
    assert device.queued > 0  # never waited here
