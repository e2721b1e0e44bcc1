"""The choice between one batched decode and one decode per stream, from timings alone."""

from __future__ import annotations

import pytest

from daemon.runners.worker.decode_plan import DecodePlan


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
