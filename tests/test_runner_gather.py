"""Requests that reach an idle runner a few milliseconds apart start in one decode (their
prompts batched); a request alone is not held back for others that never come."""

from __future__ import annotations

import queue
import tempfile
import threading
import time

import llama_cpp
import pytest

from daemon.runners.protocol import FrameWriter, generate_to_wire
from daemon.runners.types import GenerateCall, SamplingParams
from daemon.runners.worker.loop import Worker
from daemon.runners.worker.model import Model
from tests.support.runner import make_spec


@pytest.fixture(scope="module")
def model(tiny_q8_model_path):
    llama_cpp.llama_backend_init()
    loaded = Model.load(make_spec(tiny_q8_model_path, num_parallel=4, num_threads=1))
    yield loaded
    loaded.close()


def generate(rid: int) -> dict:
    call = GenerateCall(f"story {rid}: once upon a time", SamplingParams(seed=rid, max_tokens=4))
    return {"op": "generate", "id": rid, "req": generate_to_wire(call)}


def first_decode(model: Model, gaps: list[float]) -> tuple[list[int], float]:
    """Send one request to an idle worker, then one more after each of ``gaps`` seconds; the
    number of requests the first decode step held, and how long after the first request it
    began."""
    with tempfile.TemporaryFile() as sink:
        worker = Worker(model.spec, model, 1, FrameWriter(sink.fileno()))
        engine = worker.engine
        seen: list[int] = []
        began = []
        step = engine.step

        def recording_step() -> None:
            if not seen:
                began.append(time.monotonic())
                seen.append(len(engine.waiting) + len(engine.active))
            step()

        engine.step = recording_step
        inbox: queue.SimpleQueue = queue.SimpleQueue()
        loop = threading.Thread(target=worker.run, args=(inbox,))
        loop.start()
        sent = time.monotonic()
        inbox.put(generate(1))
        for rid, gap in enumerate(gaps, 2):
            time.sleep(gap)
            inbox.put(generate(rid))
        while engine.busy or not began:
            time.sleep(0.01)
        inbox.put({"op": "shutdown"})
        loop.join(10)
    return seen, began[0] - sent


def test_requests_a_millisecond_apart_share_the_first_decode(model):
    seen, _ = first_decode(model, [0.0005, 0.0005])
    assert seen == [3]


def test_a_request_alone_starts_within_the_gathering_window(model):
    seen, delay = first_decode(model, [0.2])  # the second comes long after the window
    assert seen == [1]
    assert delay < 0.1
