"""Every sampling and runner option, OpenAI field and Modelfile parameter has a range: a value
outside it is a 400 naming the option and the range, the range's ends are accepted, and no
absurd value reaches a runner (``repeat_last_n: 250000000`` once made a runner allocate 1 GB).

Against a real daemon, with the ``openai`` package where OpenAI's fields are concerned; the
cases come from the one table (``model_registry.parameters``) so a new option is covered too.
"""

from __future__ import annotations

import json
import math

import httpx
import openai
import pytest

from localllm.model_registry.parameters import FIELDS, OPTIONS, STOP_COUNT, STOP_LENGTH
from tests.support.daemon import Daemon, make_store
from tests.support.processes import peak_resident_bytes

pytestmark = pytest.mark.slow

HI = [{"role": "user", "content": "Hi"}]
NUMERIC = {name: p for name, p in OPTIONS.items() if p.kind in (int, float)}
# Options that shape the runner: their top ends would start a huge one, so only their low ends
# run here. Both ends of num_predict mean "until the context is full": too long to run here.
NOT_RUN_AT_THE_TOP = {"num_ctx", "num_batch", "num_gpu", "num_thread", "num_parallel"}
OPENAI_CHAT = ("temperature", "top_p", "top_k", "min_p", "repeat_penalty", "presence_penalty",
               "frequency_penalty", "seed", "max_tokens", "max_completion_tokens", "n",
               "top_logprobs")  # fmt: skip


def outside(name: str) -> list[object]:
    parameter = {**OPTIONS, **FIELDS}[name]
    if parameter.kind is int:
        return [parameter.low - 1, parameter.high + 1]
    return [parameter.low - 0.5, parameter.high + 0.5, math.nan, math.inf]


def range_text(name: str) -> str:
    parameter = {**OPTIONS, **FIELDS}[name]
    return f"{name} must be {'an integer' if parameter.kind is int else 'a number'} between " + (
        f"{parameter.low} and {parameter.high}"
    )


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("option-bounds")
    store = make_store(root / "store", {"tiny": tiny_model_path})
    with Daemon(store, root / "logs") as running:
        yield running


def post(daemon: Daemon, path: str, body: dict) -> httpx.Response:
    """JSON as Python writes it: NaN and Infinity included, as some clients send them."""
    content = json.dumps(body).encode()
    headers = {"content-type": "application/json"}
    return httpx.post(daemon.url + path, content=content, headers=headers, timeout=120)


def generate(daemon: Daemon, **options: object) -> httpx.Response:
    body = {"model": "tiny", "prompt": "Hi", "stream": False, "options": options}
    return post(daemon, "/api/generate", body)


def runner_peak_bytes(daemon: Daemon) -> int:
    """The largest peak resident memory of the daemon's runners."""
    return max((peak_resident_bytes(pid) for pid in daemon.runner_pids()), default=0)


@pytest.mark.parametrize("name", sorted(NUMERIC))
def test_native_options_outside_their_range_are_400s_naming_it(daemon, name):
    for value in outside(name):
        response = generate(daemon, **{"num_predict": 1, name: value})
        assert response.status_code == 400, (name, value, response.text)
        assert range_text(name) in response.json()["error"], response.text


@pytest.mark.parametrize("name", sorted(set(NUMERIC) - {"num_predict"}))
def test_native_options_accept_the_ends_of_their_range(daemon, name):
    parameter = NUMERIC[name]
    ends = [parameter.low] if name in NOT_RUN_AT_THE_TOP else [parameter.low, parameter.high]
    for value in ends:
        response = generate(daemon, **{"num_predict": 2, name: value})
        assert response.status_code == 200, (name, value, response.text)
        assert response.json()["done"]


def test_stop_strings_are_bounded_in_number_and_length(daemon):
    assert generate(daemon, num_predict=2, stop=["x" * STOP_LENGTH] * STOP_COUNT).is_success
    for stop in (["x"] * (STOP_COUNT + 1), "x" * (STOP_LENGTH + 1), [1]):
        response = generate(daemon, num_predict=2, stop=stop)
        assert response.status_code == 400 and "stop must be" in response.json()["error"]
    response = generate(daemon, num_predict=2, penalize_newline="yes")
    assert response.status_code == 400 and "true or false" in response.json()["error"]


def test_no_absurd_penalty_window_reaches_the_runner(daemon):
    assert generate(daemon, num_predict=2, repeat_penalty=1.2).is_success  # the runner is up
    before = runner_peak_bytes(daemon)
    for absurd in (250_000_000, 2**31 - 1):  # 1 GB and 8 GB of penalty window, once
        response = generate(daemon, num_predict=2, repeat_last_n=absurd, repeat_penalty=1.2)
        assert response.status_code == 400 and "repeat_last_n" in response.text
    top = OPTIONS["repeat_last_n"].high  # accepted, and cut to the context in the runner
    assert generate(daemon, num_predict=2, repeat_last_n=top, repeat_penalty=1.2).is_success
    assert runner_peak_bytes(daemon) - before < 32 << 20  # uncut, the top end is 64 MB


@pytest.mark.parametrize("name", OPENAI_CHAT)
def test_openai_fields_outside_their_range_are_400s_naming_the_field(daemon, name):
    client = daemon.openai()
    for value in outside(name):
        if isinstance(value, float) and not math.isfinite(value):
            response = post(daemon, "/v1/chat/completions", {"model": "tiny", "messages": HI,
                                                              name: value})  # fmt: skip
            assert response.status_code == 400
            error = response.json()["error"]
        else:
            with pytest.raises(openai.BadRequestError) as caught:
                client.chat.completions.create(
                    model="tiny", messages=HI, extra_body={name: value}, max_tokens=1
                )
            error = caught.value.body
        assert error["param"] == name and range_text(name) in error["message"], error


def test_openai_fields_accept_the_ends_of_their_range(daemon):
    client = daemon.openai()
    ends = {
        "temperature": (0, 2),
        "top_p": (0, 1),
        "presence_penalty": (-2, 2),
        "frequency_penalty": (-2, 2),
        "seed": (-(2**63), 2**63 - 1),
        "top_logprobs": (0, 20),
    }
    for name, values in ends.items():
        for value in values:
            extra = {"logprobs": True} if name == "top_logprobs" else {}
            reply = client.chat.completions.create(
                model="tiny", messages=HI, max_tokens=1, **{name: value}, **extra
            )
            assert reply.choices[0].finish_reason == "length"
    done = client.completions.create(model="tiny", prompt="Hi", max_tokens=1, logprobs=5)
    assert len(done.choices[0].logprobs.top_logprobs[0]) == 5
    with pytest.raises(openai.BadRequestError) as caught:
        client.completions.create(model="tiny", prompt="Hi", max_tokens=1, logprobs=6)
    assert "logprobs must be an integer between 0 and 5" in caught.value.body["message"]


def test_create_checks_parameters_against_the_same_ranges(daemon):
    body = {"model": "windowed", "from": "tiny", "parameters": {"repeat_last_n": 250_000_000}}
    response = post(daemon, "/api/create", body)
    assert response.status_code == 400
    assert "repeat_last_n must be an integer between -1 and" in response.json()["error"]
    text = "FROM tiny\nPARAMETER temperature 7\n"
    response = post(daemon, "/api/create", {"model": "hot", "modelfile": text})
    assert response.status_code == 400
    assert "line 2" in response.text and range_text("temperature") in response.text
    body = {"model": "fine", "from": "tiny", "parameters": {"top_k": 1 << 20, "seed": -1}}
    assert post(daemon, "/api/create", {**body, "stream": False}).is_success
