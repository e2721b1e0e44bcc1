"""OpenAI requests -> inference jobs -> sampling/runner options (no daemon needed)."""

from __future__ import annotations

import pytest

from localllm.daemon.api import ChatCompletionRequest, CompletionRequest
from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference.options import (
    merge_options,
    parse_keep_alive,
    runner_options,
    sampling_params,
)
from localllm.daemon.server.openai.translate import chat_job, completion_job, completion_logprobs
from localllm.daemon.settings import Settings

USER = [{"role": "user", "content": "hi"}]


def chat(**fields) -> ChatCompletionRequest:
    return ChatCompletionRequest.model_validate({"model": "m", "messages": USER, **fields})


def test_sampling_fields_become_options():
    job = chat_job(
        chat(
            temperature=0.2,
            top_p=0.5,
            seed=3,
            stop="END",
            max_completion_tokens=7,
            max_tokens=99,
            presence_penalty=0.5,
            frequency_penalty=0.25,
            top_k=5,
            keep_alive="5m",
        )
    )
    assert job.options == {
        "temperature": 0.2,
        "top_p": 0.5,
        "top_k": 5,
        "presence_penalty": 0.5,
        "frequency_penalty": 0.25,
        "seed": 3,
        "stop": "END",
        "num_predict": 7,
    }
    assert job.keep_alive == 300
    params = sampling_params(job.options)
    assert (params.temperature, params.max_tokens, params.stop, params.seed) == (
        0.2,
        7,
        ("END",),
        3,
    )


def test_model_params_are_defaults_the_request_overrides():
    merged = merge_options(
        {"temperature": 0.1, "num_ctx": 1024}, {"temperature": 0.9, "seed": None}
    )
    assert merged == {"temperature": 0.9, "num_ctx": 1024}
    options = runner_options(merged, Settings(num_ctx=4096, num_parallel=2), n_ctx_train=2048)
    assert (options.num_ctx, options.num_parallel, options.num_gpu) == (1024, 2, None)
    assert runner_options({}, Settings(num_ctx=4096), n_ctx_train=2048).num_ctx == 2048


def test_response_format_tools_logprobs_and_bias():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    job = chat_job(
        chat(
            response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}},
            logprobs=True,
            top_logprobs=2,
            logit_bias={"42": -100},
        )
    )
    assert job.json_schema == schema and job.logprobs == 2 and job.logit_bias == {42: -100.0}
    assert chat_job(chat(response_format={"type": "json_object"})).json_schema == {"type": "object"}
    tools = [{"type": "function", "function": {"name": "f"}}]
    named = chat_job(chat(tools=tools, tool_choice={"type": "function", "function": {"name": "f"}}))
    assert named.tool_choice.mode == "function" and named.tool_choice.name == "f"
    assert chat_job(chat(tools=tools)).tool_choice.mode == "auto"
    assert chat_job(chat()).tool_choice.mode == "none"
    required = chat_job(chat(tools=tools, tool_choice="required"))
    assert required.tool_choice.forced and not required.tool_choice.parallel
    parallel = chat_job(chat(tools=tools, tool_choice="required", parallel_tool_calls=True))
    assert parallel.tool_choice.parallel


@pytest.mark.parametrize(
    ("fields", "param"),
    [
        ({"n": 2}, "n"),
        ({"logit_bias": {"word": 1}}, "logit_bias"),
        ({"logit_bias": {"1": 500}}, "logit_bias"),
        ({"tool_choice": {"type": "function"}}, "tool_choice"),
        ({"response_format": {"type": "json_schema"}}, "response_format"),
        ({"keep_alive": "soon"}, "keep_alive"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "messages"),
    ],
)
def test_invalid_requests_name_the_parameter(fields, param):
    with pytest.raises(BadRequestError) as caught:
        chat_job(chat(**fields))
    assert caught.value.param == param


def image_message(*parts: dict) -> list[dict]:
    return [{"role": "user", "content": [*parts, {"type": "text", "text": "which?"}]}]


