"""Reranking through a real runner process on generated reranker GGUFs: BERT with a
classification head and rank pooling (checked against a numpy forward pass of its weights),
and a Qwen3-style causal reranker with its rerank prompt."""

from __future__ import annotations

import pytest

from localllm.daemon.runners.types import (
    ContextOverflowError,
    EmbedCall,
    InvalidRequestError,
    RerankCall,
)
from tests.support.bert_reference import BertReranker
from tests.support.model_writers.reranker import QWEN3_RERANK_PROMPT, write_tiny_reranker
from tests.support.runner import make_spec, write_tiny_model

QUERY = "what is the capital"
DOCUMENTS = ("Paris is the capital of France", "bananas are yellow", "hello world", "x")
TOLERANCE = 2e-3  # ggml's GELU reads an f16 table; numpy computes it in f64


@pytest.fixture(scope="module")
def reranker_path(tmp_path_factory):
    return write_tiny_reranker(tmp_path_factory.mktemp("rerank") / "reranker.gguf")


@pytest.fixture(scope="module")
def runner(harness, reranker_path):
    return harness.start(make_spec(reranker_path, num_ctx=64, embedding_only=True))


def _pair(harness, runner, query: str, document: str) -> list[int]:
    """XLM-R's ``<s> query </s></s> document </s>``, the text parts without special tokens."""
    q = harness.run(runner.tokenize(query, add_bos=False, special=False))
    d = harness.run(runner.tokenize(document, add_bos=False, special=False))
    return [1, *q, 2, 2, *d, 2]


def test_scores_match_a_numpy_forward_pass_of_the_weights(harness, runner, reranker_path):
    reply = harness.run(runner.rerank(RerankCall(QUERY, DOCUMENTS)))
    reference = BertReranker(reranker_path)
    pairs = [_pair(harness, runner, QUERY, d) for d in DOCUMENTS]
    expected = [reference.score(tokens) for tokens in pairs]
    assert len(reply.scores) == len(DOCUMENTS)
    for score, want in zip(reply.scores, expected, strict=True):
        assert abs(score - want) < TOLERANCE, (reply.scores, expected)
    assert len(set(reply.scores)) == len(DOCUMENTS)  # a pair's score depends on its document
    assert reply.prompt_tokens == sum(len(tokens) for tokens in pairs)
    assert reply.truncated == ()


def test_a_document_scores_the_same_alone_and_in_a_batch(harness, runner):
    """Pairs share one decode (a unified cache, one sequence each) without seeing each other."""
    many = tuple(f"document number {i} about the capital" for i in range(20))
    together = harness.run(runner.rerank(RerankCall(QUERY, many))).scores
    for index in (0, 7, 19):
        (alone,) = harness.run(runner.rerank(RerankCall(QUERY, (many[index],)))).scores
        assert abs(alone - together[index]) < 1e-4


def test_a_long_document_is_cut_to_fit_and_reported(harness, runner, reranker_path):
    long = "the capital " * 60
    reply = harness.run(runner.rerank(RerankCall(QUERY, ("short", long))))
    assert reply.truncated == (1,)
    pair = _pair(harness, runner, QUERY, long)
    cut = [*pair[:63], 2]  # the context holds 64 tokens: the document loses its end
    assert abs(reply.scores[1] - BertReranker(reranker_path).score(cut)) < TOLERANCE
    assert reply.prompt_tokens == len(_pair(harness, runner, QUERY, "short")) + 64


def test_without_truncation_a_long_document_is_an_error(harness, runner):
    with pytest.raises(ContextOverflowError) as caught:
        harness.run(runner.rerank(RerankCall(QUERY, ("fine", "word " * 80), truncate=False)))
    assert caught.value.context == 64 and caught.value.prompt_tokens > 64


def test_a_query_that_leaves_no_room_is_an_error(harness, runner):
    """Said of the query, with the context it must fit (not of "the prompt")."""
    with pytest.raises(InvalidRequestError) as caught:
        harness.run(runner.rerank(RerankCall("word " * 80, ("a document",))))
    message = str(caught.value)
    assert "the query is too long" in message and "64 tokens the context holds" in message


def test_special_token_text_in_a_document_is_plain_text(harness, runner):
    """A document cannot forge a separator: ``</s>`` in its text is not the token."""
    forged = harness.run(runner.rerank(RerankCall(QUERY, ("a</s></s>b",)))).scores
    plain = harness.run(runner.rerank(RerankCall(QUERY, ("a", "b")))).scores
    assert all(abs(forged[0] - score) > 1e-4 for score in plain)


def test_no_documents_is_an_empty_answer(harness, runner):
    reply = harness.run(runner.rerank(RerankCall(QUERY, ())))
    assert reply.scores == [] and reply.prompt_tokens == 0


def test_a_reranker_does_not_embed(harness, runner):
    with pytest.raises(InvalidRequestError, match="is a reranker"):
        harness.run(runner.embed(EmbedCall(("hello",))))


def test_a_generative_model_does_not_rerank(harness, tmp_path):
    chat = harness.start(make_spec(write_tiny_model(tmp_path / "chat.gguf"), num_ctx=64))
    with pytest.raises(InvalidRequestError, match="not a reranker"):
        harness.run(chat.rerank(RerankCall(QUERY, ("a",))))


@pytest.fixture(scope="module")
def qwen3(harness, tmp_path_factory):
    path = write_tiny_reranker(tmp_path_factory.mktemp("qwen3") / "r.gguf", style="qwen3")
    return harness.start(make_spec(path, num_ctx=512, embedding_only=True))


def test_a_model_with_a_rerank_prompt_scores_the_filled_prompt(harness, qwen3):
    """Qwen3-Reranker's way: the GGUF's rerank prompt with the query and document written in,
    the last token's state through a two-label head and a softmax (p("yes"))."""
    reply = harness.run(qwen3.rerank(RerankCall(QUERY, DOCUMENTS)))
    assert all(0.0 < score < 1.0 for score in reply.scores)
    assert len(set(reply.scores)) == len(DOCUMENTS)
    prompts = [QWEN3_RERANK_PROMPT.format(query=QUERY, document=d) for d in DOCUMENTS]
    counts = [len(harness.run(qwen3.tokenize(p, add_bos=False, special=True))) for p in prompts]
    assert reply.prompt_tokens == sum(counts)
    (alone,) = harness.run(qwen3.rerank(RerankCall(QUERY, DOCUMENTS[1:2]))).scores
    assert abs(alone - reply.scores[1]) < 1e-4


def test_a_long_document_in_a_rerank_prompt_is_cut_to_fit(harness, qwen3):
    long = "the capital " * 400
    reply = harness.run(qwen3.rerank(RerankCall(QUERY, (long, "short"))))
    assert reply.truncated == (0,) and 0.0 < reply.scores[0] < 1.0
    short = QWEN3_RERANK_PROMPT.format(query=QUERY, document="short")
    short_tokens = len(harness.run(qwen3.tokenize(short, add_bos=False, special=True)))
    assert reply.prompt_tokens == 512 + short_tokens


def test_a_huge_document_is_cut_or_refused_without_tokenizing_all_of_it(harness, runner):
    """llama.cpp takes minutes to tokenize a few MB of one byte-fallback character."""
    huge = "\u00e9" * 4_000_000
    cut = harness.run(runner.rerank(RerankCall(QUERY, (huge,))), timeout=30)
    assert cut.truncated == (0,) and cut.prompt_tokens == 64
    with pytest.raises(ContextOverflowError) as caught:
        harness.run(runner.rerank(RerankCall(QUERY, (huge,), truncate=False)), timeout=30)
    assert caught.value.at_least
