"""Sampling from the highest logits only (``worker/candidates.py``) chooses the very tokens
llama.cpp's chain chooses from the whole vocabulary: same settings, same seed, same RNG draws."""

from __future__ import annotations

import ctypes

import llama_cpp as lc
import numpy as np
import pytest

from localllm.daemon.runners.types import SamplingParams
from localllm.daemon.runners.worker import candidates
from localllm.daemon.runners.worker.candidates import CandidateSampler
from localllm.daemon.runners.worker.sampling import SequenceSampler

SETTINGS = [
    SamplingParams(seed=7, repeat_penalty=1.0),  # Ollama's defaults: top_k 40, top_p, min_p
    SamplingParams(seed=8, top_k=5, temperature=1.5, top_p=1.0, min_p=0.0, repeat_penalty=1.0),
    SamplingParams(seed=9, top_k=200, typical_p=0.9, repeat_penalty=1.0),
    SamplingParams(seed=10, temperature=0.0, repeat_penalty=1.0),
    SamplingParams(seed=11, repeat_penalty=1.3, logit_bias={5: 4.0, 6: -100.0}),
]


@pytest.fixture(scope="module")
def model(tiny_q8_model):
    return tiny_q8_model


def whole_vocabulary(chain, logits: np.ndarray) -> int:
    """What ``llama_sampler_sample`` does with a row: every token into the array, the chain
    over it, the chosen token accepted."""
    data = (lc.llama_token_data * len(logits))()
    view = np.ctypeslib.as_array(data).view(np.dtype([("id", "<i4"), ("l", "<f4"), ("p", "<f4")]))
    view["id"], view["l"], view["p"] = np.arange(len(logits)), logits, 0.0
    array = lc.llama_token_data_array(data, len(logits), -1, False)
    lc.llama_sampler_apply(chain, ctypes.byref(array))
    token = data[array.selected].id
    lc.llama_sampler_accept(chain, token)
    return token


@pytest.mark.parametrize("params", SETTINGS, ids=lambda p: f"seed{p.seed}")
def test_the_tokens_of_a_generation_match_llama_cpps_sampling(model, params, monkeypatch):
    """Decode the tiny model token by token; at every step both samplers see the same row,
    and the sequence goes on with their (shared) choice. (The tiny model's 32,000 tokens
    are below where narrowing pays; the test lowers that floor to run it.)"""
    monkeypatch.setattr(candidates, "SMALLEST_VOCABULARY", 0)
    narrowed = SequenceSampler(model, params, [])
    whole = SequenceSampler(model, params, [])
    whole._narrow = None  # llama.cpp's own path: llama_sampler_sample over the vocabulary
    assert narrowed._narrow is not None
    cparams = lc.llama_context_default_params()
    cparams.n_ctx, cparams.n_batch, cparams.n_threads = 256, 64, 1
    ctx = lc.llama_init_from_model(model.handle, cparams)
    try:
        prompt = model.tokenize("the cat sat on the mat and", True, special=True)
        batch = (lc.llama_token * len(prompt))(*prompt)
        assert lc.llama_decode(ctx, lc.llama_batch_get_one(batch, len(prompt))) == 0
        chosen = []
        for _ in range(60):
            token = narrowed.sample(ctx, -1)
            assert whole.sample(ctx, -1) == token
            chosen.append(token)
            one = (lc.llama_token * 1)(token)
            assert lc.llama_decode(ctx, lc.llama_batch_get_one(one, 1)) == 0
    finally:
        lc.llama_free(ctx)
        narrowed.close()
        whole.close()
    assert len(set(chosen)) > 3, "the test must sample more than one repeated token"


