"""A conversation that ends with the assistant's own words is continued (Ollama's and
llama-server's behaviour; the desktop app's "Continue"): the prompt ends inside that reply."""

from __future__ import annotations

import httpx
import pytest

from localllm.daemon.inference.templates import continued_reply
from tests.support.daemon import Daemon, make_store

pytestmark = pytest.mark.slow

STORY = [{"role": "user", "content": "Tell me a story"}]
OPTIONS = {"num_predict": 6, "temperature": 0, "seed": 1}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    root = tmp_path_factory.mktemp("continue")
    with Daemon(make_store(root / "store", {"tiny": tiny_model_path}), root / "logs") as running:
        yield running


def _post(daemon, path: str, body: dict) -> dict:
    body = {"model": "tiny", "stream": False, "options": OPTIONS, **body}
    response = httpx.post(daemon.url + path, json=body, timeout=60)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_prompt_ends_inside_the_reply_being_continued(daemon):
    started = [*STORY, {"role": "assistant", "content": "Once upon"}]
    chat = _post(daemon, "/api/chat", {"messages": started})
    # the tiny model's template is ChatML: the same words, as a raw prompt, left open
    prompt = "<|im_start|>user\nTell me a story<|im_end|>\n<|im_start|>assistant\nOnce upon"
    raw = _post(daemon, "/api/generate", {"prompt": prompt, "raw": True})
    assert chat["prompt_eval_count"] == raw["prompt_eval_count"]
    assert chat["message"]["content"] == raw["response"] != ""
    answered = _post(daemon, "/api/chat", {"messages": [*started, *STORY]})
    assert answered["prompt_eval_count"] > chat["prompt_eval_count"]  # a new turn as before


def test_only_a_reply_in_words_is_continued():
    words = {"role": "assistant", "content": "Once"}
    assert continued_reply([*STORY, words]) == (STORY, "Once")
    assert continued_reply(STORY) == (STORY, "")
    calls = {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f"}}]}
    assert continued_reply([*STORY, calls]) == ([*STORY, calls], "")
    empty = {"role": "assistant", "content": ""}
    assert continued_reply([*STORY, empty]) == ([*STORY, empty], "")
    assert continued_reply([]) == ([], "")
