"""Blob uploads and ``/api/create``: uploads are verified against their digest, models are
made only from uploaded blobs (a path a client names is never opened), and ``quantize`` runs
llama.cpp's quantizer in a child process."""

from __future__ import annotations

import hashlib
import json

import httpx
import pytest

from localllm.daemon.client import BadRequest, Client
from localllm.model_registry.digests import Digest
from localllm.model_registry.store import Store
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.daemon import Daemon, make_store

pytestmark = pytest.mark.slow

HI = [{"role": "user", "content": "Hello there"}]


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("native-create")


@pytest.fixture(scope="module")
def daemon(root, tiny_model_path):
    store = make_store(root / "store", {"tiny": tiny_model_path})
    with Daemon(store, root / "logs") as running:
        yield running


@pytest.fixture(scope="module")
def client(daemon):
    with Client(daemon.url) as client:
        yield client


@pytest.fixture(scope="module")
def upload(root):
    """A fresh F16 model (not yet in the store): its path and digest."""
    path = write_tiny_model(root / "fresh.gguf", seed=11)
    return path, digest_of(path.read_bytes())


def blob_files(root) -> set[str]:
    return {p.name for p in (root / "store" / "blobs").iterdir()}


def test_an_upload_is_kept_only_if_it_matches_its_digest(client, daemon, root, upload):
    path, digest = upload
    before = blob_files(root)
    wrong = digest_of(b"something else")
    with pytest.raises(BadRequest, match="nothing was stored"):
        client.upload_blob(path, wrong)
    assert blob_files(root) == before and not client.blob_exists(wrong)
    seen: list[int] = []
    client.upload_blob(path, digest, on_progress=lambda done, total: seen.append(done))
    assert client.blob_exists(digest) and seen[-1] == path.stat().st_size
    assert Store(root / "store").blobs.matches_digest(Digest.parse(digest))


@pytest.mark.parametrize(
    "digest", ["sha256:..%2F..%2Fx", "sha256-" + "0" * 63, "SHA256:" + "A" * 64, "md5:abc"]
)
def test_a_bad_digest_is_refused_before_anything_is_written(daemon, root, digest):
    before = blob_files(root)
    posted = httpx.post(f"{daemon.url}/api/blobs/{digest}", content=b"GGUF")
    assert posted.status_code == 400 and "invalid digest" in posted.json()["error"]
    assert httpx.head(f"{daemon.url}/api/blobs/{digest}").status_code == 400
    assert blob_files(root) == before


def test_create_from_an_uploaded_blob_with_modelfile_fields(client, upload):
    path, digest = upload
    client.upload_blob(path, digest)
    modelfile = (
        "FROM ./fresh.gguf\nSYSTEM You are terse.\nPARAMETER temperature 0.25\n"
        'PARAMETER stop "<|im_end|>"\nMESSAGE user Hi\nMESSAGE assistant Hello!\nLICENSE MIT\n'
    )
    steps = list(client.create("fresh", modelfile, {"./fresh.gguf": digest}))
    assert [s.status for s in steps][-1] == "success"
    shown = client.show("fresh")
    assert shown.system == "You are terse." and shown.license == "MIT"
    assert shown.parameters.splitlines() == [
        f'{"stop":<30} "<|im_end|>"',
        f"{'temperature':<30} 0.25",
    ]
    assert shown.messages == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
    ]
    [reply] = client.chat("fresh", HI, options={"num_predict": 2}, stream=False)
    assert reply.done


def test_show_gives_a_modelfile_that_recreates_the_model(client):
    text = client.show("fresh").modelfile
    assert "FROM fresh\n" in text and "/" not in text.split("FROM", 1)[1].splitlines()[0]
    assert list(client.create("fresh-again", text, {}))[-1].status == "success"
    again = client.show("fresh-again")
    assert again.system == "You are terse." and "temperature" in again.parameters


@pytest.mark.parametrize("quant", ["Q8_0", "q4_0", "Q4_K_M"])
def test_quantize_an_f16_upload(client, upload, quant):
    _, digest = upload
    steps = list(
        client.create(f"fresh-{quant.lower()}", "FROM ./m.gguf\n", {"./m.gguf": digest}, quant)
    )
    statuses = [s.status for s in steps]
    assert f"quantizing F16 model to {quant.upper()}" in statuses and statuses[-1] == "success"
    shown = client.show(f"fresh-{quant.lower()}")
    assert shown.details.quantization_level == quant.upper()
    listed = {m.name: m.size for m in client.list_models()}
    assert listed[f"fresh-{quant.lower()}:latest"] < listed["fresh:latest"]
    assert list(client.generate(f"fresh-{quant.lower()}", "Hi", options={"num_predict": 2}))


