"""Draft models through the real daemon: ``DRAFT`` in a Modelfile (an installed model or an
uploaded file), the ``draft`` request option, ``show`` listing it, and a draft of another
vocabulary refused with a 400 that names both models, at create and at request time."""

from __future__ import annotations

import httpx
import pytest

from localllm.daemon.client import Client
from localllm.model_registry.tiny_gguf import write_tiny_model
from localllm.model_registry.tiny_vocabulary import tiny_vocabulary
from tests.support.daemon import Daemon, make_store, upload

pytestmark = pytest.mark.slow

GREEDY = {"temperature": 0, "repeat_penalty": 1.0, "num_predict": 24, "seed": 1}
PROMPT = "Copy this list: red green blue, one two three, red green blue. Again: red"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("native-draft")


@pytest.fixture(scope="module")
def files(root):
    tokens = len(tiny_vocabulary().tokens)
    return {
        "tiny": write_tiny_model(root / "tiny.gguf", file_type="Q8_0", seed=2),
        "tiny16": write_tiny_model(root / "tiny16.gguf", file_type="F16", seed=2),
        "small": write_tiny_model(root / "small.gguf", file_type="Q8_0", seed=9, n_layer=1),
        "foreign": write_tiny_model(
            root / "foreign.gguf", file_type="Q8_0", seed=3, vocab_size=tokens + 40
        ),
    }


@pytest.fixture(scope="module")
def daemon(root, files):
    store = make_store(root / "store", files)
    with Daemon(store, root / "logs") as running:
        yield running


@pytest.fixture(scope="module")
def client(daemon):
    with Client(daemon.url) as client:
        yield client


def create(daemon, name: str, modelfile: str, files: dict[str, str] | None = None):
    body = {"model": name, "modelfile": modelfile, "files": files or {}, "stream": False}
    return httpx.post(daemon.url + "/api/create", json=body, timeout=120)


def generate(daemon, model: str, **options) -> httpx.Response:
    body = {"model": model, "prompt": PROMPT, "raw": True, "stream": False}
    return httpx.post(
        daemon.url + "/api/generate", json={**body, "options": {**GREEDY, **options}}, timeout=120
    )


def show(daemon, model: str) -> dict:
    response = httpx.post(daemon.url + "/api/show", json={"model": model}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def test_a_modelfile_draft_is_listed_and_leaves_the_text_as_it_was(daemon):
    assert create(daemon, "drafted", "FROM tiny\nDRAFT small\n").is_success
    assert show(daemon, "drafted")["draft"] == "small"
    assert show(daemon, "tiny").get("draft") is None
    plain = generate(daemon, "tiny")
    drafted = generate(daemon, "drafted")
    assert plain.status_code == drafted.status_code == 200, drafted.text
    assert drafted.json()["response"] == plain.json()["response"]
    # a model derived from it keeps its draft
    assert create(daemon, "drafted-child", "FROM drafted\nSYSTEM hi\n").is_success
    assert show(daemon, "drafted-child")["draft"] == "small"


def create_quantized(daemon, name: str, base: str):
    body = {"model": name, "from": base, "quantize": "Q8_0", "stream": False}
    return httpx.post(daemon.url + "/api/create", json=body, timeout=120)


def test_a_quantized_model_keeps_the_draft_of_its_base(daemon, client, files):
    assert create(daemon, "drafted16", "FROM tiny16\nDRAFT small\n").is_success
    response = create_quantized(daemon, "drafted16-q8", "drafted16")
    assert response.is_success, response.text
    assert show(daemon, "drafted16-q8")["draft"] == "small"  # still the installed model
    assert generate(daemon, "drafted16-q8").status_code == 200
    # a draft from a file (no installed model holds it) comes along as that file
    digest = upload(client, files["small"])
    body = "FROM tiny16\nDRAFT ./small.gguf\n"
    assert create(daemon, "drafted16-file", body, {"./small.gguf": digest}).is_success
    response = create_quantized(daemon, "drafted16-file-q8", "drafted16-file")
    assert response.is_success, response.text
    assert show(daemon, "drafted16-file-q8")["draft"] == "base-draft.gguf"
    assert generate(daemon, "drafted16-file-q8").status_code == 200


def test_an_uploaded_draft_file_is_imported_as_a_layer(daemon, client, files):
    digest = upload(client, files["small"])
    response = create(
        daemon, "drafted-file", "FROM tiny\nDRAFT ./small.gguf\n", {"./small.gguf": digest}
    )
    assert response.is_success, response.text
    assert show(daemon, "drafted-file")["draft"] == "small.gguf"
    plain = generate(daemon, "tiny")
    assert generate(daemon, "drafted-file").json()["response"] == plain.json()["response"]


def test_a_draft_of_another_vocabulary_is_refused_at_create(daemon, client, files):
    response = create(daemon, "bad-draft", "FROM tiny\nDRAFT foreign\n")
    assert response.status_code == 400
    message = response.json()["error"]
    assert "DRAFT foreign does not share the vocabulary of tiny" in message
    assert "tokens, not" in message
    digest = upload(client, files["foreign"])
    uploaded = create(
        daemon, "bad-draft", "FROM tiny\nDRAFT ./foreign.gguf\n", {"./foreign.gguf": digest}
    )
    assert uploaded.status_code == 400
    assert "DRAFT foreign.gguf does not share the vocabulary of tiny" in uploaded.json()["error"]
    assert str(files["foreign"].parent) not in uploaded.text
    missing = create(daemon, "bad-draft", "FROM tiny\nDRAFT nowhere\n")
    assert missing.status_code == 400 and "DRAFT nowhere: no such model" in missing.text
    assert httpx.post(daemon.url + "/api/show", json={"model": "bad-draft"}).status_code == 404


def test_the_draft_option_names_an_installed_model(daemon):
    plain = generate(daemon, "tiny").json()["response"]
    drafted = generate(daemon, "tiny", draft="small")
    assert drafted.status_code == 200, drafted.text
    assert drafted.json()["response"] == plain
    itself = generate(daemon, "tiny", draft="tiny")
    assert itself.status_code == 200 and itself.json()["response"] == plain


def test_the_draft_option_refuses_another_vocabulary_and_unknown_models(daemon, root):
    response = generate(daemon, "tiny", draft="foreign")
    assert response.status_code == 400, response.text
    message = response.json()["error"]
    assert "draft model 'foreign' does not share the vocabulary of 'tiny'" in message
    assert str(root) not in response.text
    unknown = generate(daemon, "tiny", draft="nowhere")
    assert unknown.status_code == 400
    assert "draft model 'nowhere' is not installed" in unknown.json()["error"]
    assert generate(daemon, "tiny").status_code == 200  # the model still serves
