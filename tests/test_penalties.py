"""Penalties and logit bias applied to the tokens they touch only (``worker/penalties.py``) give
the very tokens llama.cpp's own penalties and logit-bias samplers give, and leave logprobs to
the model's own logits."""

from __future__ import annotations

import ctypes
import dataclasses

import llama_cpp as lc
import numpy as np
import pytest

from localllm.daemon.runners.types import InvalidRequestError, SamplingParams
from localllm.daemon.runners.worker.penalties import LogitAdjuster
from tests.support.runner import collect, make_spec, write_tiny_model

PROMPT = "the cat sat on the mat and the cat sat on the"
STEPS = 40


@pytest.fixture(scope="module")
def q8_path(tmp_path_factory):
    """Q8_0: the CPU kernels give bit-identical logits whatever the batch, so a reference
    decoding one token at a time sees the logits the runner saw."""
    return write_tiny_model(tmp_path_factory.mktemp("pen") / "q8.gguf", seed=5, file_type="Q8_0")


@pytest.fixture(scope="module")
def runner(harness, q8_path):
    return harness.start(make_spec(q8_path))


def llama_cpp_samplers(n_vocab: int, params: SamplingParams, history: list[int]) -> list:
    """llama.cpp's logit-bias sampler (when there is a bias), then its penalties sampler having
    seen ``history``: the chain the runner used before."""
    samplers = []
    if params.logit_bias:
        items = (lc.llama_logit_bias * len(params.logit_bias))(
            *(lc.llama_logit_bias(t, b) for t, b in params.logit_bias.items())
        )
        samplers.append(lc.llama_sampler_init_logit_bias(n_vocab, len(params.logit_bias), items))
    penalties = lc.llama_sampler_init_penalties(
        n_vocab,
        params.repeat_last_n,
        params.repeat_penalty,
        params.frequency_penalty,
        params.presence_penalty,
    )
    for token in history:
        lc.llama_sampler_accept(penalties, token)
    return [*samplers, penalties]


def llama_cpp_reference(path, params: SamplingParams, steps: int) -> list[int]:
    """Greedy decoding with llama.cpp's own logit-bias and penalties samplers (the path the
    runner took before), straight through the low-level API."""
    lc.llama_backend_init()
    model = lc.llama_model_load_from_file(str(path).encode(), lc.llama_model_default_params())
    cparams = lc.llama_context_default_params()
    cparams.n_ctx, cparams.n_batch, cparams.n_threads = 512, 128, 1
    cparams.flash_attn_type = lc.LLAMA_FLASH_ATTN_TYPE_DISABLED  # as the runner runs it (auto:
    # heads of 16 values on a CPU, daemon/runners/attention.py)
    ctx = lc.llama_init_from_model(model, cparams)
    vocab = lc.llama_model_get_vocab(model)
    n_vocab = lc.llama_vocab_n_tokens(vocab)
    chain = lc.llama_sampler_chain_init(lc.llama_sampler_chain_default_params())
    try:
        text = PROMPT.encode()
        buffer = (lc.llama_token * 256)()
        n = lc.llama_tokenize(vocab, text, len(text), buffer, 256, True, True)
        prompt = list(buffer[:n])
        for sampler in llama_cpp_samplers(n_vocab, params, prompt[-params.repeat_last_n :]):
            lc.llama_sampler_chain_add(chain, sampler)
        lc.llama_sampler_chain_add(chain, lc.llama_sampler_init_greedy())
        out: list[int] = []
        batch = (lc.llama_token * len(prompt))(*prompt)
        assert lc.llama_decode(ctx, lc.llama_batch_get_one(batch, len(prompt))) == 0
        for _ in range(steps):
            token = lc.llama_sampler_sample(chain, ctx, -1)
            out.append(token)
            one = (lc.llama_token * 1)(token)
            assert lc.llama_decode(ctx, lc.llama_batch_get_one(one, 1)) == 0
        return out
    finally:
        lc.llama_sampler_free(chain)
        lc.llama_free(ctx)
        lc.llama_model_free(model)


PENALISED = [
    SamplingParams(temperature=0, repeat_penalty=1.8, repeat_last_n=64, max_tokens=STEPS),
    SamplingParams(temperature=0, repeat_penalty=0.5, repeat_last_n=8, max_tokens=STEPS),
    SamplingParams(
        temperature=0,
        repeat_penalty=1.3,
        frequency_penalty=0.7,
        presence_penalty=0.4,
        repeat_last_n=16,
        max_tokens=STEPS,
    ),
    SamplingParams(
        temperature=0,
        repeat_penalty=1.5,
        repeat_last_n=32,
        logit_bias={5: 3.0, 17: -2.0, 40: 1.5},
        max_tokens=STEPS,
    ),
]


