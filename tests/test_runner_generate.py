"""Generation through a real runner process: sampling, stops, grammars, logprobs, batching."""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import replace

import pytest

from localllm.daemon.runners.types import GenerateCall, SamplingParams, TokenEvent
from tests.support.runner import GREEDY, collect, make_spec, write_tiny_model


@pytest.fixture(scope="module")
def model_path(tiny_model_path):
    """The suite's shared tiny model (conftest writes it once per session)."""
    return tiny_model_path


@pytest.fixture(scope="module")
def runner(harness, model_path):
    return harness.start(make_spec(model_path))


@pytest.fixture(scope="module")
def q8_runner(harness, tmp_path_factory):
    """Q8_0, whose CPU kernels give bit-identical logits for a row whatever the batch size."""
    path = write_tiny_model(tmp_path_factory.mktemp("gen") / "q8.gguf", seed=2, file_type="Q8_0")
    return harness.start(make_spec(path))


def test_ready_reports_info(runner):
    info = runner.info
    assert runner.state == "ready" and runner.alive
    assert info.backend == "cpu" and info.gpu_layers == 0
    assert info.n_ctx == 512 and info.n_parallel == 4 and info.n_embd == 64
    assert info.total_layers == 3 and info.n_ctx_train == 2048
    assert info.memory_bytes > 10_000_000 and info.pid == runner.pid
    assert "CPU" in info.system_info


def test_generate_streams_tokens_then_done(harness, runner):
    stream = harness.run(collect(runner, "Hello world"))
    done = stream.done
    assert done.reason == "length"
    assert done.completion_tokens == 24 == len(stream.token_ids)
    assert done.prompt_tokens == 3
    assert stream.text
    assert done.first_token_seconds > 0 and done.generation_seconds > 0


def test_greedy_is_deterministic(harness, runner):
    first = harness.run(collect(runner, "The same prompt"))
    second = harness.run(collect(runner, "The same prompt"))
    assert first.text == second.text and first.token_ids == second.token_ids


def test_different_seeds_give_different_text(harness, runner):
    texts = set()
    for seed in range(3):
        params = SamplingParams(temperature=1.0, seed=seed, max_tokens=24)
        texts.add(harness.run(collect(runner, "Once upon a time", params)).text)
    assert len(texts) == 3


def test_same_seed_same_text_at_any_concurrency(harness, q8_runner):
    """Each request alone, then eight at once through four slots, each sent once the one
    before it has streamed a token (so prompts prefill beside other sequences' decodes, and the
    last four take slots the first four freed)."""
    prompts = [f"Prompt number {i} says" for i in range(8)]
    params = [SamplingParams(temperature=0.9, seed=100 + i, max_tokens=80) for i in range(8)]
    pairs = list(zip(prompts, params, strict=True))
    alone = [harness.run(collect(q8_runner, p, s)).text for p, s in pairs]

    async def together() -> list[str]:
        streaming = [asyncio.Event() for _ in pairs]

        async def in_turn(i: int, prompt: str, params: SamplingParams) -> str:
            if i:
                await streaming[i - 1].wait()
            text = ""
            async for event in q8_runner.generate(GenerateCall(prompt, params)):
                streaming[i].set()
                if isinstance(event, TokenEvent):
                    text += event.text
            return text

        return await asyncio.gather(*(in_turn(i, *pair) for i, pair in enumerate(pairs)))

    assert harness.run(together()) == alone


def test_more_requests_than_slots_queue_and_all_complete(harness, runner):
    async def scenario():
        params = replace(GREEDY, max_tokens=400)
        tasks = [asyncio.create_task(collect(runner, f"Request {i}", params)) for i in range(8)]
        seen = []
        while not all(t.done() for t in tasks):
            status = await runner.status()
            seen.append((status["busy"], status["queued"]))
            await asyncio.sleep(0.002)
        return await asyncio.gather(*tasks), seen

    streams, seen = harness.run(scenario())
    assert [s.done.reason for s in streams] == ["length"] * 8
    assert [s.done.completion_tokens for s in streams] == [400] * 8
    assert (4, 4) in seen and max(busy for busy, _ in seen) == 4


def test_stop_string_is_never_emitted(harness, runner):
    params = replace(GREEDY, max_tokens=40)
    full = harness.run(collect(runner, "Tell me a story", params)).text
    stop = full[12:15]
    stops = ("never in the story", stop)
    cut = harness.run(collect(runner, "Tell me a story", replace(params, stop=stops)))
    assert cut.done.reason == "stop" and cut.done.stop_sequence == stop  # which one, for APIs
    assert cut.text == full[: full.index(stop)]
    assert stop not in cut.text


