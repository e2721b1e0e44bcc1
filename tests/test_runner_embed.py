"""Embeddings, tokenizer ops and status through a real runner process."""

from __future__ import annotations

import asyncio
import math

import pytest

from localllm.daemon.runners.types import ContextOverflowError, EmbedCall, RunnerError
from tests.support.runner import GREEDY, collect, make_spec, write_tiny_model


@pytest.fixture(scope="module")
def runner(harness, tmp_path_factory):
    path = write_tiny_model(tmp_path_factory.mktemp("embed") / "tiny.gguf", seed=1)
    return harness.start(make_spec(path, num_ctx=128))


def _norm(vector: list[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


def test_embeddings_have_model_width_and_unit_norm(harness, runner):
    result = harness.run(runner.embed(EmbedCall(("hello", "a longer sentence here"))))
    assert len(result.embeddings) == 2
    assert all(len(v) == runner.info.n_embd == 64 for v in result.embeddings)
    assert all(abs(_norm(v) - 1) < 1e-4 for v in result.embeddings)
    assert result.embeddings[0] != result.embeddings[1]
    tokens = sum(len(harness.run(runner.tokenize(t))) for t in ("hello", "a longer sentence here"))
    assert result.prompt_tokens == tokens


def test_embeddings_do_not_depend_on_batching(harness, runner):
    texts = tuple(f"input number {i}" for i in range(20))
    together = harness.run(runner.embed(EmbedCall(texts))).embeddings
    alone = [harness.run(runner.embed(EmbedCall((t,)))).embeddings[0] for t in texts[:3]]
    for a, b in zip(alone, together[:3], strict=True):
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-4


def test_inputs_of_different_lengths_embed_as_they_do_alone(harness, runner):
    """llama.cpp splits a batch of several sequences into equal-length parts unless the cache
    is unified, and a longer input was then pooled over its last part only (off by up to
    0.27 a component): documents embedded in batches missed questions embedded alone."""
    texts = ("short one", "a much longer input " * 6, "mid length input here", "x")
    together = harness.run(runner.embed(EmbedCall(texts))).embeddings
    for text, batched in zip(texts, together, strict=True):
        (alone,) = harness.run(runner.embed(EmbedCall((text,)))).embeddings
        assert max(abs(x - y) for x, y in zip(alone, batched, strict=True)) < 1e-4, text


def test_unnormalized_embeddings(harness, runner):
    (vector,) = harness.run(runner.embed(EmbedCall(("hello",), normalize=False))).embeddings
    assert abs(_norm(vector) - 1) > 1e-3


def test_embedding_input_too_long(harness, runner):
    text = "word " * 200
    with pytest.raises(ContextOverflowError) as caught:
        harness.run(runner.embed(EmbedCall((text,))))
    assert caught.value.context == 128
    truncated = harness.run(runner.embed(EmbedCall((text,), truncate=True)))
    assert truncated.prompt_tokens == 128 and len(truncated.embeddings[0]) == 64


def test_a_huge_input_is_refused_or_cut_without_tokenizing_all_of_it(harness, runner):
    """llama.cpp takes minutes to tokenize a few MB of one byte-fallback character."""
    huge = "\u00e9" * 4_000_000
    with pytest.raises(ContextOverflowError) as caught:
        harness.run(runner.embed(EmbedCall((huge,))), timeout=30)
    assert caught.value.at_least and caught.value.prompt_tokens > caught.value.context == 128
    cut = harness.run(runner.embed(EmbedCall((huge,), truncate=True)), timeout=30)
    short = harness.run(runner.embed(EmbedCall(("\u00e9" * 1000,), truncate=True)))
    assert cut.prompt_tokens == 128 and cut.embeddings == short.embeddings


def test_embedding_alongside_generation(harness, runner):
    """The embedding context is separate: generation in flight is not disturbed."""

    async def scenario():
        alone = await collect(runner, "Hello there")
        gen = asyncio.create_task(collect(runner, "Hello there"))
        emb = asyncio.create_task(runner.embed(EmbedCall(("side job",) * 5)))
        return alone, await gen, await emb

    alone, during, embedded = harness.run(scenario())
    assert during.text == alone.text and len(embedded.embeddings) == 5


def test_tokenize_parses_special_tokens(harness, runner):
    text = "Hello <|im_start|>world"
    tokens = harness.run(runner.tokenize(text))
    plain = harness.run(runner.tokenize(text, add_bos=False, special=False))
    assert tokens[0] == 1 and plain[0] != 1
    assert len(tokens) < len(plain) + 1  # the special token is one token when parsed


def test_status_reports_slots_and_memory(harness, runner):
    harness.run(collect(runner, "warm", GREEDY))
    status = harness.run(runner.status())
    assert status["slots"] == 4 and status["busy"] == 0 and status["queued"] == 0
    assert status["memory_bytes"] > 10_000_000
    assert max(status["cached_tokens"]) > 0


def test_embedding_only_model_refuses_generation(harness, tmp_path):
    path = write_tiny_model(tmp_path / "embedder.gguf", seed=3)
    runner = harness.start(make_spec(path, embedding_only=True, num_ctx=64))
    result = harness.run(runner.embed(EmbedCall(("hi",))))
    assert len(result.embeddings[0]) == 64
    with pytest.raises(RunnerError, match="embedding model"):
        harness.run(collect(runner, "hi"))
    harness.run(runner.stop())
