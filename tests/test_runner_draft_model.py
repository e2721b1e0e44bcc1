"""Speculative decoding with a draft model: the text is the target's, to the token.

The engine runs in this process on generated Q8_0 models (their logits do not depend on how many
tokens a decode holds), without guessing and with a draft model: one of the same vocabulary and
other weights (its guesses are often wrong), and the target itself (every guess is right). A
draft of another vocabulary is refused, by the engine and through the real runner subprocess.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace

import numpy as np
import pytest

from localllm.daemon.runners.protocol import FrameWriter
from localllm.daemon.runners.types import GenerateCall, InvalidRequestError, SamplingParams
from localllm.model_registry.tiny_vocabulary import tiny_vocabulary
from tests.support.engine import run_engine
from tests.support.runner import collect, make_spec, write_tiny_model

llama_cpp = pytest.importorskip("llama_cpp")

from localllm.daemon.runners.worker.draft_model import DraftModel, VocabularyMismatchError  # noqa: E402
from localllm.daemon.runners.worker.engine import Engine  # noqa: E402
from localllm.daemon.runners.worker.model import Model  # noqa: E402

COPY = "Copy this list: red green blue, one two three, red green blue, one two three. Again: red"
FREE = "Once upon a time there was"
SAMPLED = SamplingParams(temperature=0.9, seed=7, repeat_penalty=1.1, max_tokens=40)


def greedy(max_tokens: int = 40, **kw) -> SamplingParams:
    return SamplingParams(temperature=0.0, repeat_penalty=1.0, max_tokens=max_tokens, **kw)


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    """The target, a draft with other weights, and a draft of another vocabulary (all Q8_0)."""
    folder = tmp_path_factory.mktemp("draft-models")
    tokens = len(tiny_vocabulary().tokens)
    return {
        "target": write_tiny_model(folder / "target.gguf", file_type="Q8_0", seed=2),
        "other": write_tiny_model(folder / "other.gguf", file_type="Q8_0", seed=9, n_layer=1),
        "foreign": write_tiny_model(
            folder / "foreign.gguf", file_type="Q8_0", seed=3, vocab_size=tokens + 40
        ),
    }


@pytest.fixture(scope="module")
def model(paths):
    llama_cpp.llama_backend_init()
    loaded = Model.load(make_spec(paths["target"]))
    yield loaded
    loaded.close()


def with_draft(model: Model, paths, draft: str | None, **overrides):
    spec = make_spec(model.spec.model_paths[0], num_draft=8, **overrides)
    if draft is None:
        return replace(spec, num_draft=0)
    return replace(spec, draft_name=draft, draft_paths=(str(paths[draft]),))


@pytest.mark.parametrize("draft", ["other", "target"])
@pytest.mark.parametrize("prompts", [[COPY], [FREE], [COPY, FREE]], ids=["copy", "free", "two"])
def test_greedy_text_is_the_same_with_a_draft_model(model, paths, draft, prompts):
    batch = [[GenerateCall(prompt, greedy()) for prompt in prompts]]
    plain_ids, plain_done = run_engine(model, with_draft(model, paths, None), batch)
    engines: list[Engine] = []
    spec = with_draft(model, paths, draft)
    fast_ids, fast_done = run_engine(model, spec, batch, prepare=engines.append)
    assert fast_ids == plain_ids
    # the guesses were the draft model's (not prompt lookup's): it read every sequence
    assert sum(1 for seen in engines[0].speculator.draft_model.seen if seen) == len(prompts)
    assert [d["text"] for d in fast_done.values()] == [d["text"] for d in plain_done.values()]
    assert all(d["completion_tokens"] == 40 for d in fast_done.values())
    assert all(d["draft_tokens"] > 0 for d in fast_done.values())
    if draft == "target":  # the target as its own draft: every guess is what it samples
        assert all(d["draft_accepted"] == d["draft_tokens"] for d in fast_done.values())


def test_sampled_text_is_the_same_with_a_draft_model(model, paths):
    batch = [[GenerateCall(COPY, SAMPLED), GenerateCall(FREE, SAMPLED)]]
    plain_ids, _ = run_engine(model, with_draft(model, paths, None), batch)
    fast_ids, done = run_engine(model, with_draft(model, paths, "other"), batch)
    assert fast_ids == plain_ids
    assert all(d["draft_tokens"] > 0 for d in done.values())


def test_the_draft_follows_a_slot_into_its_next_request(model, paths):
    """One slot, three requests: a shared prefix, another prompt, the first again; the draft
    drops what the target dropped, so its own guesses stay right (it is the target here)."""
    rounds = [[GenerateCall(p, greedy(24))] for p in (COPY, COPY + " green", FREE, COPY)]
    plain_ids, _ = run_engine(model, with_draft(model, paths, None, num_parallel=1), rounds)
    spec = with_draft(model, paths, "target", num_parallel=1)
    fast_ids, done = run_engine(model, spec, rounds)
    assert fast_ids == plain_ids
    assert all(0 < d["draft_accepted"] == d["draft_tokens"] for d in done.values())


def last_logits(draft: DraftModel) -> list[float]:
    row = llama_cpp.llama_get_logits_ith(draft.ctx, -1)
    return np.ctypeslib.as_array(row, shape=(draft.model.n_vocab,)).tolist()


@pytest.mark.parametrize("second", [FREE + " a king", COPY[:40] + " purple", COPY[:30]])
def test_the_draft_cache_holds_exactly_the_new_history(model, second):
    """Guessing for one history, then another (other prompt, a shared start, a cut): the draft's
    logits are those of a draft that only ever saw the second (its tiny guesses barely depend on
    the context, its logits do)."""
    spec = make_spec(model.spec.model_paths[0], num_parallel=1)
    reused, fresh = DraftModel(model, spec, 1), DraftModel(model, spec, 1)
    reused.propose(0, model.tokenize(COPY), 8)
    tokens = model.tokenize(second)
    assert reused.propose(0, tokens, 4) == fresh.propose(0, tokens, 4)
    assert last_logits(reused) == last_logits(fresh)
    assert reused.seen[0] == fresh.seen[0]


@pytest.mark.parametrize("limit", [1, 2, 5, 13])
def test_max_tokens_is_exact_with_a_draft_model(model, paths, limit):
    request = GenerateCall(COPY, greedy(limit))
    ids, done = run_engine(model, with_draft(model, paths, "target"), [[request]])
    plain_ids, _ = run_engine(model, with_draft(model, paths, None), [[request]])
    assert ids.get(1, []) == plain_ids.get(1, [])
    assert len(ids.get(1, [])) == done[1]["completion_tokens"] == limit
    assert done[1]["reason"] == "length"


def test_a_stop_string_ends_the_text_where_it_does_without_a_draft(model, paths):
    _, plain = run_engine(model, with_draft(model, paths, None), [[GenerateCall(FREE, greedy())]])
    text = plain[1]["text"]
    stop = text[len(text) // 3 : len(text) // 3 + 6]
    request = GenerateCall(FREE, greedy(stop=(stop,)))
    plain_ids, plain_done = run_engine(model, with_draft(model, paths, None), [[request]])
    fast_ids, fast_done = run_engine(model, with_draft(model, paths, "target"), [[request]])
    assert fast_ids == plain_ids
    assert fast_done[1]["text"] == plain_done[1]["text"] == text[: text.index(stop)]
    assert fast_done[1]["reason"] == "stop" and fast_done[1]["stop_sequence"] == stop
    assert fast_done[1]["draft_accepted"] > 0


def test_a_draft_of_another_vocabulary_is_refused(model, paths):
    spec = with_draft(model, paths, "foreign")
    with pytest.raises(VocabularyMismatchError) as caught, tempfile.TemporaryFile() as sink:
        Engine(model, spec, 1, FrameWriter(sink.fileno()))
    message = str(caught.value)
    assert "draft model 'foreign' does not share the vocabulary of 'tiny-test'" in message
    assert "tokens, not" in message


def test_the_runner_refuses_a_foreign_draft_as_a_bad_request(harness, paths):
    spec = make_spec(paths["target"])
    spec = replace(spec, draft_name="foreign", draft_paths=(str(paths["foreign"]),))
    with pytest.raises(InvalidRequestError) as caught:
        harness.start(spec)
    message = str(caught.value)
    assert "cannot load model 'tiny-test': draft model 'foreign' does not share" in message
    assert str(paths["foreign"].parent) not in message  # no path in what a client may see


def test_the_runner_drafts_with_its_draft_model(harness, paths):
    spec = make_spec(paths["target"], num_draft=8)
    spec = replace(spec, draft_name="target", draft_paths=(str(paths["target"]),))
    runner = harness.start(spec)
    stream = harness.run(collect(runner, FREE, greedy(24)))
    assert stream.done.completion_tokens == 24
    assert 0 < stream.done.draft_accepted == stream.done.draft_tokens
    status = harness.run(runner.status())
    assert status["draft_tokens"] == stream.done.draft_tokens
