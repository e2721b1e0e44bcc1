"""Thinking formats, what templates are told, request plans and the two-part run."""

from __future__ import annotations

import asyncio
import dataclasses
import typing
from dataclasses import replace

import pytest

from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference.templates import CHATML_TEMPLATE, ChatTemplate
from localllm.daemon.inference.thinking import (
    detect_format,
    history_for_template,
    parse_think,
    plan_thinking,
    template_variables,
    vocabulary_format,
)
from localllm.daemon.inference.thinking_run import ThinkingRun, add_parts, thinking_run
from localllm.daemon.runners.types import (
    DoneEvent,
    DoneReason,
    GenerateCall,
    SamplingParams,
    SamplingSite,
)
from localllm.model_registry.tiny_thinking import HARMONY_TEMPLATE, QWEN3_TEMPLATE

# Pieces of real templates, enough to tell each family
QWEN3 = "{%- if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
R1 = "{% set content = content.split('</think>')[-1] %}<\uff5cAssistant\uff5c><think>\n"
GPT_OSS = "Reasoning: {{ reasoning_effort }}<|start|>assistant<|channel|>final<|message|>"
MAGISTRAL = "[SYSTEM_PROMPT]Think inside [THINK] and [/THINK].[/SYSTEM_PROMPT]"


@pytest.mark.parametrize(
    ("template", "name", "switchable", "takes_effort"),
    [
        (QWEN3, "think", True, False),
        (R1, "think", False, False),
        (GPT_OSS, "harmony", False, True),
        (MAGISTRAL, "mistral", False, False),
        (QWEN3_TEMPLATE, "think", True, False),
        (HARMONY_TEMPLATE, "harmony", False, True),
    ],
)
def test_formats_are_found_in_templates(template, name, switchable, takes_effort):
    fmt = detect_format(template)
    assert (fmt.name, fmt.switchable, fmt.takes_effort) == (name, switchable, takes_effort)


@pytest.mark.parametrize("template", [None, "", CHATML_TEMPLATE, "{{ messages }}"])
def test_templates_without_thinking(template):
    assert detect_format(template) is None


def test_the_vocabulary_tells_when_the_template_does_not():
    def vocabulary(*tokens):
        async def tokenize(text):
            return [1] if text in tokens else [1] * len(text)

        return asyncio.run(vocabulary_format(tokenize))

    assert vocabulary("<think>", "</think>").name == "think"
    assert vocabulary("<|channel|>", "<|message|>", "<think>", "</think>").name == "harmony"
    assert vocabulary("[THINK]", "[/THINK]").name == "mistral"
    assert vocabulary("<think>") is None and vocabulary() is None


def test_think_values():
    assert [parse_think(v) for v in (None, True, False, "low", "high")] == [
        None,
        True,
        False,
        "low",
        "high",
    ]
    for bad in ("maybe", 1, "HIGH", ["low"]):
        with pytest.raises(BadRequestError, match="think must be true, false"):
            parse_think(bad)


def test_template_variables():
    qwen, oss = detect_format(QWEN3), detect_format(GPT_OSS)
    assert template_variables(None, qwen) == {}
    assert template_variables(True, qwen) == {"enable_thinking": True}
    assert template_variables(False, qwen) == {"enable_thinking": False}
    assert template_variables("high", oss) == {"enable_thinking": True, "reasoning_effort": "high"}
    assert template_variables(False, oss) == {"enable_thinking": False, "reasoning_effort": "low"}
    assert template_variables(True, None) == {}


def test_the_tiny_templates_take_the_variables():
    qwen, oss = ChatTemplate(QWEN3_TEMPLATE), ChatTemplate(HARMONY_TEMPLATE)
    hi = [{"role": "user", "content": "hi"}]
    assert qwen.render(hi).endswith("<|im_start|>assistant\n<think>\n")
    off = qwen.render(hi, variables={"enable_thinking": False})
    assert off.endswith("<think>\n\n</think>\n\n")
    assert "Reasoning: medium" in oss.render(hi)
    assert "Reasoning: high" in oss.render(hi, variables={"reasoning_effort": "high"})


