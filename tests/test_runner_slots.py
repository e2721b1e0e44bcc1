"""Slots under load: prefix reuse, context limits, cancellation, and chunked prefill."""

from __future__ import annotations

import asyncio
import random
import string
from dataclasses import replace

import pytest

from localllm.daemon.runners.types import ContextOverflowError, DoneEvent, GenerateCall, TokenEvent
from tests.support.runner import GREEDY, collect, make_spec, write_tiny_model


@pytest.fixture(scope="module")
def model_path(tiny_model_path):
    """The suite's shared tiny model (conftest writes it once per session)."""
    return tiny_model_path


@pytest.fixture(scope="module")
def runner(harness, model_path):
    return harness.start(make_spec(model_path, num_ctx=1024))


def _words(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=5)) for _ in range(n))


def test_prefix_reuse_decodes_only_new_tokens(harness, runner):
    base = "<|im_start|>system\n" + _words(60) + "<|im_end|>\n"
    first = harness.run(collect(runner, base + "first question"))
    assert first.done.prompt_evaluated == first.done.prompt_tokens > 100
    second = harness.run(collect(runner, base + "second question, longer"))
    a = harness.run(runner.tokenize(base + "first question"))
    b = harness.run(runner.tokenize(base + "second question, longer"))
    common = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
    assert common > 100
    assert second.done.prompt_evaluated == len(b) - common
    again = harness.run(collect(runner, base + "second question, longer"))
    assert again.done.prompt_evaluated == 1  # the last token is decoded again for its logits
    assert again.text == second.text


def test_prompt_longer_than_context_is_an_error(harness, runner):
    prompt = _words(600, seed=1)
    n = len(harness.run(runner.tokenize(prompt)))
    assert n >= 1024
    with pytest.raises(ContextOverflowError) as caught:
        harness.run(collect(runner, prompt))
    assert caught.value.prompt_tokens == n and caught.value.context == 1024
    assert str(n) in str(caught.value) and "1024" in str(caught.value)
    assert runner.alive


def test_generation_stops_when_the_context_is_full(harness, model_path):
    small = harness.start(make_spec(model_path, num_ctx=64, num_parallel=1))
    stream = harness.run(collect(small, "Hello", replace(GREEDY, max_tokens=None)))
    assert stream.done.reason == "length"
    assert stream.done.prompt_tokens + stream.done.completion_tokens == 65
    harness.run(small.stop())


def test_cancel_frees_the_slot_at_once(harness, runner):
    long = replace(GREEDY, max_tokens=None)

    async def scenario():
        streams = [runner.generate(GenerateCall(f"Long {i}", long)) for i in range(4)]
        for stream in streams:
            assert isinstance(await anext(stream), TokenEvent)
        waiting = asyncio.create_task(collect(runner, "Fifth", replace(GREEDY, max_tokens=3)))
        while (status := await runner.status())["queued"] == 0:  # until the fifth is in
            pass
        assert status["busy"] == 4 and status["queued"] == 1
        await streams[0].aclose()  # like a client disconnecting
        fifth = await waiting
        still_running = [not isinstance(await anext(s), DoneEvent) for s in streams[1:]]
        for stream in streams[1:]:
            await stream.aclose()
        return fifth, still_running, await runner.status()

    fifth, still_running, status = harness.run(scenario())
    assert fifth.done.reason == "length"
    assert all(still_running)
    assert status["busy"] == 0 and status["queued"] == 0


def test_long_prefill_does_not_stall_running_streams(harness, tmp_path):
    path = write_tiny_model(tmp_path / "wider.gguf", n_layer=4, n_embd=256, n_head=4, seed=5)
    runner = harness.start(make_spec(path, num_ctx=2048, num_parallel=2, num_batch=64))
    long_prompt = _words(300, seed=2)
    assert len(harness.run(runner.tokenize(long_prompt))) >= 1500

    async def scenario() -> list[str]:
        """What came, in the order it came: "one" per token of the running stream, "sent"
        when the long prompt goes in, "answer" at its first token (one pipe, one order)."""
        order: list[str] = []
        streamed = asyncio.Event()
        finished = asyncio.Event()

        async def first_stream():
            req = GenerateCall("Stream one", replace(GREEDY, max_tokens=None))
            async for _ in runner.generate(req):
                order.append("one")
                if order.count("one") == 5:
                    streamed.set()
                if finished.is_set():
                    return

        async def long_one():
            req = GenerateCall(long_prompt, replace(GREEDY, max_tokens=1))
            order.append("sent")
            async for event in runner.generate(req):
                if isinstance(event, TokenEvent) and "answer" not in order:
                    order.append("answer")

        streaming = asyncio.create_task(first_stream())
        await streamed.wait()
        await long_one()
        finished.set()
        await streaming
        return order

    order = harness.run(scenario())
    during = order[order.index("sent") : order.index("answer")].count("one")
    # 1,500 tokens prefilled in 64-token chunks, a step of stream one beside each: read in one
    # go (the stall), the stream would have got a token or two, not one per chunk.
    assert during >= 10, f"the running stream got {during} tokens while the prompt was read"
    harness.run(runner.stop())