@pytest.mark.parametrize("params", PENALISED, ids=["repeat", "reward", "all-three", "bias"])
def test_penalties_give_llama_cpps_tokens(harness, runner, q8_path, params):
    ours = harness.run(collect(runner, PROMPT, params)).token_ids
    reference = llama_cpp_reference(q8_path, params, STEPS)
    assert ours == reference
    unpenalised = harness.run(
        collect(runner, PROMPT, SamplingParams(temperature=0, repeat_penalty=1.0, max_tokens=STEPS))
    ).token_ids
    assert ours != unpenalised  # the penalties did change what was chosen


def test_a_bias_alone_gives_llama_cpps_tokens(harness, runner, q8_path):
    """Without penalties, on this small vocabulary, the bias goes into llama.cpp's own chain."""
    plain = SamplingParams(temperature=0, repeat_penalty=1.0, max_tokens=STEPS)
    unbiased = harness.run(collect(runner, PROMPT, plain)).token_ids
    bias = {unbiased[0]: -100.0, unbiased[1]: -3.0, 5: 2.0}
    params = dataclasses.replace(plain, logit_bias=bias)
    ours = harness.run(collect(runner, PROMPT, params)).token_ids
    assert ours == llama_cpp_reference(q8_path, params, STEPS)
    assert ours[0] != unbiased[0]


def test_bias_leaves_logprobs_to_the_model(harness, runner):
    """A biased token wins, yet its logprob is the one the model gave it unbiased."""
    plain = SamplingParams(temperature=0, repeat_penalty=1.0, max_tokens=1, logprobs=5)
    first = harness.run(collect(runner, PROMPT, plain)).events[0].logprobs[0]
    runner_up = first["top_logprobs"][1]
    biased = SamplingParams(
        temperature=0,
        repeat_penalty=1.4,
        max_tokens=1,
        logprobs=5,
        logit_bias={runner_up["id"]: 50.0},
    )
    chosen = harness.run(collect(runner, PROMPT, biased)).events[0].logprobs[0]
    assert chosen["id"] == runner_up["id"]
    assert chosen["logprob"] == pytest.approx(runner_up["logprob"], abs=1e-5)
    assert chosen["top_logprobs"] == first["top_logprobs"]


def test_a_bias_outside_the_vocabulary_is_refused(harness, runner):
    params = SamplingParams(temperature=0, max_tokens=2, logit_bias={10**6: 1.0})
    with pytest.raises(InvalidRequestError, match="outside the vocabulary"):
        harness.run(collect(runner, PROMPT, params))


def llama_cpp_adjusted(logits, params: SamplingParams, history: list[int]) -> np.ndarray:
    """``logits`` after llama.cpp's logit-bias then penalties samplers, applied to a candidate
    array of the whole vocabulary (what the sampler chain does)."""
    n_vocab = len(logits)
    data = (lc.llama_token_data * n_vocab)(
        *(lc.llama_token_data(i, float(v), 0.0) for i, v in enumerate(logits))
    )
    candidates = lc.llama_token_data_array(data, n_vocab, -1, False)
    samplers = llama_cpp_samplers(n_vocab, params, history)
    for sampler in samplers:
        lc.llama_sampler_apply(sampler, ctypes.byref(candidates))
        lc.llama_sampler_free(sampler)
    return np.array([data[i].logit for i in range(n_vocab)], dtype=np.float32)


@pytest.mark.parametrize("seed", range(6))
def test_adjusted_logits_are_llama_cpps_logit_for_logit(seed):
    """Every sign, count and window case, on random logits of both signs: the in-place
    adjustment equals llama.cpp's samplers (the greedy runs above rarely meet a logit near 0,
    where the repeat penalty's two branches differ)."""
    rng = np.random.default_rng(seed)
    n_vocab = 500
    params = SamplingParams(
        repeat_penalty=float(rng.choice([0.3, 1.0, 1.1, 4.0])),
        frequency_penalty=float(rng.choice([0.0, 0.5, -0.4])),
        presence_penalty=float(rng.choice([0.0, 1.2, -0.3])),
        repeat_last_n=int(rng.choice([1, 7, 64])),
        logit_bias={int(t): float(rng.normal() * 3) for t in rng.choice(60, 5, replace=False)},
    )
    history = [int(t) for t in rng.integers(0, 60, size=90)]  # repeats, and a window to slide
    logits = rng.normal(size=n_vocab).astype(np.float32) * 4
    adjuster = LogitAdjuster(params, params.logit_bias, params.repeat_last_n, history[:50])
    for token in history[50:]:
        adjuster.accept(token)
    ours = logits.copy()
    undo = adjuster.apply(ours)
    expected = llama_cpp_adjusted(logits, params, history)
    np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-6)
    adjuster.restore(ours, undo)
    assert np.array_equal(ours, logits)
