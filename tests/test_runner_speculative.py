"""Speculative decoding by prompt lookup: the text is the one plain decoding gives, to the token.

The engine runs in this process on a generated Q8_0 model (its logits do not depend on how many
tokens a decode holds) with guessing on (``num_draft`` 8) and off (0); a copy-heavy prompt makes
the guesses land. The runner's stats and a cancel go through the real runner subprocess.
"""

from __future__ import annotations

import pytest

from localllm.daemon.runners.types import GenerateCall, SamplingParams
from localllm.daemon.runners.worker.prompt_lookup import NgramIndex
from localllm.daemon.runners.worker.speculative import Speculation
from tests.support.engine import run_engine
from tests.support.runner import GREEDY, collect, make_spec

llama_cpp = pytest.importorskip("llama_cpp")

from localllm.daemon.runners.worker.model import Model  # noqa: E402

COPY = "Copy this list: red green blue, one two three, red green blue, one two three. Again: red"
FREE = "Once upon a time there was"
SAMPLED = SamplingParams(temperature=0.9, seed=7, repeat_penalty=1.1, max_tokens=48)


@pytest.fixture(scope="module")
def model(tiny_q8_model):
    return tiny_q8_model


def generate(model: Model, num_draft: int, batch: list[GenerateCall]) -> tuple[dict, dict]:
    """Token ids and done frames by request id, for ``batch`` run together through one engine."""
    spec = make_spec(model.spec.model_paths[0], num_threads=1, num_draft=num_draft)
    return run_engine(model, spec, [batch], prepare=lambda engine: engine.warm_up())


def greedy(max_tokens: int = 48, **kw) -> SamplingParams:
    return SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=max_tokens, **kw)


@pytest.mark.parametrize("params", [greedy(), SAMPLED], ids=["greedy", "sampled"])
@pytest.mark.parametrize("prompts", [[COPY], [FREE], [COPY, FREE]])
def test_guessing_changes_no_token(model, params, prompts):
    batch = [GenerateCall(prompt, params) for prompt in prompts]
    plain_ids, plain_done = generate(model, 0, batch)
    fast_ids, fast_done = generate(model, 8, batch)
    assert fast_ids == plain_ids
    assert [d["text"] for d in fast_done.values()] == [d["text"] for d in plain_done.values()]
    assert all(d["completion_tokens"] == 48 for d in fast_done.values())
    assert all(d["draft_tokens"] == 0 for d in plain_done.values())
    guessed = [d["draft_tokens"] > 0 for d in fast_done.values()]
    # Greedy, the tiny model loops, so every stream guesses; sampled, at least the copying one.
    assert all(guessed) if params.temperature == 0 else guessed[0] == (prompts[0] == COPY)


def test_no_guessing_while_more_streams_generate_than_pay(model):
    prompts = [COPY, FREE, COPY + " blue"]
    batch = [GenerateCall(prompt, greedy(24 if i else 48)) for i, prompt in enumerate(prompts)]
    plain_ids, _ = generate(model, 0, batch)
    fast_ids, done = generate(model, 8, batch)
    assert fast_ids == plain_ids
    # Three streams: nobody guesses; once two have ended at 24 tokens, the third one does.
    assert done[2]["draft_tokens"] == done[3]["draft_tokens"] == 0
    assert done[1]["draft_accepted"] > 0


def test_a_copy_heavy_prompt_has_its_guesses_accepted(model):
    _, done = generate(model, 8, [GenerateCall(COPY, greedy())])
    stats = done[1]
    assert stats["draft_tokens"] > 0
    assert 0 < stats["draft_accepted"] <= stats["draft_tokens"]


@pytest.mark.parametrize("limit", [1, 2, 5, 13, 31])
def test_max_tokens_is_exact_when_a_verified_run_crosses_it(model, limit):
    plain_ids, _ = generate(model, 0, [GenerateCall(COPY, greedy(48))])
    ids, done = generate(model, 8, [GenerateCall(COPY, greedy(limit))])
    assert ids.get(1, []) == plain_ids[1][:limit]
    assert done[1]["completion_tokens"] == limit
    assert done[1]["reason"] == "length"


