"""Reading a remote's rerank answer: llama-server's, vLLM's and our native shape give the scores
in the request's order; an answer that leaves a document out or is malformed is a RemoteError."""

from __future__ import annotations

import pytest

from localllm.daemon.errors import RemoteError
from localllm.daemon.inference.jobs import RerankJob
from localllm.daemon.remotes.rerank import _parse

JOB = RerankJob("team/r", "q", ["a", "b", "c"])


def test_results_in_any_order_come_back_in_the_documents_order():
    data = {
        "results": [
            {"index": 2, "relevance_score": 0.9},
            {"index": 0, "relevance_score": 0.5},
            {"index": 1, "relevance_score": -1.5},
        ],
        "usage": {"total_tokens": 12},  # vLLM counts only the total
    }
    ranked = _parse(data, JOB, "team")
    assert ranked.scores == [0.5, -1.5, 0.9] and ranked.prompt_tokens == 12
    assert ranked.model == "team/r" and ranked.truncated == ()


def test_the_native_answer_keeps_its_token_count_and_truncation():
    data = {
        "results": [{"index": i, "relevance_score": float(i)} for i in range(3)],
        "prompt_eval_count": 30,
        "truncated": [1],
    }
    ranked = _parse(data, JOB, "home")
    assert ranked.prompt_tokens == 30 and ranked.truncated == (1,)


@pytest.mark.parametrize(
    "data",
    [
        {"results": [{"index": 0, "relevance_score": 1.0}]},  # two documents left out
        {"results": [{"index": 7, "relevance_score": 1.0}]},  # an index out of range
        {"results": [{"index": i - 1, "relevance_score": 1.0} for i in range(3)]},  # and -1
        {"results": "no"},
        {"data": []},
        [],
        {"results": [{"index": i, "relevance_score": "NaN"} for i in range(3)]},
    ],
)
def test_a_partial_or_malformed_answer_is_a_remote_error(data):
    with pytest.raises(RemoteError, match="team"):
        _parse(data, JOB, "team")
