"""Thinking models through the real daemon, the real runner and the official clients.

The test models think as Qwen3 (``<think>`` opened by the template's generation prompt) and
gpt-oss (harmony channels, with control tokens) do. Their random weights never close the
thinking, so a test ends it with ``think_budget``: the model is then made to answer.
"""

from __future__ import annotations

import json

import anthropic
import ollama
import openai
import pytest

from localllm.daemon.inference.templates import CHATML_TEMPLATE
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.daemon import Daemon, make_store

pytestmark = pytest.mark.slow

HI = [{"role": "user", "content": "Hello there"}]
MODELS = ["qwen", "harmony"]
MARKERS = ("<think>", "</think>", "<|channel|>", "<|message|>", "<|end|>", "<|start|>")
BUDGET = {"num_predict": 24, "think_budget": 8, "seed": 3}
SCHEMA = {  # short whatever the random model writes
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("thinking")
    q8 = {"file_type": "Q8_0"}  # the same logits whatever the batch: runs compare exactly
    models = {
        "qwen": write_tiny_model(root / "qwen.gguf", thinking="qwen3", seed=4, **q8),
        "harmony": write_tiny_model(root / "harmony.gguf", thinking="gpt-oss", seed=5, **q8),
        "plain": write_tiny_model(root / "plain.gguf", seed=1),
        # <think> tokens, but a template that knows nothing of them
        "tokens-only": write_tiny_model(
            root / "chatml.gguf", thinking="qwen3", chat_template=CHATML_TEMPLATE, seed=4, **q8
        ),
    }
    with Daemon(make_store(root / "store", models), root / "logs") as running:
        yield running


@pytest.fixture(scope="module")
def client(daemon):
    return ollama.Client(host=daemon.url)


def clean(text: str) -> bool:
    return not any(marker in text for marker in MARKERS)


def test_show_lists_thinking(client):
    assert client.show("qwen").capabilities == ["completion", "chat", "thinking"]
    assert client.show("harmony").capabilities == ["completion", "chat", "thinking"]
    assert client.show("plain").capabilities == ["completion", "chat"]


@pytest.mark.parametrize("model", MODELS)
def test_think_gives_thinking_apart_from_the_content(client, model):
    reply = client.chat(model, messages=HI, think=True, options={"num_predict": 12, "seed": 3})
    assert reply.message.thinking and clean(reply.message.thinking)
    assert reply.message.content == ""  # still thinking when the limit came
    assert reply.eval_count == 12


@pytest.mark.parametrize("model", MODELS)
def test_the_budget_ends_the_thinking_and_the_model_answers(client, model):
    plain = client.chat(model, messages=HI, think=True, options={"num_predict": 24, "seed": 3})
    reply = client.chat(model, messages=HI, think=True, options=BUDGET)
    thinking, content = reply.message.thinking, reply.message.content
    assert thinking and content and clean(thinking) and clean(content)
    assert thinking not in content and content not in plain.message.thinking
    assert plain.message.thinking.startswith(thinking)  # the same thinking, cut short
    assert reply.eval_count == 24 and reply.done_reason == "length"
    assert reply.prompt_eval_count == plain.prompt_eval_count  # the request's own prompt


@pytest.mark.parametrize("model", MODELS)
def test_streaming_gives_the_same_split(client, model):
    whole = client.chat(model, messages=HI, think=True, options=BUDGET)
    chunks = list(client.chat(model, messages=HI, think=True, stream=True, options=BUDGET))
    thoughts = [c.message.thinking for c in chunks if c.message.thinking]
    contents = [c.message.content for c in chunks if c.message.content]
    assert "".join(thoughts) == whole.message.thinking and len(thoughts) <= 8  # one per token
    assert "".join(contents) == whole.message.content
    first_content = next(i for i, c in enumerate(chunks) if c.message.content)
    assert not any(c.message.thinking for c in chunks[first_content:])
    assert all(clean(c.message.content) and clean(c.message.thinking or "") for c in chunks)
    assert chunks[-1].done and chunks[-1].eval_count == 24


def test_think_false_turns_qwen_thinking_off(client):
    on = client.chat("qwen", messages=HI, think=True, options={"num_predict": 12, "seed": 3})
    off = client.chat("qwen", messages=HI, think=False, options={"num_predict": 12, "seed": 3})
    assert off.message.thinking is None and off.message.content and clean(off.message.content)
    assert off.prompt_eval_count > on.prompt_eval_count  # the template wrote an empty block


def test_think_false_drops_the_thinking_gpt_oss_cannot_skip(client):
    # think=False asks the template for the lowest effort, as think="low" does: same prompt
    low = client.chat("harmony", messages=HI, think="low", options=BUDGET)
    off = client.chat("harmony", messages=HI, think=False, options=BUDGET)
    assert off.message.thinking is None and off.message.content == low.message.content
    assert low.message.thinking not in off.message.content
    assert off.eval_count == low.eval_count == 24


def test_reasoning_effort_reaches_the_template(client):
    medium = client.chat("harmony", messages=HI, think=True, options={"num_predict": 1})
    high = client.chat("harmony", messages=HI, think="high", options={"num_predict": 1})
    assert medium.prompt_eval_count != high.prompt_eval_count


@pytest.mark.parametrize("model", MODELS)
def test_past_thinking_goes_to_the_template(client, model):
    call = {"function": {"name": "lookup", "arguments": {}}}
    turns = [HI[0], {"role": "assistant", "content": "", "tool_calls": [call]}]
    turns.append({"role": "tool", "content": "42"})
    thought = dict(turns[1], thinking="I need to look this up first")
    without = client.chat(model, messages=turns, think=True, options={"num_predict": 1})
    with_it = client.chat(model, messages=[turns[0], thought, turns[2]], options={"num_predict": 1})
    assert with_it.prompt_eval_count > without.prompt_eval_count


def test_generate_thinks_too(client):
    reply = client.generate("qwen", prompt="Hello", think=True, options=BUDGET)
    assert reply.thinking and reply.response and clean(reply.response)
    assert reply.thinking not in reply.response


def test_the_vocabulary_tells_when_the_template_does_not(client):
    assert client.show("tokens-only").capabilities == ["completion", "chat"]  # no thinking
    options = {"num_predict": 12, "seed": 3}
    reply = client.chat("tokens-only", messages=HI, think=True, options=options)
    assert reply.message.thinking and reply.message.content == ""  # <think> opened for it
    reply = client.chat("tokens-only", messages=HI, options=options)
    assert reply.message.thinking is None and reply.message.content  # it did not open one


def test_a_model_that_cannot_think_is_refused(client, daemon):
    with pytest.raises(ollama.ResponseError) as error:
        client.chat("plain", messages=HI, think=True)
    assert error.value.status_code == 400 and "does not support thinking" in error.value.error
    with pytest.raises(openai.BadRequestError, match="does not support thinking"):
        daemon.openai().chat.completions.create(
            model="plain", messages=HI, reasoning_effort="low", max_tokens=2
        )
    with pytest.raises(ollama.ResponseError, match="raw"):
        client.generate("qwen", prompt="x", raw=True, think=True)
    assert client.chat("plain", messages=HI, think=False, options={"num_predict": 2}).done


def test_bad_think_values_are_refused(client):
    with pytest.raises(ollama.ResponseError, match="think must be true, false"):
        client.chat("qwen", messages=HI, think="maximum")  # type: ignore[arg-type]
    with pytest.raises(ollama.ResponseError, match="think_budget"):
        client.chat("qwen", messages=HI, think=True, options={"think_budget": -1})


@pytest.mark.parametrize("model", MODELS)
def test_json_format_applies_to_the_answer(client, model):
    options = {**BUDGET, "num_predict": 80}
    reply = client.chat(model, messages=HI, think=True, format=SCHEMA, options=options)
    assert reply.message.thinking and clean(reply.message.thinking)
    assert json.loads(reply.message.content).keys() == {"ok"} and reply.done_reason == "stop"


def test_json_format_with_thinking_off(client):
    options = {"num_predict": 60, "seed": 3}
    reply = client.chat("qwen", messages=HI, think=False, format=SCHEMA, options=options)
    assert reply.message.thinking is None and json.loads(reply.message.content).keys() == {"ok"}


@pytest.mark.parametrize("model", MODELS)
def test_openai_reasoning_content_and_budget(daemon, model):
    client = daemon.openai()
    extra = {"think_budget": 6}
    reply = client.chat.completions.create(
        model=model, messages=HI, max_tokens=20, seed=3, reasoning_effort="high", extra_body=extra
    )
    message = reply.choices[0].message
    thinking = message.model_extra["reasoning_content"]
    assert thinking and message.content and clean(thinking) and clean(message.content)
    assert thinking not in message.content and reply.usage.completion_tokens == 20
    stream = client.chat.completions.create(
        model=model, messages=HI, max_tokens=20, seed=3, stream=True, extra_body=extra
    )
    deltas = [chunk.choices[0].delta for chunk in stream if chunk.choices]
    reasoning = [d.model_extra.get("reasoning_content") for d in deltas]
    reasoning = [r for r in reasoning if r]
    assert reasoning and len(reasoning) <= 6 and clean("".join(reasoning))
    assert "".join(d.content or "" for d in deltas) and not any(
        d.content and d.model_extra.get("reasoning_content") for d in deltas
    )


def test_openai_history_and_effort_none(daemon):
    client = daemon.openai()

    def prompt_tokens(messages, **kwargs) -> int:
        reply = client.chat.completions.create(
            model="qwen", messages=messages, max_tokens=1, **kwargs
        )
        return reply.usage.prompt_tokens

    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    turns = [HI[0], {"role": "assistant", "content": None, "tool_calls": [call]}]
    turns.append({"role": "tool", "tool_call_id": "c1", "content": "42"})
    thought = [turns[0], {**turns[1], "reasoning_content": "Look it up first"}, turns[2]]
    assert prompt_tokens(thought) > prompt_tokens(turns)
    off = client.chat.completions.create(
        model="qwen", messages=HI, max_tokens=6, seed=3, reasoning_effort="none"
    )
    assert off.usage.prompt_tokens > prompt_tokens(HI)  # the template closed the thinking
    message = off.choices[0].message
    assert message.content and clean(message.content)
    assert message.model_extra.get("reasoning_content") is None


def test_openai_forced_tool_call_after_thinking(daemon):
    weather = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "maxLength": 8}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }
    reply = daemon.openai().chat.completions.create(
        model="qwen",
        messages=HI,
        tools=[weather],
        tool_choice="required",
        max_tokens=80,
        seed=3,
        extra_body={"think_budget": 6},
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.model_extra["reasoning_content"]
    [call] = choice.message.tool_calls
    assert call.function.name == "get_weather" and "city" in json.loads(call.function.arguments)


@pytest.mark.parametrize("model", MODELS)
def test_the_responses_api_puts_thinking_in_a_reasoning_item(daemon, model):
    client = openai.OpenAI(base_url=daemon.url + "/v1", api_key="unused", max_retries=0)
    extra = {"think_budget": 8, "seed": 3}
    whole = client.responses.create(
        model=model,
        input="Hello there",
        reasoning={"effort": "low"},
        max_output_tokens=24,
        extra_body=extra,
    )
    kinds = [item.type for item in whole.output]
    assert kinds[0] == "reasoning" and "message" in kinds
    thinking = "".join(part.text for part in whole.output[0].content or [])
    assert thinking and clean(thinking) and clean(whole.output_text)
    assert thinking not in whole.output_text
    events = list(
        client.responses.create(
            model=model,
            input="Hello there",
            reasoning={"effort": "low"},
            max_output_tokens=24,
            extra_body=extra,
            stream=True,
        )
    )
    streamed = "".join(e.delta for e in events if e.type == "response.reasoning_text.delta")
    assert streamed == thinking  # the same seed: the same thinking, streamed apart
    answer = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert answer == whole.output_text


def test_a_stop_string_that_ends_the_answer_after_a_budget_is_named(daemon):
    """The answer part ends on the stop string; the whole answer (both parts) names it."""
    client = anthropic.Anthropic(base_url=daemon.url, api_key="unused", max_retries=0)
    fields = {
        "model": "qwen",
        "max_tokens": 40,
        "messages": HI,
        "thinking": {"type": "enabled", "budget_tokens": 8},
        "extra_body": {"temperature": 0, "options": {"seed": 3}},
    }
    full = client.messages.create(**fields)
    thinking, text = (
        block.thinking if block.type == "thinking" else block.text for block in full.content
    )
    assert thinking and len(text) > 6 and clean(text)
    stop = text[4:7]
    cut = client.messages.create(**fields, stop_sequences=["never in this text", stop])
    assert cut.stop_reason == "stop_sequence" and cut.stop_sequence == stop
    assert (
        next(block.text for block in cut.content if block.type == "text")
        == text[: text.index(stop)]
    )