def test_a_stop_string_inside_a_verified_run_ends_the_text_there(model):
    _, plain = generate(model, 0, [GenerateCall(COPY, greedy(48))])
    text = plain[1]["text"]
    # The model loops, so guessing starts early; a long stop string completes well after.
    stop = text[5 : 5 + len(text) * 2 // 3]
    expected = text[: text.index(stop)]
    request = GenerateCall(COPY, greedy(48, stop=(stop,)))
    plain_ids, plain_stopped = generate(model, 0, [request])
    fast_ids, fast_stopped = generate(model, 8, [request])
    for done in (plain_stopped[1], fast_stopped[1]):
        assert done["text"] == expected
        assert done["reason"] == "stop" and done["stop_sequence"] == stop
    assert fast_ids == plain_ids  # not one token past the stop
    assert fast_stopped[1]["completion_tokens"] == plain_stopped[1]["completion_tokens"] < 48
    assert fast_stopped[1]["draft_accepted"] > 0


def test_ngram_index_proposes_what_followed_the_latest_match():
    history = [1, 2, 3, 4, 5, 9, 2, 3, 4, 6, 7, 2, 3]
    index = NgramIndex(history, min_n=2)
    assert index.propose(3) == [4, 6, 7]  # "2 3" last came before "4 6 7"
    history += [4]
    assert index.propose(8) == [6, 7, 2, 3, 4]  # "2 3 4": the latest one, up to the end
    history += [8]
    assert index.propose(8) == []  # "4 8" never came before
    assert index.propose(0) == []


def test_by_default_a_match_of_two_tokens_guesses_nothing():
    history = [1, 2, 3, 4, 5, 9, 2, 3]
    assert NgramIndex(history).propose(3) == []  # only "2 3" came before
    history += [4]
    assert NgramIndex(history).propose(3) == [5, 9, 2]  # "2 3 4" did


def test_ngram_index_prefers_the_longest_match():
    history = [5, 1, 2, 7, 3, 1, 2, 9, 5, 1, 2]
    assert NgramIndex(history, min_n=2, max_n=3).propose(1) == [7]  # "5 1 2", not "1 2"
    assert NgramIndex(history, min_n=2, max_n=2).propose(1) == [9]


def test_the_runner_reports_guessed_and_accepted_tokens(harness, tiny_q8_model_path):
    runner = harness.start(make_spec(tiny_q8_model_path, num_draft=8))
    stream = harness.run(collect(runner, COPY, GREEDY))
    assert stream.done.completion_tokens == GREEDY.max_tokens
    assert 0 < stream.done.draft_accepted <= stream.done.draft_tokens
    status = harness.run(runner.status())  # its only request: the same counts, last step's too
    assert status["draft_tokens"] == stream.done.draft_tokens
    assert status["draft_accepted"] == stream.done.draft_accepted


def test_a_cancel_mid_guessing_stops_the_stream_and_frees_the_slot(harness, tiny_q8_model_path):
    runner = harness.start(make_spec(tiny_q8_model_path, num_draft=8, num_parallel=1))
    plain = harness.run(collect(runner, COPY, greedy(200)))

    async def first_tokens_then_cancel() -> list[int]:
        seen: list[int] = []
        stream = runner.generate(GenerateCall(COPY, greedy(200)))
        async for event in stream:
            seen += event.token_ids
            if len(seen) >= 5:
                break
        await stream.aclose()
        return seen

    seen = harness.run(first_tokens_then_cancel())
    assert seen == plain.token_ids[: len(seen)]
    again = harness.run(collect(runner, COPY, greedy(200)))  # the only slot is free again
    assert again.token_ids == plain.token_ids


def test_num_draft_reaches_the_runner_spec():
    from localllm.daemon.inference.options import merge_options, runner_options
    from localllm.daemon.runners.types import DEFAULT_DRAFT
    from localllm.daemon.settings import Settings

    assert runner_options({}, Settings()).num_draft == DEFAULT_DRAFT
    assert (
        runner_options(merge_options({"num_draft": 3}, {"num_draft": 0}), Settings()).num_draft == 0
    )


def test_a_modelfile_can_turn_guessing_off_and_is_told_the_range():
    from localllm.model_registry.modelfile import ModelfileError, parse_modelfile

    assert parse_modelfile("FROM x\nPARAMETER num_draft 0\n").parameters == {"num_draft": 0}
    with pytest.raises(ModelfileError, match="num_draft must be an integer between 0 and 64"):
        parse_modelfile("FROM x\nPARAMETER num_draft 99\n")


def test_guesses_start_at_one_token_and_grow_only_while_they_hold():
    """A wrong first guess of 8 tokens made a 9-row decode: on text that never repeats that cost
    3% of every token (bench/RESULTS.md). One token first, doubling on full acceptance."""
    state = Speculation(NgramIndex([]))
    limits = [state.limit]
    for _ in range(4):
        state.adapt(state.limit, state.limit, 8)
        limits.append(state.limit)
    assert limits == [1, 2, 4, 8, 8]
    state.adapt(8, 3, 8)
    assert state.limit == 4 and state.pause == 0
    state.adapt(4, 0, 8)
    assert state.limit == 1 and state.pause == 2
