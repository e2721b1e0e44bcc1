"""Sampling inside the decode (llama.cpp's backend samplers, ``worker/backend_sampling.py``),
run on the CPU build with ``backend_sampling`` "on": the same greedy text as the host path,
the same seeded text at any concurrency, and the choice made per request.

The engine runs in this process on the generated Q8_0 model, whose logits do not depend on
how many tokens a decode holds, so texts can be compared to the token.
"""

from __future__ import annotations

import pytest

from localllm.daemon.runners.types import GenerateCall, SamplingParams
from localllm.daemon.runners.worker import backend_sampling
from localllm.daemon.runners.worker.backend_sampling import MOST_BIASED_TOKENS, host_reason
from tests.support.engine import run_engine
from tests.support.runner import make_spec

llama_cpp = pytest.importorskip("llama_cpp")

PROMPTS = ["The cat", "Once upon a time there was", "1 2 3", "Copy this: red green blue, red"]
GREEDY = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=24)
SEEDED = SamplingParams(temperature=0.9, seed=11, max_tokens=24)  # Ollama's defaults otherwise
PENALISED = SamplingParams(
    temperature=0.0, repeat_penalty=1.3, presence_penalty=0.5, repeat_last_n=16, max_tokens=24
)


@pytest.fixture(scope="module")
def model(tiny_q8_model):
    return tiny_q8_model


def generate(model, backend: str, rounds, **spec) -> tuple[dict, dict]:
    """Token ids and done frames by request id (counted from 1 over all rounds)."""
    spec = make_spec(model.spec.model_paths[0], num_threads=1, backend_sampling=backend, **spec)
    return run_engine(model, spec, rounds)


def calls(params: SamplingParams, prompts=PROMPTS) -> list[GenerateCall]:
    return [GenerateCall(prompt, params) for prompt in prompts]


@pytest.mark.parametrize("params", [GREEDY, PENALISED], ids=["greedy", "penalised"])
def test_greedy_text_is_the_same_with_backend_sampling_on_and_off(model, params):
    on_ids, on_done = generate(model, "on", [calls(params)])
    off_ids, off_done = generate(model, "off", [calls(params)])
    assert on_ids == off_ids
    assert all(len(ids) == 24 for ids in on_ids.values())
    assert len({tuple(ids) for ids in on_ids.values()}) == 4, "four different texts"
    assert {d["sampling"] for d in on_done.values()} == {"backend"}
    assert {d["sampling"] for d in off_done.values()} == {"host"}


def test_seeded_sampling_gives_the_same_text_at_1_and_4_streams(model):
    """Each request's chain (its RNG) lives with its sequence in the graph: alone or among
    three others, a seed draws the same tokens."""
    seeded = [
        GenerateCall(prompt, SamplingParams(temperature=0.9, seed=seed, max_tokens=24))
        for seed, prompt in enumerate(PROMPTS, 1)
    ]
    together_ids, together_done = generate(model, "on", [seeded])
    alone_ids, alone_done = generate(model, "on", [[call] for call in seeded])
    assert together_ids == alone_ids
    assert {d["sampling"] for d in (*together_done.values(), *alone_done.values())} == {"backend"}
    assert len(set(map(tuple, together_ids.values()))) == 4, "the seeds draw different texts"


def test_the_choice_is_made_per_request(model, monkeypatch):
    """Requests the graph can sample and ones it cannot, in one batch of one runner. (The
    tiny model has fewer tokens than a bias may name in the graph: the test lowers it.)"""
    monkeypatch.setattr(backend_sampling, "MOST_BIASED_TOKENS", 8)
    biased = {token: 0.5 for token in range(9)}
    batch = [
        GenerateCall("The cat", SEEDED),
        GenerateCall("The cat", SamplingParams(max_tokens=8, grammar='root ::= "yes" | "no"')),
        GenerateCall("The cat", SamplingParams(max_tokens=8, logprobs=2, seed=3)),
        GenerateCall("The cat", SamplingParams(max_tokens=8, typical_p=0.9, seed=4)),
        GenerateCall("The cat", SamplingParams(max_tokens=8, logit_bias=biased, seed=5)),
        GenerateCall("The cat", SamplingParams(max_tokens=8, logit_bias={5: 2.0}, seed=6)),
    ]
    _, done = generate(model, "on", [batch], num_parallel=6)
    assert [done[rid]["sampling"] for rid in range(1, 7)] == [
        "backend",
        "host",
        "host",
        "host",
        "host",
        "backend",
    ]
    assert done[2]["text"] in ("yes", "no")
    assert all(done[rid]["completion_tokens"] == 8 for rid in range(3, 7))


def test_a_host_request_after_a_backend_one_on_the_same_slot_reads_raw_logits(model):
    """A finished request's chain stays attached until its slot's next request; that request
    samples on the host (logprobs) and must see the model's own logits: the same logprobs as
    on a runner that never sampled in the graph."""
    logprobs = SamplingParams(temperature=1.5, seed=5, max_tokens=12, logprobs=3)
    rounds = [[GenerateCall("The cat", GREEDY)], [GenerateCall("Once upon", logprobs)]]
    on_ids, on_done = generate(model, "on", rounds, num_parallel=1)
    off_ids, off_done = generate(model, "off", rounds, num_parallel=1)
    assert on_ids == off_ids
    assert [on_done[1]["sampling"], on_done[2]["sampling"]] == ["backend", "host"]
    assert len(on_done[2]["logprobs"]) == 12
    assert on_done[2]["logprobs"] == off_done[2]["logprobs"]


def test_a_sequence_sampled_in_the_graph_does_not_guess(model):
    """Speculative decoding puts several rows of one sequence into a decode; llama.cpp samples
    one row per sequence in the graph, so such a sequence decodes plain (and the text is the
    one guessing gives on the host)."""
    copy = [GenerateCall(PROMPTS[3], SamplingParams(temperature=0.0, max_tokens=32))]
    on_ids, on_done = generate(model, "on", [copy], num_draft=8)
    off_ids, off_done = generate(model, "off", [copy], num_draft=8)
    assert on_ids == off_ids
    assert on_done[1]["draft_tokens"] == 0 and on_done[1]["sampling"] == "backend"
    assert off_done[1]["draft_tokens"] > 0


@pytest.mark.parametrize(
    ("params", "biased", "reason"),
    [
        (SamplingParams(), 0, None),
        (SamplingParams(temperature=0.0, repeat_penalty=1.3), 0, None),
        (SamplingParams(grammar="root ::= [a-z]+"), 0, "grammar"),
        (SamplingParams(json_schema='{"type": "object"}'), 0, "grammar"),
        (SamplingParams(logprobs=0), 0, "logprobs"),
        (SamplingParams(typical_p=0.5), 0, "typical_p"),
        (SamplingParams(), MOST_BIASED_TOKENS, None),
        (SamplingParams(), MOST_BIASED_TOKENS + 1, "logit_bias"),
    ],
)
def test_host_reason(params, biased, reason):
    assert host_reason(params, biased) == reason
