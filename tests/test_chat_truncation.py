"""A chat longer than its context on the native ``/api/chat``: the oldest turns are dropped
(the system prompt and the last turn kept), as Ollama does, and the answer says so; with
``truncate: false``, and on the OpenAI route, the clear 400 stays. Real daemon, real runner,
the official ``ollama`` and ``openai`` packages."""

from __future__ import annotations

import json

import httpx
import ollama
import openai
import pytest

from tests.support.daemon import Daemon, make_store
from tests.support.polling import wait_for

pytestmark = pytest.mark.slow

CONTEXT = 256
SYSTEM = {"role": "system", "content": "You are a terse assistant that remembers little."}
WORDS = ["apple", "river", "stone", "cloud", "lamp", "garden", "window", "paper", "music", "light"]


def turn(number: int) -> list[dict]:
    words = " ".join(WORDS[(number + i) % len(WORDS)] for i in range(2))
    return [
        {"role": "user", "content": f"Q{number}: {words}"},
        {"role": "assistant", "content": f"A{number}: {words}"},
    ]


def long_chat(turns: int) -> list[dict]:
    messages = [SYSTEM]
    for number in range(turns):
        messages += turn(number)
    return [*messages, {"role": "user", "content": "And now?"}]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("chat-truncation")
    store = make_store(root / "store", {"tiny": tiny_model_path})
    with Daemon(store, root / "logs", env={"LOCALLLM_CONTEXT_LENGTH": str(CONTEXT)}) as running:
        yield running


@pytest.fixture(scope="module")
def client(daemon):
    return ollama.Client(host=daemon.url)


OPTIONS = {"num_predict": 8, "temperature": 0}  # the context: the daemon's default


def counted(daemon, messages: list[dict]) -> int:
    """The prompt tokens of ``messages`` as the daemon counts them (the Messages API's count);
    past the whole context, more than it."""
    system = [m["content"] for m in messages if m["role"] == "system"]
    rest = [m for m in messages if m["role"] != "system"]
    body = {"model": "tiny", "messages": rest, "system": "\n".join(system), "max_tokens": 8}
    response = httpx.post(daemon.url + "/v1/messages/count_tokens", json=body, timeout=60)
    if response.status_code == 400 and "context" in response.text:
        return CONTEXT + 1
    assert response.status_code == 200, response.text
    return response.json()["input_tokens"]


def chat_lines(daemon, body: dict) -> list[dict]:
    """A chat's NDJSON chunks as sent (the ``ollama`` package drops fields it does not know)."""
    full = {"model": "tiny", "options": OPTIONS, **body}
    with httpx.stream("POST", daemon.url + "/api/chat", json=full, timeout=60) as response:
        assert response.status_code == 200, response.read()
        return [json.loads(line) for line in response.iter_lines() if line]


def test_ollamas_own_client_gets_a_long_chat_answered(daemon, client):
    messages = long_chat(30)
    assert counted(daemon, [SYSTEM, *messages[-5:]]) < CONTEXT - 8  # a few turns fit
    assert counted(daemon, messages) > CONTEXT  # all of them do not

    response = client.chat(model="tiny", messages=messages, options=OPTIONS, stream=False)
    assert response.done and response.message.content
    assert response.prompt_eval_count <= CONTEXT - 8


def test_the_system_prompt_and_the_latest_turns_that_fit_are_kept(daemon):
    messages = long_chat(30)
    [answer] = chat_lines(daemon, {"messages": messages, "stream": False})

    truncated = answer["truncated"]
    kept_from, dropped = truncated["kept_from"], truncated["dropped_messages"]
    assert dropped == kept_from - 1  # every message before the kept ones but the system one
    assert messages[kept_from]["role"] == "user"  # whole turns, from a question on
    kept = [SYSTEM, *messages[kept_from:]]
    # The prompt the model read is exactly the system prompt and the kept turns ...
    assert answer["prompt_eval_count"] == counted(daemon, kept)
    assert answer["prompt_eval_count"] <= CONTEXT - 8  # ... with room for the reply,
    # ... and no more could have been kept: one turn more would not leave that room.
    assert counted(daemon, [SYSTEM, *messages[kept_from - 2 :]]) > CONTEXT - 8


def test_the_stream_says_so_in_its_final_chunk_and_the_request_log(daemon):
    chunks = chat_lines(daemon, {"messages": long_chat(20)})
    assert chunks[-1]["done"]
    assert chunks[-1]["truncated"]["dropped_messages"] > 0
    assert all("truncated" not in chunk for chunk in chunks[:-1])

    def logged() -> list[dict]:  # the log line is written as the response ends, maybe after
        lines = [json.loads(line) for line in daemon.log().splitlines() if '"truncated"' in line]
        return [line for line in lines if line["truncated"] == chunks[-1]["truncated"]]

    assert wait_for(logged), "no request log line says what this chat dropped"
    assert all(line["event"] == "request" and line["path"] == "/api/chat" for line in logged())


def test_a_chat_that_fits_is_not_truncated(daemon):
    [answer] = chat_lines(daemon, {"messages": long_chat(1), "stream": False})
    assert "truncated" not in answer


def test_truncate_false_keeps_the_400(daemon):
    body = {"model": "tiny", "messages": long_chat(30), "options": OPTIONS, "stream": False}
    response = httpx.post(daemon.url + "/api/chat", json={**body, "truncate": False}, timeout=60)
    assert response.status_code == 400
    assert "num_ctx" in response.json()["error"]


def test_a_last_message_past_the_whole_context_is_still_a_400(daemon, client):
    messages = [*long_chat(2), {"role": "user", "content": " ".join(WORDS * 40)}]
    with pytest.raises(ollama.ResponseError) as caught:
        client.chat(model="tiny", messages=messages, options=OPTIONS, stream=False)
    assert caught.value.status_code == 400
    assert "context" in caught.value.error


def test_the_openai_route_keeps_its_400(daemon):
    api = openai.OpenAI(base_url=daemon.url + "/v1", api_key="unused")
    with pytest.raises(openai.BadRequestError) as caught:
        api.chat.completions.create(
            model="tiny",
            messages=long_chat(30),
            max_tokens=8,
        )
    assert "context" in str(caught.value)
