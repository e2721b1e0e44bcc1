"""The official ``ollama`` Python package against a real daemon: what Ollama's own clients do
(list, show, chat, generate, embed, ps, copy, delete, pull, create) works unchanged."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import ollama
import pytest

from tests.support.daemon import Daemon, make_store
from tests.support.local_hub import LocalHub

pytestmark = pytest.mark.slow

HI = [{"role": "user", "content": "Hello there"}]
REPO, FILE = "local/Tiny-GGUF", "Tiny-Q8_0.gguf"
CALL_SCHEMA = {  # a reply that is exactly one call of get_weather
    "type": "object",
    "properties": {
        "name": {"const": "get_weather"},
        "arguments": {
            "type": "object",
            "properties": {"city": {"type": "string", "maxLength": 8}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
    "required": ["name", "arguments"],
    "additionalProperties": False,
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": CALL_SCHEMA["properties"]["arguments"],
    },
}


@pytest.fixture(scope="module")
def hub(tmp_path_factory, tiny_q8_model_path):
    with LocalHub() as hub:
        hub.add_repo(REPO, {FILE: tiny_q8_model_path.read_bytes()})
        yield hub


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path, hub):
    root = tmp_path_factory.mktemp("ollama-package")
    store = make_store(root / "store", {"tiny": tiny_model_path})
    with Daemon(store, root / "logs", env={"HF_ENDPOINT": hub.endpoint}) as running:
        yield running


@pytest.fixture(scope="module")
def client(daemon):
    return ollama.Client(host=daemon.url)


def test_list_and_show(client):
    [model] = [m for m in client.list().models if m.model == "tiny:latest"]
    assert model.details.format == "gguf" and model.details.family == "llama"
    assert model.details.quantization_level == "F16" and len(model.digest) == 64
    assert model.size > 0 and model.modified_at <= datetime.now(UTC)
    shown = client.show("tiny")
    assert shown.modelinfo["general.architecture"] == "llama"
    assert shown.modelinfo["llama.context_length"] == 2048
    assert shown.capabilities == ["completion", "chat"]  # "chat": it has a chat template
    assert "<|im_start|>" in shown.template and shown.modelfile.splitlines()[1] == "FROM tiny"


def test_chat_streams_and_answers_once(client):
    chunks = list(client.chat("tiny", messages=HI, stream=True, options={"num_predict": 6}))
    *parts, last = chunks
    assert all(not c.done for c in parts) and "".join(c.message.content for c in parts)
    assert last.done and last.done_reason == "length" and last.eval_count == 6
    assert last.total_duration >= last.eval_duration > 0 and last.prompt_eval_count > 0
    whole = client.chat("tiny", messages=HI, options={"num_predict": 6, "seed": 3})
    again = client.chat("tiny", messages=HI, options={"num_predict": 6, "seed": 3})
    assert whole.done and whole.message.role == "assistant"
    assert whole.message.content == again.message.content != ""


def test_generate_with_system_and_json_format(client):
    reply = client.generate("tiny", "Hello", system="Be brief.", options={"num_predict": 4})
    assert reply.done and reply.eval_count == 4 and reply.response
    shaped = client.generate(
        "tiny",
        "a city",
        format=CALL_SCHEMA["properties"]["arguments"],
        options={"num_predict": 400, "seed": 7},  # seeded, and room to close the JSON
    )
    assert shaped.done_reason == "stop" and shaped.response.startswith("{")


def test_chat_returns_tool_calls_as_objects(client):
    reply = client.chat(
        "tiny",
        messages=HI,
        tools=[WEATHER],
        format=CALL_SCHEMA,
        # A fixed seed and room for the grammar's optional whitespace: with a random seed and
        # 60 tokens the random-weight model sometimes ran out before the JSON closed.
        options={"num_predict": 400, "seed": 7},
    )
    [call] = reply.message.tool_calls
    assert call.function.name == "get_weather" and isinstance(call.function.arguments, dict)
    assert set(call.function.arguments) == {"city"}
    follow_up = [
        *HI,
        reply.message.model_dump(exclude_none=True),
        {"role": "tool", "content": "sunny", "tool_name": "get_weather"},
    ]
    assert client.chat("tiny", messages=follow_up, options={"num_predict": 2}).done


def test_embed_and_legacy_embeddings(client):
    result = client.embed("tiny", input=["hello", "world wide"])
    assert len(result.embeddings) == 2 and len(result.embeddings[0]) == 64
    assert result.prompt_eval_count > 0
    legacy = client.embeddings("tiny", prompt="hello")
    assert legacy.embedding == pytest.approx(result.embeddings[0], abs=1e-5)


def test_ps_shows_the_loaded_model_until_unloaded(client):
    client.generate("tiny", "Hi", options={"num_predict": 1}, keep_alive="10m")
    [loaded] = client.ps().models
    assert loaded.model == "tiny:latest" and loaded.context_length == 2048
    assert loaded.size >= loaded.size_vram >= 0 and loaded.expires_at > datetime.now(UTC)
    assert client.generate("tiny", "", keep_alive=0).done_reason == "unload"
    assert client.ps().models == []


def test_copy_then_delete(client):
    client.copy("tiny", "tiny-copy")
    names = [m.model for m in client.list().models]
    assert "tiny-copy:latest" in names
    client.delete("tiny-copy")
    assert "tiny-copy:latest" not in [m.model for m in client.list().models]
    with pytest.raises(ollama.ResponseError) as missing:
        client.delete("tiny-copy")
    assert missing.value.status_code == 404


def test_pull_streams_progress_from_the_hub(client, hub):
    events = list(client.pull(f"hf.co/{REPO}:Q8_0", stream=True))
    statuses = [e.status for e in events]
    assert statuses[0] == "pulling manifest" and statuses[-1] == "success"
    assert "verifying sha256 digest" in statuses and "writing manifest" in statuses
    digest = "sha256:" + hub.sha256(REPO, FILE)
    sizes = [e.total for e in events if e.digest == digest]
    assert sizes and len(set(sizes)) == 1 and events[-3].completed == sizes[0]
    assert client.show(f"hf.co/{REPO}:Q8_0").details.quantization_level == "Q8_0"


def test_create_from_an_uploaded_blob(client, tiny_model_path):
    digest = client.create_blob(tiny_model_path)
    assert digest == "sha256:" + hashlib.sha256(tiny_model_path.read_bytes()).hexdigest()
    progress = list(
        client.create(
            "made", files={"tiny.gguf": digest}, system="Talk like a pirate.", stream=True
        )
    )
    assert progress[-1].status == "success"
    shown = client.show("made")
    assert shown.modelfile.count("Talk like a pirate.") == 1
    client.create("made-q8", from_="made", quantize="q8_0", parameters={"temperature": 0.2})
    derived = client.show("made-q8")
    assert derived.details.quantization_level == "Q8_0"
    assert "temperature" in derived.parameters and "pirate" in derived.modelfile
    assert client.chat("made-q8", messages=HI, options={"num_predict": 2}).done


def test_errors_are_response_errors_with_statuses(client):
    with pytest.raises(ollama.ResponseError) as missing:
        client.chat("no-such-model", messages=HI)
    assert missing.value.status_code == 404 and "localllm pull" in missing.value.error
    with pytest.raises(ollama.ResponseError) as bad:
        client.generate("tiny", "hi", options={"temperature": "hot"})
    assert bad.value.status_code == 400 and "temperature" in bad.value.error
    with pytest.raises(ollama.ResponseError) as images:
        client.chat("tiny", messages=[{**HI[0], "images": [b"\x89PNG"]}])
    assert images.value.status_code == 400
    assert "'tiny' does not support images (it has no vision projector)" in images.value.error
