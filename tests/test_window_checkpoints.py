"""A sliding-window model keeps the small window cache llama-server keeps (the long-prompt
speed), and checkpoints of it keep cached prefixes reusable: a prompt that parts from the
cached one where the window has moved on resumes from a checkpoint, in the slot or from the
host cache, and answers exactly as a context that read it from scratch.

On the real model (Gemma 3 270M: a 512-token window on 15 of 18 layers), in this process, with
batches of 32 so the window cache is 768 cells and a prompt of 900 tokens outgrows it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from localllm.daemon.runners.types import GenerateCall, SamplingParams
from tests.support.engine import run_engine
from tests.support.real_model import gemma_path
from tests.support.runner import make_spec

pytestmark = pytest.mark.slow

GREEDY = SamplingParams(temperature=0, max_tokens=8, ignore_eos=True)
# checkpoints may take as much RAM again as the host cache (0: none)
SPEC = {"num_ctx": 2048, "num_parallel": 1, "num_batch": 32, "host_cache_bytes": 256 << 20}


def _sentences(start: int, stop: int, topic: str = "river") -> str:
    return "".join(
        f"Note {i}: the {topic} is {i * 7 % 97} miles long. " for i in range(start, stop)
    )


@pytest.fixture(scope="module")
def gemma():
    from localllm.daemon.runners.worker.model import Model

    path = gemma_path()
    model = Model.load(make_spec(path, **SPEC))
    yield model, make_spec(path, **SPEC)
    model.close()


def _run(model, spec, *prompts: str, **params):
    """Each prompt after the one before, on one engine; their token ids and done frames."""
    calls = [[GenerateCall(p, replace(GREEDY, **params), add_bos=True)] for p in prompts]
    engine = []
    ids, done = run_engine(model, spec, calls, prepare=engine.append)
    return (
        [ids.get(i + 1, []) for i in range(len(prompts))],
        [done[i + 1] for i in range(len(prompts))],
        engine[0],
    )


def test_the_window_cache_is_small_and_a_prompt_parting_before_it_resumes_from_a_checkpoint(
    gemma,
):
    import llama_cpp as lc

    model, spec = gemma
    shared = _sentences(0, 45)
    first = shared + _sentences(45, 75)  # ~900 tokens: past the 768 cells of the window cache
    second = shared + _sentences(100, 135, "road")  # parts at ~550: the window has moved on
    third = shared + _sentences(200, 210, "hill")  # parts where the second did
    ids, done, engine = _run(model, spec, first, second, third)
    assert model.n_swa == 512
    tokens = [d["prompt_tokens"] for d in done]
    assert tokens[0] > 768 and tokens[1] > 768
    # the second read everything: nothing was cached where it parts from the first...
    assert done[1]["prompt_evaluated"] == tokens[1]
    # ...and left a checkpoint there, from which the third resumes
    assert tokens[2] - done[2]["prompt_evaluated"] > 500
    assert lc.llama_memory_seq_pos_min(engine.memory, 0) > 0  # the window cache is small

    cold, cold_done, _ = _run(model, spec, third)
    assert cold_done[0]["prompt_evaluated"] == tokens[2]
    assert ids[2] == cold[0]


def test_the_same_prompt_again_after_a_long_reply_resumes_just_before_its_end(gemma):
    model, spec = gemma
    prompt = _sentences(0, 75)
    calls = [
        [GenerateCall(prompt, replace(GREEDY, max_tokens=max_tokens))] for max_tokens in (300, 8)
    ]
    ids, done = run_engine(model, spec, calls)
    assert done[1]["completion_tokens"] == 300  # the window moved 300 tokens past the prompt
    assert done[2]["prompt_evaluated"] <= 8  # from the checkpoint 4 tokens before the end
    # the same start (a long reply read back reorders the window's cells: rounding differs)
    assert ids[2] == ids[1][:8]


def test_a_conversation_back_from_the_host_cache_brings_its_checkpoints(gemma):
    model, spec = gemma
    held = _sentences(0, 75)
    other = _sentences(300, 320, "lake")  # takes the one slot: the first goes to host RAM
    later = held + _sentences(75, 80)
    ids, done, engine = _run(model, spec, held, other, later)
    assert engine.host.restored == 1
    assert done[2]["prompt_tokens"] - done[2]["prompt_evaluated"] >= done[0]["prompt_tokens"] - 8

    cold, _, _ = _run(model, spec, later)
    assert ids[2] == cold[0]


def test_a_new_session_with_the_same_system_part_resumes_where_it_ends(gemma):
    model, spec = gemma
    system = _sentences(0, 60)  # the daemon says where it ends (daemon.inference.system_part)
    first = system + _sentences(100, 130, "road")  # the window moves past the system part
    second = system + _sentences(200, 210, "hill")
    calls = [[GenerateCall(p, GREEDY, system_chars=len(system))] for p in (first, second)]
    ids, done = run_engine(model, spec, calls)
    system_tokens = len(model.tokenize(system, add_bos=True))
    assert done[1]["prompt_tokens"] - system_tokens > 256  # past the window from there
    assert done[2]["prompt_tokens"] - done[2]["prompt_evaluated"] >= system_tokens - 1

    cold, _ = run_engine(model, spec, [[GenerateCall(second, GREEDY)]])
    assert ids[2] == cold[1]