def test_past_thinking_goes_under_both_names():
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a", "thinking": "t"},
        {"role": "assistant", "content": "b", "reasoning_content": "r"},
    ]
    out = history_for_template(messages)
    assert out[0] == messages[0]
    assert out[1]["reasoning_content"] == out[1]["thinking"] == "t"
    assert out[2]["reasoning_content"] == out[2]["thinking"] == "r"
    assert "thinking" not in messages[2]  # the request's own messages are left as they are


def test_plans():
    qwen, r1, oss = detect_format(QWEN3), detect_format(R1), detect_format(GPT_OSS)
    with pytest.raises(BadRequestError, match="'m' does not support thinking"):
        plan_thinking("m", None, True, "p")
    assert plan_thinking("m", None, None, "p") is None
    assert plan_thinking("m", None, False, "p", budget=5) is None
    plan = plan_thinking("m", qwen, True, "<|im_start|>assistant\n")  # opened by us
    assert plan.opening == "<think>\n" and plan.opened and plan.show and not plan.two_parts
    plan = plan_thinking("m", qwen, None, "<|im_start|>assistant\n")  # the model decides
    assert plan.opening == "" and not plan.opened
    plan = plan_thinking("m", qwen, False, "...</think>\n\n", grammar=True)
    assert not plan.show and not plan.two_parts  # thinking is off: the grammar applies at once
    plan = plan_thinking("m", r1, False, "<think>\n", grammar=True)  # cannot be turned off
    assert not plan.show and plan.two_parts and plan.opened and plan.opening == ""
    plan = plan_thinking("m", oss, "low", "<|start|>assistant", budget=0)
    assert plan.opening == "<|channel|>analysis<|message|>" and plan.budget == 0


CALL = GenerateCall(
    "PROMPT",
    SamplingParams(max_tokens=50, json_schema='{"type": "object"}', stop=("STOP",), seed=3),
)


def done(reason: str, completion: int, prompt: int = 10) -> DoneEvent:
    return DoneEvent(reason, prompt, prompt - 2, completion, 0.5, 1.0, 0.2)


def test_a_budget_makes_a_thinking_part_then_an_answer_part():
    run = thinking_run("m", detect_format(QWEN3), True, 8, CALL)
    first = run.first_call()
    assert first.prompt == "PROMPT<think>\n" and first.visible_tokens == ("<think>", "</think>")
    assert first.params.max_tokens == 8 and first.params.stop == ("</think>",)
    assert first.params.json_schema is None and first.params.seed == 3
    assert run.feed("thoughts") == ("thoughts", "")
    call, held = run.next_call(done("length", 8))
    assert call.prompt == "PROMPT<think>\nthoughts\n</think>\n\n" and held == ("", "")
    assert call.params.max_tokens == 42 and call.params.stop == ("STOP",)
    assert call.params.json_schema == CALL.params.json_schema
    assert run.feed("\n{}") == ("", "{}")
    assert run.next_call(done("stop", 2)) is None
    total = add_parts(run.first_part, done("stop", 2, prompt=25))
    assert (total.prompt_tokens, total.completion_tokens, total.reason) == (10, 10, "stop")
    assert total.generation_seconds == 1.0 + 0.5 + 1.0 and total.prompt_seconds == 0.5


# How two parts' DoneEvents combine, field by field: a field added to DoneEvent must be
# named here (and, unless it is the answer part's, in ``add_parts``) or the test below fails.
FROM_FIRST = ("prompt_tokens", "prompt_evaluated", "prompt_seconds", "first_token_seconds")
FROM_FIRST += ("prompt_disk_tokens",)  # the prompt's, as prompt_evaluated
FROM_SECOND = ("reason", "stop_sequence", "sampling")  # how the answer ended, and where
SUMMED = ("completion_tokens", "draft_tokens", "draft_accepted")
SUMMED += ("prompt_disk_bytes", "prompt_disk_seconds")  # both parts' reads from disk
COMBINED = {
    "generation_seconds": lambda a, b: (
        a.generation_seconds + b.prompt_seconds + b.generation_seconds
    )
}


