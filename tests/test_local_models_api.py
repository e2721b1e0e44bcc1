"""``GET /api/local-models`` and ``POST /api/import`` against a real daemon: it finds models in
the fake Hugging Face cache and Ollama store its environment names, adds one by hard link
(same inode) that then answers a chat, and refuses bad input with a clear 400 that names no
directory."""

from __future__ import annotations

import asyncio
import os

import httpx
import pytest

from localllm.daemon.api.local_models import ImportProgress
from localllm.daemon.client import BadRequest, Client
from localllm.daemon.server.app import create_app
from localllm.daemon.settings import Settings
from localllm.model_registry.store import LayerType, Store
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.daemon import Daemon
from tests.support.other_apps import hf_cache_model, ollama_model

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("local-models-api")


@pytest.fixture(scope="module")
def daemon(root):
    hf_cache_model(root / "hf", "org/Tiny-GGUF", "Tiny-Chat-Q8_0.gguf", seed=1)
    ollama_model(root / "ollama", "smol", "1b", seed=2, template="{{ .Prompt }}")
    env = {
        "HF_HUB_CACHE": str(root / "hf"),
        "OLLAMA_MODELS": str(root / "ollama"),
        "HOME": str(root / "home"),
        "LOCALLLM_IMPORT_DIRS": str(root / "mine"),
    }
    (root / "mine").mkdir()
    with Daemon(root / "store", root / "logs", env=env) as running:
        yield running


@pytest.fixture(scope="module")
def client(daemon):
    with Client(daemon.url) as client:
        yield client


def test_found_models_are_listed_from_the_configured_places(client):
    found = {m.name: m for m in client.local_models().models}
    assert set(found) == {"tiny-chat:q8_0", "smol:1b"}
    tiny = found["tiny-chat:q8_0"]
    assert (tiny.source, tiny.architecture, tiny.linkable, tiny.in_store) == (
        "huggingface",
        "llama",
        True,
        False,
    )
    assert found["smol:1b"].source == "ollama"


def test_a_found_model_is_linked_in_and_chats(client, root):
    tiny = next(m for m in client.local_models().models if m.source == "huggingface")
    steps = list(client.import_file(tiny.path, name="tiny-hf"))
    assert steps[-1].status == "success" and steps[-1].model == "tiny-hf"
    assert steps[-1].copied_bytes == 0
    assert [s.placement for s in steps if s.status == "added"] == ["linked"]
    store = Store(root / "store")
    [layer] = [x for x in store.read_manifest("tiny-hf").layers if x.media_type is LayerType.MODEL]
    assert os.stat(store.layout.blob_path(layer.digest)).st_ino == os.stat(tiny.path).st_ino
    reply = list(client.chat("tiny-hf", [{"role": "user", "content": "hi"}], {"num_predict": 3}))
    assert reply[-1].done and reply[-1].eval_count
    again = next(m for m in client.local_models().models if m.source == "huggingface")
    assert again.in_store
    with pytest.raises(BadRequest) as taken:  # the name is taken: refused before any work
        list(client.import_file(tiny.path, name="tiny-hf"))
    assert taken.value.status == 409 and "already exists" in str(taken.value)


def test_bad_input_is_a_clear_400_without_directories(client, root):
    fake = root / "fake.gguf"
    fake.write_text("<html>not a model</html>")
    cases = {
        "relative/model.gguf": "absolute",
        str(root / "missing.gguf"): "no such file: missing.gguf",
        str(fake): "GGUF",
    }
    for path, words in cases.items():
        with pytest.raises(BadRequest) as caught:
            list(_raw(client, path))
        assert caught.value.status == 400 and words in str(caught.value)
        assert str(root) not in str(caught.value)
    good = write_tiny_model(root / "Good.gguf", seed=4)
    with pytest.raises(BadRequest, match="invalid model name"):
        list(client.import_file(good, name="Bad Name!"))


def _raw(client: Client, path: str):
    """``import_file`` makes paths absolute; send this one as it is."""
    return client._connection.ndjson(ImportProgress, "/api/import", {"path": path})


def test_a_caller_beyond_loopback_without_a_key_may_not_import(tmp_path):
    app = create_app(Settings(models_dir=tmp_path / "store", data_dir=tmp_path))
    model = write_tiny_model(tmp_path / "m.gguf")

    async def post() -> tuple[httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=app, client=("192.0.2.7", 4000))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            body = {"path": str(model), "stream": False}
            return await http.post("/api/import", json=body), await http.get("/api/local-models")

    response, listing = asyncio.run(post())
    assert response.status_code == 403 and listing.status_code == 403
    assert "loopback" in response.json()["error"]


def test_the_places_scanned_come_from_the_environment_as_those_apps_read_it(tmp_path):
    from localllm.daemon.server.native.local_models import scan_roots

    env = {
        "HOME": str(tmp_path),
        "HF_HOME": str(tmp_path / "hf-home"),
        "LOCALLLM_IMPORT_DIRS": os.pathsep.join([str(tmp_path / "a"), "", str(tmp_path / "b")]),
    }
    roots = scan_roots(Settings.from_env(env))
    assert roots.hugging_face == (tmp_path / "hf-home" / "hub",)
    assert roots.ollama == (tmp_path / ".ollama" / "models",)
    assert roots.lm_studio == (
        tmp_path / ".lmstudio" / "models",
        tmp_path / ".cache" / "lm-studio" / "models",
    )
    assert roots.folders == (tmp_path / "a", tmp_path / "b")
    env |= {"HF_HUB_CACHE": str(tmp_path / "hub"), "OLLAMA_MODELS": str(tmp_path / "o")}
    roots = scan_roots(Settings.from_env(env))
    assert (roots.hugging_face, roots.ollama) == ((tmp_path / "hub",), (tmp_path / "o",))
