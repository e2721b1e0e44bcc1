"""Requests that reach an idle runner together start in one decode (their prompts batched); a
request alone is not held back for others that never come.

The worker's inbox here notes each wait the worker asks for: the test sends the next requests
once the worker is waiting for them, and reads how long it meant to wait, instead of racing
its few milliseconds against a busy machine."""

from __future__ import annotations

import contextlib
import queue
import tempfile
import threading
from collections.abc import Iterator

import llama_cpp
import pytest

from localllm.daemon.runners.frames import GenerateOp, ShutdownOp
from localllm.daemon.runners.protocol import FrameWriter
from localllm.daemon.runners.types import GenerateCall, SamplingParams
from localllm.daemon.runners.worker import loop as worker_loop
from localllm.daemon.runners.worker.loop import Worker
from localllm.daemon.runners.worker.model import Model
from tests.support.polling import wait_for
from tests.support.runner import make_spec

WINDOW = 0.02  # the most a request that wakes an idle runner waits for company, in all


@pytest.fixture(scope="module")
def model(tiny_q8_model_path):
    llama_cpp.llama_backend_init()
    loaded = Model.load(make_spec(tiny_q8_model_path, num_parallel=4, num_threads=1))
    yield loaded
    loaded.close()


class WatchedInbox(queue.SimpleQueue):
    """The worker's inbox; ``waits`` holds the timeout of every wait the worker made on it
    (the gathering: its other reads either block until a message comes or do not wait)."""

    def __init__(self):
        super().__init__()
        self.waits: list[float] = []

    def get(self, block: bool = True, timeout: float | None = None):
        if block and timeout is not None:
            self.waits.append(timeout)
        return super().get(block, timeout)


class IdleWorker:
    """A worker on its own thread with an idle engine; ``first`` is what its first decode
    step held (requests) and the waits it made before that step."""

    def __init__(self, model: Model, out: FrameWriter):
        self.worker = Worker(model.spec, model, 1, out)
        self.inbox = WatchedInbox()
        self.first: tuple[int, list[float]] | None = None
        engine, step = self.worker.engine, self.worker.engine.step

        def recording_step() -> None:
            if self.first is None:
                self.first = (len(engine.waiting) + len(engine.active), list(self.inbox.waits))
            step()

        engine.step = recording_step
        self._thread = threading.Thread(target=self.worker.run, args=(self.inbox,))
        self._thread.start()

    def send(self, rid: int) -> None:
        call = GenerateCall(f"story {rid}: once upon", SamplingParams(seed=rid, max_tokens=4))
        self.inbox.put(GenerateOp(rid, call))

    def first_decode(self) -> tuple[int, list[float]]:
        assert wait_for(lambda: self.first is not None and not self.worker.engine.busy, 60)
        return self.first

    def stop(self) -> None:
        self.inbox.put(ShutdownOp())
        self._thread.join(60)


@contextlib.contextmanager
def idle_worker(model: Model) -> Iterator[IdleWorker]:
    with tempfile.TemporaryFile() as sink:
        idle = IdleWorker(model, FrameWriter(sink.fileno()))
        try:
            yield idle
        finally:
            idle.stop()


def test_requests_that_come_while_the_worker_gathers_share_the_first_decode(model, monkeypatch):
    # The gathering window, a few milliseconds, made long: "while it gathers" on any machine.
    monkeypatch.setattr(worker_loop, "_GATHER_SECONDS", 60.0)
    monkeypatch.setattr(worker_loop, "_GATHER_MOST_SECONDS", 60.0)
    with idle_worker(model) as idle:
        idle.send(1)
        assert wait_for(lambda: idle.inbox.waits), "the worker started alone without gathering"
        for rid in (2, 3, 4):  # the last fills the slots: the first decode starts at once
            idle.send(rid)
        held, _ = idle.first_decode()
    assert held == 4


def test_a_request_alone_is_not_held_back_past_the_gathering_window(model):
    with idle_worker(model) as idle:
        idle.send(1)
        held, waits = idle.first_decode()  # it came with no second request ever sent
    assert held == 1
    assert 0 < sum(waits) <= WINDOW  # what it meant to wait, not what a busy machine made it