def test_image_url_parts_become_numbered_images():
    first = {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,AAEC", "detail": "low"},
    }
    second = {"type": "image_url", "image_url": "DATA:image/jpeg;BASE64,/w=="}  # a bare URL
    job = chat_job(chat(messages=[*image_message(first), *image_message(second)]))
    assert list(job.images) == [b"\x00\x01\x02", b"\xff"]
    assert job.messages[0]["content"][0] == {"type": "image", "index": 0}
    assert job.messages[1]["content"][0] == {"type": "image", "index": 1}
    assert job.messages[1]["content"][1] == {"type": "text", "text": "which?"}
    assert chat_job(chat()).images == []


@pytest.mark.parametrize(
    ("image_url", "words"),
    [
        ({"url": "https://example.com/cat.png"}, "localllm does not download images"),
        ("file:///etc/passwd", "must be a data: URL with base64 content"),
        ({"url": "data:image/png,AAEC"}, "must be a data: URL with base64 content"),
        ({"url": "data:image/png;base64,AA EC"}, "image 1 is not valid base64"),
        ({"detail": "high"}, "needs"),
    ],
)
def test_image_urls_the_daemon_will_not_use(image_url, words):
    part = {"type": "image_url", "image_url": image_url}
    with pytest.raises(BadRequestError, match=words) as caught:
        chat_job(chat(messages=image_message(part)))
    assert caught.value.param == "messages"


def test_other_content_parts_are_refused():
    audio = {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}
    with pytest.raises(BadRequestError, match="'input_audio' is not supported"):
        chat_job(chat(messages=image_message(audio)))


def test_legacy_completion_prompts():
    job = completion_job(CompletionRequest(model="m", prompt=["only one"]))
    assert job.prompt == "only one" and job.raw and job.options["num_predict"] == 16
    for prompt in (["a", "b"], [1, 2, 3], [[1, 2]]):
        with pytest.raises(BadRequestError):
            completion_job(CompletionRequest(model="m", prompt=prompt))
    filled = completion_job(CompletionRequest(model="m", prompt="x", suffix="y"))
    assert (filled.prompt, filled.suffix, filled.raw, filled.templated) == ("x", "y", False, False)


def test_completion_logprobs_shape():
    entries = [
        {"token": "He", "logprob": -0.5, "top_logprobs": [{"token": "He", "logprob": -0.5}]},
        {"token": "llo", "logprob": -1.0, "top_logprobs": []},
    ]
    shaped = completion_logprobs(entries, offset=3)
    assert shaped == {
        "tokens": ["He", "llo"],
        "token_logprobs": [-0.5, -1.0],
        "top_logprobs": [{"He": -0.5}, {}],
        "text_offset": [3, 5],
    }


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (None, None),
        ("", None),
        (0, 0.0),
        (-1, -1.0),
        ("10", 10.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("-1m", -60.0),
        ("250ms", 0.25),
        ("1.5s", 1.5),
    ],
)
def test_keep_alive_durations(value, seconds):
    assert parse_keep_alive(value) == seconds


def test_bad_option_types_are_rejected():
    with pytest.raises(BadRequestError, match="temperature"):
        sampling_params({"temperature": "hot"})
    with pytest.raises(BadRequestError, match="stop"):
        sampling_params({"stop": [1]})
    with pytest.raises(BadRequestError, match="num_ctx"):
        runner_options({"num_ctx": 2}, Settings())


def test_num_predict_ends_mean_until_done_and_a_model_parameter_is_checked_too():
    assert sampling_params({"num_predict": -2}).max_tokens is None  # "fill the context"
    assert sampling_params({"num_predict": 1 << 24}).max_tokens == 1 << 24
    with pytest.raises(BadRequestError, match="option num_predict must be an integer between"):
        sampling_params({"num_predict": -3})
    with pytest.raises(BadRequestError, match="option top_k") as caught:
        merge_options({"top_k": 1 << 40}, {"temperature": 1})  # a model's PARAMS layer
    assert caught.value.param == "top_k"
    assert merge_options({"seed": 3.0, "unknown": "kept"}) == {"seed": 3, "unknown": "kept"}