@pytest.mark.parametrize("top_k", [1, 40, 1000])
@pytest.mark.parametrize("pruned", [True, False], ids=["top_p+min_p", "top_k only"])
def test_a_large_vocabulary_gives_the_same_tokens_as_the_whole_array(top_k, pruned):
    """Rows shaped like a 262k-token model's (a few high logits over a long tail), a new
    scale every row so the margin has to widen and narrow. Without top_p and min_p every one
    of the ``top_k`` candidates counts: one missing would move the RNG draw's choice."""
    rng = np.random.default_rng(top_k)

    def chain():
        made = lc.llama_sampler_chain_init(lc.llama_sampler_chain_default_params())
        pruning = (
            (lc.llama_sampler_init_top_p(0.95, 1), lc.llama_sampler_init_min_p(0.02, 1))
            if pruned
            else ()
        )
        for sampler in (
            lc.llama_sampler_init_top_k(top_k),
            *pruning,
            lc.llama_sampler_init_temp(0.9 if pruned else 1.5),
            lc.llama_sampler_init_dist(1234),
        ):
            lc.llama_sampler_chain_add(made, sampler)
        return made

    chains = [chain(), chain()]
    narrow = CandidateSampler(chains[0], top_k)
    try:
        for step in range(40):
            logits = (rng.standard_normal(262144) * (0.5 + step % 7)).astype(np.float32)
            logits[rng.integers(0, 262144, 20)] += rng.uniform(5, 25)
            assert narrow.sample(logits) == whole_vocabulary(chains[1], logits)
    finally:
        for chain in chains:
            lc.llama_sampler_free(chain)


def test_rows_that_cannot_be_narrowed_go_to_llama_cpp():
    chain = lc.llama_sampler_chain_init(lc.llama_sampler_chain_default_params())
    lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_top_k(40))
    lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_dist(1))
    try:
        narrow = CandidateSampler(chain, 40)
        logits = np.zeros(1000, dtype=np.float32)
        logits[3] = np.nan
        assert narrow.sample(logits) is None
        logits[:] = -np.inf
        assert narrow.sample(logits) is None
        logits[:50] = 1.0  # ties at the top, -inf elsewhere: 50 candidates, 40 kept
        assert 0 <= narrow.sample(logits) < 50
    finally:
        lc.llama_sampler_free(chain)


def test_a_grammar_no_top_k_or_a_small_vocabulary_keeps_the_whole_vocabulary():
    large = 262144
    assert not CandidateSampler.usable(40, greedy=False, grammar=True, n_vocab=large)
    assert not CandidateSampler.usable(0, greedy=False, grammar=False, n_vocab=large)
    assert not CandidateSampler.usable(50000, greedy=False, grammar=False, n_vocab=large)
    assert CandidateSampler.usable(0, greedy=True, grammar=False, n_vocab=large)
    assert CandidateSampler.usable(40, greedy=False, grammar=False, n_vocab=large)
    assert not CandidateSampler.usable(0, greedy=True, grammar=False, n_vocab=32000)
    assert not CandidateSampler.usable(40, greedy=False, grammar=False, n_vocab=32000)


def test_a_small_vocabulary_takes_the_bias_into_llama_cpps_chain(model):
    """Below the floor nothing is narrowed; a bias alone then rides in llama.cpp's chain (no
    copy of the row in Python), while penalties keep the in-place adjustment (which carries
    the bias too, applied before them as llama.cpp would)."""
    bias_only = SequenceSampler(model, SamplingParams(repeat_penalty=1.0, logit_bias={5: 2.0}), [])
    penalised = SequenceSampler(model, SamplingParams(repeat_penalty=1.2, logit_bias={5: 2.0}), [])
    try:
        assert bias_only._narrow is None and not bias_only._adjuster.active
        assert lc.llama_sampler_chain_n(bias_only.chain) == 6  # bias, top_k, top_p, ...
        assert penalised._narrow is None and penalised._adjuster.active
        assert lc.llama_sampler_chain_n(penalised.chain) == 5
    finally:
        bias_only.close()
        penalised.close()


def test_the_logits_view_follows_each_decode(model):
    """The kept view of a row is llama.cpp's memory itself, so it shows every new decode's
    logits (a copy would keep serving the first)."""
    cparams = lc.llama_context_default_params()
    cparams.n_ctx, cparams.n_batch, cparams.n_threads = 64, 16, 1
    ctx = lc.llama_init_from_model(model.handle, cparams)
    try:
        views = []
        for token in model.tokenize("one two three", True, special=True):
            one = (lc.llama_token * 1)(token)
            assert lc.llama_decode(ctx, lc.llama_batch_get_one(one, 1)) == 0
            view = model.logits(ctx, -1)
            fresh = np.ctypeslib.as_array(lc.llama_get_logits_ith(ctx, -1), shape=(model.n_vocab,))
            assert np.array_equal(view, fresh)
            views.append(view.copy())
        assert model.logits(ctx, -1) is view  # made once for the address
        assert not np.array_equal(views[0], views[-1])
    finally:
        lc.llama_free(ctx)
