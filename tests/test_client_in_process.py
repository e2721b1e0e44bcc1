"""The real ``daemon.client.Client`` against the real daemon app, served in this process:
every answer arrives as the ``daemon.api`` model the route built it from, with its values."""

from __future__ import annotations

import pytest

from localllm.daemon.api import (
    ChatChunk,
    ChatCompletion,
    ChatCompletionChunk,
    EmbedResponse,
    GenerateChunk,
    HealthResponse,
    Model,
    ModelSummary,
    ProgressResponse,
    PruneResponse,
    RunningModel,
    ServerResponse,
    ShowResponse,
    SystemResponse,
    VerifyResponse,
)
from localllm.daemon.client import Client, DaemonClient, ModelNotFound
from tests.support.daemon import make_store
from tests.support.in_process import serve_daemon_in_thread

pytestmark = pytest.mark.slow

HI = [{"role": "user", "content": "Hello there"}]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("in-process")


@pytest.fixture(scope="module")
def client(root, tiny_model_path, thinking_model_path):
    models = {"tiny": tiny_model_path, "thinker": thinking_model_path}
    store = make_store(root / "store", models)
    with serve_daemon_in_thread(root, store) as url, Client(url) as client:
        yield client


def test_it_is_a_daemon_client(client):
    assert isinstance(client, DaemonClient)


def test_answers_about_the_daemon(client, root):
    health = client.health()
    assert isinstance(health, HealthResponse) and health.status == "ok"
    assert client.version() == health.version
    system = client.system()
    assert isinstance(system, SystemResponse) and system.ram_total >= system.ram_available > 0
    assert system.models_dir == str(root / "store")  # told to a client on this machine
    server = client.server()
    assert isinstance(server, ServerResponse)
    assert (server.host, server.lan, server.api_key_set) == ("127.0.0.1", False, False)
    assert f":{server.port}" in str(client._connection.base_url)
    assert client.logs(lines=5) == ""  # this daemon writes no log file


def test_answers_about_the_store(client):
    thinker, tiny = sorted(client.list_models(), key=lambda model: model.name)
    assert thinker.name == "thinker:latest"
    assert isinstance(tiny, ModelSummary) and tiny.name == "tiny:latest"
    assert len(tiny.digest) == 64 and tiny.details.format == "gguf"
    shown = client.show("tiny")
    assert isinstance(shown, ShowResponse) and shown.details.family == "llama"
    assert "completion" in shown.capabilities and shown.modelfile.startswith("# Modelfile")
    assert "thinking" in client.show("thinker").capabilities
    listed = client.list_openai_models()
    assert all(isinstance(m, Model) for m in listed)
    assert sorted(m.id for m in listed) == ["thinker", "tiny"]
    verified = client.verify()
    assert isinstance(verified, VerifyResponse) and verified.ok and verified.checked > 0
    pruned = client.prune()
    assert isinstance(pruned, PruneResponse) and pruned.removed == []
    assert client.pulls() == []
    with pytest.raises(ModelNotFound):
        client.show("nope")


def test_generating_streams_chunks(client):
    chunks = list(client.chat("tiny", HI, options={"num_predict": 3, "seed": 1}))
    assert all(isinstance(chunk, ChatChunk) for chunk in chunks)
    *pieces, last = chunks
    assert pieces and not any(piece.done for piece in pieces)
    assert last.done and last.done_reason == "length" and last.eval_count == 3
    [one] = client.generate("tiny", "Hi", options={"num_predict": 2}, stream=False)
    assert isinstance(one, GenerateChunk) and one.done and one.response
    [running] = client.running()
    assert isinstance(running, RunningModel) and running.name == "tiny:latest"
    assert running.processor and running.context_length > 0
    vectors = client.embed("tiny", ["a", "b"])
    assert isinstance(vectors, EmbedResponse) and len(vectors.embeddings) == 2
    openai = list(client.openai_chat("tiny", HI, max_tokens=2))
    assert openai and all(isinstance(chunk, ChatCompletionChunk) for chunk in openai)
    once = client.chat_once("tiny", HI, max_tokens=2)
    assert isinstance(once, ChatCompletion) and once.usage.completion_tokens == 2
    client.unload("tiny")


def test_think_is_sent_and_the_thinking_comes_apart(client):
    budget = {"num_predict": 16, "think_budget": 6, "seed": 3}
    chunks = list(client.chat("thinker", HI, options=budget, think=True))
    thinking = "".join(chunk.message.thinking or "" for chunk in chunks)
    content = "".join(chunk.message.content for chunk in chunks)
    assert thinking and content and "<think>" not in content and thinking not in content
    off = list(client.chat("thinker", HI, options={"num_predict": 4}, think=False))
    assert not any(chunk.message.thinking for chunk in off)
    [once] = client.generate("thinker", "Hi", options=budget, think="low", stream=False)
    assert once.thinking and once.response
    client.unload("thinker")


def test_importing_a_file_streams_progress(client, tiny_model_path):
    steps = list(client.create_from_file("imported", tiny_model_path))
    assert all(isinstance(step, ProgressResponse) for step in steps)
    size = tiny_model_path.stat().st_size
    assert steps[0] == ProgressResponse(status="hashing tiny.gguf", total=size, completed=0)
    assert steps[-1] == ProgressResponse(status="success")
    assert "imported:latest" in {model.name for model in client.list_models()}
    client.delete("imported")
