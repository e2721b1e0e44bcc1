"""Decoding the streams' tokens one at a time (what the decode plan picks where a build batches
badly) gives exactly what one batched decode gives. The engine runs in this process on a real
Q8_0 model, whose logits do not depend on the batch size, so the texts must match exactly."""

from __future__ import annotations

import pytest

from localllm.daemon.runners.types import GenerateCall, SamplingParams
from localllm.daemon.runners.worker.decode_plan import DecodePlan
from tests.support.engine import run_engine
from tests.support.runner import make_spec

llama_cpp = pytest.importorskip("llama_cpp")

from localllm.daemon.runners.worker.model import Model  # noqa: E402

PROMPTS = ["The cat", "Once upon a time there was", "1 2 3"]


class FixedPlan(DecodePlan):
    """Always one way, noting the size of every decode the engine timed."""

    def __init__(self, apart: bool):
        super().__init__()
        self.apart = apart
        self.sizes: list[int] = []

    def one_at_a_time(self, count: int) -> bool:
        return self.apart and count > 1

    def record(self, count: int, seconds: float) -> None:
        assert seconds > 0
        self.sizes.append(count)


@pytest.fixture(scope="module")
def model(tiny_q8_model):
    return tiny_q8_model


def requests(*max_tokens: int) -> list[GenerateCall]:
    """One sampled request per prompt, each with its own seed."""
    return [
        GenerateCall(prompt, SamplingParams(temperature=0.9, seed=rid, max_tokens=limit))
        for rid, (prompt, limit) in enumerate(zip(PROMPTS, max_tokens, strict=False), 1)
    ]


def generate(model: Model, plan: DecodePlan, batch: list[GenerateCall]) -> tuple[dict, dict]:
    """Texts and completion token counts by request id, for ``batch`` run through one engine."""
    spec = make_spec(model.spec.model_paths[0], num_threads=1)

    def planned(engine) -> None:
        engine.plan = plan

    _, done = run_engine(model, spec, [batch], prepare=planned)
    texts = {rid: entry["text"] for rid, entry in done.items()}
    return texts, {rid: entry["completion_tokens"] for rid, entry in done.items()}


def test_one_at_a_time_gives_the_same_texts_as_one_batch(model):
    apart, batched = FixedPlan(apart=True), FixedPlan(apart=False)
    apart_texts, apart_counts = generate(model, apart, requests(16, 16, 16))
    batched_texts, batched_counts = generate(model, batched, requests(16, 16, 16))

    assert apart_texts == batched_texts
    assert apart_counts == batched_counts == {1: 16, 2: 16, 3: 16}
    assert len(set(apart_texts.values())) == 3, "seeded streams differ"
    # Apart: every stream's 15 later tokens were decoded (and timed) alone; batched, the same
    # steps were 15 decodes of all three streams together.
    assert apart.sizes == [1] * 45
    assert batched.sizes == [3] * 15


def test_streams_that_end_at_different_steps(model):
    texts, counts = generate(model, FixedPlan(apart=True), requests(3, 16, 9))
    batched, _ = generate(model, FixedPlan(apart=False), requests(3, 16, 9))
    assert counts == {1: 3, 2: 16, 3: 9}
    assert texts == batched
