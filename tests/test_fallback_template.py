"""A model without a chat template of its own (a base model), against a real daemon: its chats
are prompted in the fallback ChatML, and its replies stop at ChatML's end marker rather than
showing it; ``/api/show`` says it has no chat template.

A model imitating the format writes ``<|im_end|>`` out as text, since to a base model it is no
special token. The tiny model's random weights do not imitate anything, so a JSON schema (a
grammar) makes it write exactly that text.
"""

from __future__ import annotations

import httpx
import openai
import pytest

from tests.support.daemon import Daemon, make_store

pytestmark = pytest.mark.slow

END = "<|im_end|>"
SAYS = {"const": f"Hi{END}more"}  # the reply the grammar forces: "Hi<|im_end|>more" in quotes
HI = [{"role": "user", "content": "Hello"}]
GREEDY = {"temperature": 0, "num_predict": 40}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    from localllm.model_registry.tiny_gguf import write_tiny_model

    root = tmp_path_factory.mktemp("fallback-template")
    base = write_tiny_model(root / "base.gguf", chat_template=None, seed=7)
    chat = write_tiny_model(root / "chat.gguf", seed=7)  # the same weights, with ChatML
    store = make_store(root / "store", {"base": base, "chat": chat})
    with Daemon(store, root / "logs") as running:
        yield running


def _chat(daemon, model: str) -> dict:
    body = {"model": model, "messages": HI, "format": SAYS, "stream": False, "options": GREEDY}
    return httpx.post(daemon.url + "/api/chat", json=body, timeout=60).json()


def test_a_model_without_a_chat_template_stops_at_the_fallbacks_end_marker(daemon):
    reply = _chat(daemon, "base")
    assert reply["message"]["content"] == '"Hi' and reply["done_reason"] == "stop"
    body = {"model": "base", "prompt": "Hello", "format": SAYS, "options": GREEDY}
    generated = httpx.post(daemon.url + "/api/generate", json={**body, "stream": False}).json()
    assert generated["response"] == '"Hi'
    oai = openai.OpenAI(base_url=daemon.url + "/v1", api_key="unused")
    completion = oai.chat.completions.create(
        model="base",
        messages=HI,
        temperature=0,
        max_tokens=40,
        response_format={"type": "json_schema", "json_schema": {"name": "s", "schema": SAYS}},
    )
    assert completion.choices[0].message.content == '"Hi'
    assert completion.choices[0].finish_reason == "stop"
    turn = {**body, "format": {"const": "Hi<|im_start|>user"}, "stream": False}  # a new turn
    assert httpx.post(daemon.url + "/api/generate", json=turn).json()["response"] == '"Hi'


def test_the_end_marker_is_only_a_stop_where_the_fallback_is_used(daemon):
    assert _chat(daemon, "chat")["message"]["content"] == f'"Hi{END}more"'  # its own template
    raw = {"model": "base", "prompt": "Hello", "raw": True, "format": SAYS, "options": GREEDY}
    generated = httpx.post(daemon.url + "/api/generate", json={**raw, "stream": False}).json()
    assert generated["response"] == f'"Hi{END}more"'  # no template at all: nothing to stop


def test_show_says_whether_a_model_has_a_chat_template(daemon):
    base = httpx.post(daemon.url + "/api/show", json={"model": "base"}).json()
    chat = httpx.post(daemon.url + "/api/show", json={"model": "chat"}).json()
    assert base["capabilities"] == ["completion"] and base["template"] == ""
    assert chat["capabilities"] == ["completion", "chat"] and END in chat["template"]
