"""Whether a step decodes its streams' next tokens in one batch or one at a time.

One ``llama_decode`` of k tokens usually costs far less than k decodes of one: that is what
batching is for. Not on every build and model: on some CPUs a batch of 2 or more Q8_0 tokens
takes matrix-matrix kernels that cost as much for 2 tokens as for 8, so two streams decode
faster one after the other (bench/RESULTS.md: a batch of 2 at 2.9x the time of one token).
The engine therefore times both ways and takes the cheaper, trying the other way now and then
because the machine's load and the context lengths change.

A timing covers the decode and the wait for its result (``timed``): on a GPU ``llama_decode``
returns once the work is queued and the wait lands on whatever reads the logits next, so the
call alone says nothing about what a step costs (a plan that timed it decoded 4 streams apart
on an H200 at 0.55x llama-server). Where the whole model runs on a GPU a batch of k tokens
costs about one token, so the plan is not asked at all there (``batch_is_free``): the streams
always share one decode, and nothing is timed or probed.

Timings taken while other programs use the cores swing widely: one slow batch must not send
the engine to one-at-a-time for good (a bench run once found it decoding 4 streams at the
1-stream rate long after the load had gone). So a single timing moves an average by at most
a quarter of its value, and the batch timing taken on a re-check replaces the stale one.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["DecodePlan"]

_MARGIN = 0.9  # one at a time must look at least 10% cheaper to be chosen
_RECHECK_EVERY = 32  # while one at a time wins: steps between timings of the batch
_CLOSE = 1.5  # while the batch wins by less than this: try one at a time every ...
_PROBE_EVERY = 256  # ... this many steps (also to learn a token's cost at all)
_NEWEST_WEIGHT = 0.25  # of a new timing in the running average
_MOST_CHANGE = 2.0  # a new timing counts as at most this many times (or 1/this) the average


class DecodePlan:
    """Running averages of decode times for steps of single tokens, one per sequence.

    ``batch_is_free``: the model runs wholly on a GPU; every step is one batch, untimed.
    ``clock``: seconds, monotonic (tests give their own)."""

    def __init__(
        self, batch_is_free: bool = False, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.batch_is_free = batch_is_free
        self._clock = clock
        self._single: float | None = None  # seconds for a decode of one token
        self._batched: dict[int, float] = {}  # seconds for one decode of k tokens
        self._steps: dict[int, int] = {}
        self._seen: set[int] = set()
        self._rechecking: set[int] = set()  # sizes whose next batch timing is a re-check

    def one_at_a_time(self, count: int) -> bool:
        """True if ``count`` tokens (of ``count`` sequences) should be decoded separately."""
        if count < 2 or self.batch_is_free:
            return False
        steps = self._steps[count] = self._steps.get(count, 0) + 1
        if count not in self._batched:
            return False  # batching is the usual winner: time it first
        if self._single is None:
            return steps % _PROBE_EVERY == 0  # learn what one token costs, rarely
        apart, together = count * self._single, self._batched[count]
        if apart < _MARGIN * together:
            if steps % _RECHECK_EVERY:
                return True
            self._rechecking.add(count)  # now and then, time the batch again
            return False
        return apart < _CLOSE * together and steps % _PROBE_EVERY == 0

    def timed(self, count: int, decode: Callable[[], None], wait: Callable[[], None]) -> None:
        """Run a decode of ``count`` tokens (one per sequence) and ``wait`` for its result,
        learning from the time of both together. Where the batch is free, only ``decode``
        runs: whatever reads the result next waits for it."""
        if self.batch_is_free:
            decode()
            return
        started = self._clock()
        decode()
        wait()
        self.record(count, self._clock() - started)

    def record(self, count: int, seconds: float) -> None:
        """A decode of ``count`` tokens, one per sequence, took ``seconds``. The first one
        of each size is left out: it includes building that size's compute graph."""
        if count not in self._seen:
            self._seen.add(count)
        elif count == 1:
            self._single = _average(self._single, seconds)
        elif count in self._rechecking:
            self._rechecking.discard(count)
            self._batched[count] = seconds
        else:
            self._batched[count] = _average(self._batched.get(count), seconds)


def _average(old: float | None, new: float) -> float:
    if old is None:
        return new
    new = min(max(new, old / _MOST_CHANGE), old * _MOST_CHANGE)
    return old + _NEWEST_WEIGHT * (new - old)