def test_quantize_refusals(client, upload):
    _, digest = upload
    with pytest.raises(BadRequest, match="unsupported quantization"):
        list(client.create("x", "FROM ./m.gguf\n", {"./m.gguf": digest}, "Q9_9"))
    with pytest.raises(BadRequest, match="can only quantize"):
        list(client.create("x", "FROM fresh-q8_0\n", {}, "Q4_0"))


def test_a_client_named_path_is_never_opened(client, daemon, tiny_model_path, root):
    """FROM a real, readable GGUF on the daemon's disk: if the daemon opened it, create would
    succeed. It must refuse, and its message must not name any directory."""
    for reference in (str(tiny_model_path), "../fresh.gguf", "~/model.gguf", "/etc/passwd"):
        response = httpx.post(
            daemon.url + "/api/create",
            json={"model": "evil", "modelfile": f"FROM {reference}\n", "stream": True},
        )
        assert response.status_code == 400, response.text
        message = response.json()["error"]
        assert "was not uploaded" in message
        for secret in (str(tiny_model_path.parent), "/etc", "~", "..", str(root)):
            assert secret not in message
    structured = httpx.post(
        daemon.url + "/api/create", json={"model": "evil", "from": str(tiny_model_path)}
    )
    assert structured.status_code == 400
    adapter = "FROM tiny\nADAPTER /etc/passwd\n"
    response = httpx.post(daemon.url + "/api/create", json={"model": "evil", "modelfile": adapter})
    assert response.status_code == 400 and "passwd was not uploaded" in response.json()["error"]
    assert "evil:latest" not in {m.name for m in client.list_models()}


def test_create_errors_are_plain_400s(daemon, upload):
    _, digest = upload
    cases = [
        ({"modelfile": "PARAMETER temperature 1\n"}, "FROM"),
        ({"modelfile": "FROM no-such-base\n"}, "no such model"),
        ({"files": {"a.gguf": digest, "b.gguf": digest}}, "several files"),
        ({"files": {"a.gguf": "sha256:../x"}}, "invalid digest"),
        ({"from": "tiny", "parameters": {"temperature": "hot"}}, "temperature"),
        ({"from": "tiny", "parameters": {"no_such": 1}}, "unknown parameter"),
        ({"files": {"a.gguf": digest_of(b"never uploaded")}}, "was not uploaded"),
    ]
    for fields, word in cases:
        response = httpx.post(daemon.url + "/api/create", json={"model": "bad", **fields})
        assert response.status_code == 400, (fields, response.text)
        assert word in response.json()["error"], (fields, response.text)


def test_an_uploaded_file_that_is_not_gguf_is_a_400(client, daemon):
    junk = b"not a model at all" * 100
    digest = digest_of(junk)
    assert httpx.post(f"{daemon.url}/api/blobs/{digest}", content=junk).status_code == 201
    response = httpx.post(
        daemon.url + "/api/create", json={"model": "junk", "files": {"junk.gguf": digest}}
    )
    assert response.status_code == 400 and "GGUF" in response.json()["error"]
    lines = [json.loads(x) for x in response.text.splitlines()]
    assert len(lines) == 1


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("{% for %}", "does not parse"),
        ("{{ range .Messages }}{{ .Content }}{{ end }}", "write the template in Jinja"),
        ("{{ if .System }}{{ .System }}", "without {{ end }}"),
    ],
)
def test_a_template_that_cannot_render_is_refused_at_create(daemon, template, says):
    """Before: the model was made, and its first chat failed with a server error."""
    body = {"model": "broken-template", "from": "tiny", "template": template, "stream": False}
    response = httpx.post(daemon.url + "/api/create", json=body, timeout=60)
    assert response.status_code == 400, response.text
    assert says in response.json()["error"]
    tags = httpx.get(daemon.url + "/api/tags", timeout=10).json()["models"]
    assert not any(m["name"].startswith("broken-template") for m in tags)
