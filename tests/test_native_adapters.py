"""LoRA adapters through the real daemon: ``/api/create`` takes an uploaded LoRA adapter GGUF
(and refuses anything else with a 400 before storing a thing), ``/api/show`` lists adapters
with their scale, and generation applies them: a model with an adapter answers differently
from its base, and one with the adapter at scale 0 answers exactly as the base does."""

from __future__ import annotations

import json

import httpx
import pytest

from localllm.daemon.client import Client
from tests.support.adapters import NOT_ADAPTERS, not_an_adapter
from tests.support.daemon import Daemon, make_store, upload
from tests.support.model_writers.lora import write_tiny_lora

pytestmark = pytest.mark.slow

GREEDY = {"temperature": 0, "repeat_penalty": 1.0, "num_predict": 16, "seed": 1}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("native-adapters")


@pytest.fixture(scope="module")
def daemon(root, tiny_model_path):
    store = make_store(root / "store", {"tiny": tiny_model_path})
    with Daemon(store, root / "logs") as running:
        yield running


@pytest.fixture(scope="module")
def client(daemon):
    with Client(daemon.url) as client:
        yield client


def create(daemon, name: str, modelfile: str, files: dict[str, str]) -> httpx.Response:
    body = {"model": name, "modelfile": modelfile, "files": files, "stream": False}
    return httpx.post(daemon.url + "/api/create", json=body, timeout=120)


def answer(daemon, model: str) -> str:
    body = {"model": model, "prompt": "Hello there", "raw": True, "stream": False}
    response = httpx.post(
        daemon.url + "/api/generate", json={**body, "options": GREEDY}, timeout=120
    )
    assert response.status_code == 200, response.text
    return response.json()["response"]


def test_an_adapter_changes_the_answer_and_scale_zero_keeps_the_base_answer(
    daemon, client, root, tiny_model_path
):
    lora = upload(client, write_tiny_lora(root / "lora.gguf", tiny_model_path))
    files = {"./lora.gguf": lora}
    assert create(daemon, "tiny-lora", "FROM tiny\nADAPTER ./lora.gguf\n", files).is_success
    base = answer(daemon, "tiny")
    assert base and answer(daemon, "tiny-lora") != base
    assert create(daemon, "tiny-off", "FROM tiny\nADAPTER ./lora.gguf 0\n", files).is_success
    assert answer(daemon, "tiny-off") == base
    assert answer(daemon, "tiny") == base  # the base itself never took the adapter
    # the same name made again with another scale: its loaded runner is not reused
    assert create(daemon, "tiny-lora", "FROM tiny\nADAPTER ./lora.gguf 0\n", files).is_success
    assert answer(daemon, "tiny-lora") == base


def test_show_lists_the_adapters_with_their_scale(daemon, client, root, tiny_model_path):
    lora = upload(client, write_tiny_lora(root / "show-a.gguf", tiny_model_path, seed=3))
    style = upload(client, write_tiny_lora(root / "show-b.gguf", tiny_model_path, seed=4))
    text = "FROM tiny\nADAPTER ./a.gguf\nADAPTER ./b.gguf -0.5\n"
    assert create(daemon, "styled", text, {"./a.gguf": lora, "./b.gguf": style}).is_success
    shown = client.show("styled")
    sizes = [(root / name).stat().st_size for name in ("show-a.gguf", "show-b.gguf")]
    assert [a.model_dump() for a in shown.adapters] == [
        {"digest": lora, "size": sizes[0], "scale": 1.0},
        {"digest": style, "size": sizes[1], "scale": -0.5},
    ]
    assert client.show("tiny").adapters == []
    # a model made FROM it keeps them
    assert create(daemon, "styled-2", "FROM styled\nSYSTEM hi\n", {}).is_success
    assert client.show("styled-2").adapters == shown.adapters


@pytest.mark.parametrize("kind", NOT_ADAPTERS)
def test_anything_but_a_lora_adapter_for_the_base_is_a_400_and_nothing_is_created(
    daemon, client, root, tiny_model_path, tmp_path, kind
):
    path, message = not_an_adapter(kind, tmp_path, tiny_model_path)
    digest = upload(client, path)
    models = {m.name for m in client.list_models()}
    manifests = sorted((root / "store" / "manifests").rglob("*"))
    base = upload(client, tiny_model_path)
    for source, extra in (("tiny", {}), ("./base.gguf", {"./base.gguf": base})):
        modelfile = f"FROM {source}\nADAPTER ./{path.name}\n"
        response = create(daemon, "bad", modelfile, {f"./{path.name}": digest, **extra})
        assert response.status_code == 400, response.text
        error = response.json()["error"]
        assert message in error, error
        for secret in (str(tmp_path), str(root), "/tmp"):
            assert secret not in error
    assert {m.name for m in client.list_models()} == models
    assert sorted((root / "store" / "manifests").rglob("*")) == manifests


def test_a_lora_adapter_is_not_a_model(daemon, client, root, tiny_model_path):
    lora = upload(client, write_tiny_lora(root / "from.gguf", tiny_model_path, seed=9))
    response = create(daemon, "bad", "FROM ./from.gguf\n", {"./from.gguf": lora})
    assert response.status_code == 400
    assert "the FROM file is a LoRA adapter" in json.loads(response.text)["error"]


def test_ollamas_structured_adapters_field_is_checked_the_same_way(
    daemon, client, root, tiny_model_path, tmp_path
):
    lora = upload(client, write_tiny_lora(root / "structured.gguf", tiny_model_path, seed=12))
    body = {"model": "structured", "from": "tiny", "adapters": {"lora.gguf": lora}}
    response = httpx.post(daemon.url + "/api/create", json={**body, "stream": False}, timeout=120)
    assert response.status_code == 200, response.text
    assert [a.digest for a in client.show("structured").adapters] == [lora]
    path, message = not_an_adapter("random bytes", tmp_path, tiny_model_path)
    body["adapters"] = {"id_rsa": upload(client, path)}
    refused = httpx.post(daemon.url + "/api/create", json=body, timeout=120)
    assert refused.status_code == 400 and message in refused.json()["error"]