def distinct_done(offset: int) -> DoneEvent:
    """A DoneEvent whose every field holds a value no other field (or offset) holds."""
    made = {"int": lambda n: n, "float": lambda n: n + 0.25, "str": lambda n: f"s{n}"}
    made |= {  # the Literals: a value picked by ``n``
        "DoneReason": lambda n: typing.get_args(DoneReason)[n % 3],
        "SamplingSite": lambda n: typing.get_args(SamplingSite)[n % 3],
    }
    values = {}
    for index, field in enumerate(dataclasses.fields(DoneEvent)):
        kind = str(field.type).split(" | ")[0]
        assert kind in made, f"give distinct_done a value for {field.name}: {field.type}"
        values[field.name] = made[kind](offset + index + 1)
    return DoneEvent(**values)


def test_every_field_of_the_parts_reaches_the_whole():
    first, second = distinct_done(100), distinct_done(200)
    total = add_parts(first, second)
    for field in dataclasses.fields(DoneEvent):
        name, got = field.name, getattr(total, field.name)
        a, b = getattr(first, name), getattr(second, name)
        if name in FROM_FIRST:
            assert got == a, name
        elif name in FROM_SECOND:
            assert got == b, name
        elif name in SUMMED:
            assert got == a + b, name
        elif name in COMBINED:
            assert got == COMBINED[name](first, second), name
        else:
            pytest.fail(f"DoneEvent.{name}: say in add_parts and here how two parts combine it")


def test_the_answer_part_names_the_stop_string_and_guesses_add_up():
    first = replace(done("stop", 8), stop_sequence="</think>", draft_tokens=6, draft_accepted=4)
    second = replace(done("stop", 3), stop_sequence="STOP", draft_tokens=2, draft_accepted=1)
    total = add_parts(first, second)
    assert (total.reason, total.stop_sequence) == ("stop", "STOP")
    assert (total.draft_tokens, total.draft_accepted) == (8, 5)


def test_a_harmony_answer_part_opens_the_final_channel():
    run = ThinkingRun(plan_thinking("m", detect_format(GPT_OSS), True, "x", budget=4), CALL)
    run.feed("hmm <|e")
    call, held = run.next_call(done("length", 4))
    assert call.prompt.endswith(
        "<|channel|>analysis<|message|>hmm <|e<|end|><|start|>assistant<|channel|>final<|message|>"
    )
    assert held == ("<|e", "")  # held back as a possible marker, thinking after all


@pytest.mark.parametrize(
    ("ending", "continues"),
    [
        (done("stop", 3), True),  # the closing marker, or end of turn: the model must answer
        (done("length", 8), True),  # the budget
        (done("length", 5), False),  # the context is full
        (done("cancelled", 2), False),
    ],
)
def test_when_the_answer_part_comes(ending, continues):
    run = thinking_run("m", detect_format(QWEN3), True, 8, CALL)
    assert (run.next_call(ending) is not None) == continues


def test_no_answer_part_when_the_limit_is_spent():
    call = replace(CALL, params=replace(CALL.params, max_tokens=6))
    run = thinking_run("m", detect_format(QWEN3), True, 8, call)
    assert run.first_call().params.max_tokens == 6  # the request's own limit comes first
    assert run.next_call(done("length", 6)) is None


def test_thinking_that_is_not_shown_is_dropped():
    run = thinking_run("m", detect_format(R1), False, None, GenerateCall("<think>\n"))
    assert run.feed("secret</think>answer") == ("", "answer")
    with pytest.raises(BadRequestError, match="think_budget"):
        thinking_run("m", detect_format(R1), True, -1, GenerateCall("p"))
