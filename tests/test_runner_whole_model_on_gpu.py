"""What the runner does where the whole model runs on a GPU: its streams always share one
decode (a batch of k costs about one token there), and requests sample inside the decode.

No test needs a GPU: the runner's choices key on llama.cpp saying it can offload
(``llama_supports_gpu_offload``) and on the spec putting every layer there, so the CPU build
is told it can offload, and its spec asks for all layers (which a CPU build runs on the CPU).
The engine runs in this process on the generated Q8_0 model.
"""

from __future__ import annotations

import pytest

from localllm.daemon.runners.types import GenerateCall, SamplingParams
from tests.support.engine import run_engine
from tests.support.runner import make_spec

llama_cpp = pytest.importorskip("llama_cpp")

PROMPTS = ["The cat", "Once upon a time there was", "1 2 3", "Hello"]


@pytest.fixture(scope="module")
def model(tiny_q8_model):
    return tiny_q8_model


def decode_sizes(model, monkeypatch, offloads: bool, gpu_layers: int) -> tuple[list, dict]:
    """Tokens in each decode of 4 streams of 16 tokens, on an engine whose plan was told that
    one token costs a tenth of a batch of 4 (as a GPU's asynchronous calls once made it look);
    and the done frames."""
    monkeypatch.setattr(llama_cpp, "llama_supports_gpu_offload", lambda: offloads)
    spec = make_spec(model.spec.model_paths[0], num_threads=1, num_gpu_layers=gpu_layers)
    sizes: list[int] = []

    def prepare(engine) -> None:
        for count, seconds in ((1, 0.001), (1, 0.001), (4, 0.04), (4, 0.04)):
            engine.plan.record(count, seconds)
        decode = engine._decode

        def counted(batch) -> None:
            sizes.append(batch.n)
            decode(batch)

        engine._decode = counted

    calls = [
        GenerateCall(prompt, SamplingParams(temperature=0.9, seed=seed, max_tokens=16))
        for seed, prompt in enumerate(PROMPTS, 1)
    ]
    _, done = run_engine(model, spec, [calls], prepare=prepare)
    assert all(d["completion_tokens"] == 16 for d in done.values())
    return sizes, done


def test_four_streams_decode_in_one_batch_where_the_whole_model_is_on_the_gpu(model, monkeypatch):
    sizes, done = decode_sizes(model, monkeypatch, offloads=True, gpu_layers=-1)
    assert sizes[0] > 4  # the four prompts
    assert sizes[1:] == [4] * 15  # every later step: one decode of all four streams
    assert {d["sampling"] for d in done.values()} == {"backend"}


@pytest.mark.parametrize(
    ("offloads", "gpu_layers"), [(False, -1), (True, 0), (True, 2)], ids=["cpu-build", "0", "2"]
)
def test_elsewhere_the_timings_decide(model, monkeypatch, offloads, gpu_layers):
    """A CPU build, no layers on the GPU, or only some (the output layer stays on the CPU):
    the same timings send the streams' tokens one at a time, and sampling stays on the host."""
    sizes, done = decode_sizes(model, monkeypatch, offloads=offloads, gpu_layers=gpu_layers)
    assert sizes.count(1) > 40
    assert {d["sampling"] for d in done.values()} == {"host"}


def test_steps_of_the_same_streams_reuse_the_compute_graph(model, monkeypatch):
    """CUDA graphs are replayed while llama.cpp reuses its compute graph (the same graph id);
    it does when a step holds the same sequences in the same order, one token and one output
    each, with the same sampler chains attached. Four streams of 33 tokens: 32 steps of one
    token each after the prompts, and every one after the first reuses the graph."""
    monkeypatch.setattr(llama_cpp, "llama_supports_gpu_offload", lambda: True)
    spec = make_spec(model.spec.model_paths[0], num_threads=1, num_gpu_layers=-1)
    engines = []
    calls = [
        GenerateCall(prompt, SamplingParams(temperature=0.9, seed=seed, max_tokens=33))
        for seed, prompt in enumerate(PROMPTS, 1)
    ]
    _, done = run_engine(model, spec, [calls], prepare=engines.append)
    assert {d["sampling"] for d in done.values()} == {"backend"}
    assert llama_cpp.llama_perf_context(engines[0].ctx).n_reused == 31