def test_grammar_constrains_output(harness, runner):
    params = replace(GREEDY, grammar='root ::= ("yes" | "no") "!"', max_tokens=20)
    stream = harness.run(collect(runner, "Answer:", params))
    assert stream.text in ("yes!", "no!")
    assert stream.done.reason == "stop"


def test_json_schema_output_validates(harness, runner):
    jsonschema = pytest.importorskip("jsonschema")
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 6},
            "age": {"type": "integer"},
            "mood": {"enum": ["happy", "sad"]},
            "tags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3},
        },
        "required": ["name", "age", "mood", "tags"],
    }
    params = SamplingParams(temperature=0.7, seed=3, json_schema=json.dumps(schema), max_tokens=200)
    stream = harness.run(collect(runner, "Describe a person as JSON:", params))
    assert stream.done.reason == "stop"
    jsonschema.validate(json.loads(stream.text), schema)


def test_invalid_grammar_is_a_request_error(harness, runner):
    from localllm.daemon.runners.types import RunnerError

    with pytest.raises(RunnerError, match="grammar"):
        harness.run(collect(runner, "x", replace(GREEDY, grammar="root ::= (")))
    assert runner.alive


def test_logit_bias_forces_a_token(harness, runner):
    token = harness.run(runner.tokenize("Z", add_bos=False))[-1]  # after SPM's space piece
    params = SamplingParams(temperature=1.0, seed=1, max_tokens=8, logit_bias={token: 100.0})
    stream = harness.run(collect(runner, "Hello", params))
    assert stream.token_ids == [token] * 8
    assert stream.text == "Z" * 8


def test_visible_tokens_keep_a_control_token_in_the_text(harness, runner):
    """Control tokens render as nothing unless the request names them (a thinking format's
    markers); a stop string can then match one, and a name that is no token is ignored."""
    [token] = harness.run(runner.tokenize("<|im_start|>", add_bos=False))
    params = SamplingParams(temperature=1.0, seed=1, max_tokens=3, logit_bias={token: 100.0})
    hidden = harness.run(collect(runner, "Hello", params))
    assert hidden.token_ids == [token] * 3 and hidden.text == ""
    kept = harness.run(collect(runner, "Hello", params, visible_tokens=("<|im_start|>", "<nope>")))
    assert kept.token_ids == [token] * 3 and kept.text == "<|im_start|>" * 3
    stopped = replace(params, stop=("<|im_start|><|im_start|>",))
    cut = harness.run(collect(runner, "Hello", stopped, visible_tokens=("<|im_start|>",)))
    assert cut.done.reason == "stop" and cut.text == ""


def test_logprobs_shape(harness, runner):
    params = replace(GREEDY, max_tokens=6, logprobs=3)
    stream = harness.run(collect(runner, "Hello world", params))
    for event in stream.events:
        (entry,) = event.logprobs
        assert entry["id"] == event.token_ids[0]
        assert entry["logprob"] <= 0
        top = entry["top_logprobs"]
        assert len(top) == 3
        assert [t["logprob"] for t in top] == sorted((t["logprob"] for t in top), reverse=True)
        assert top[0]["id"] == entry["id"]  # greedy picks the most likely token
        assert sum(math.exp(t["logprob"]) for t in top) <= 1.0 + 1e-6
        assert bytes(entry["bytes"]).decode() == entry["token"]


def test_max_tokens_zero_returns_at_once(harness, runner):
    stream = harness.run(collect(runner, "Hello", replace(GREEDY, max_tokens=0)))
    assert stream.done.reason == "length" and stream.done.completion_tokens == 0


def test_end_of_turn_token_stops_generation(harness, tmp_path):
    path = write_tiny_model(tmp_path / "eos.gguf", seed=1, end_of_turn="immediately")
    runner = harness.start(make_spec(path))
    stream = harness.run(collect(runner, "Hello", replace(GREEDY, max_tokens=20)))
    assert stream.done.reason == "stop" and stream.text == ""
    assert stream.done.stop_sequence is None
    ignoring = harness.run(collect(runner, "Hello", replace(GREEDY, max_tokens=5, ignore_eos=True)))
    assert ignoring.done.reason == "length" and ignoring.done.completion_tokens == 5
    harness.run(runner.stop())
