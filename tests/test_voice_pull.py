"""Pulling a Piper voice by its catalog name from a local Hugging Face hub, through the real
huggingface_hub client: ``voice:joe`` is one folder of ``rhasspy/piper-voices`` (a repository
of many voices), fetched as a voice import stores it (its two files, not the model card nor
the other voices); the ``.onnx`` in LFS as any blob, the ``.onnx.json`` by its git id and
checked before the large file moves; a folder with no voice stops the pull with the store as
it was."""

from __future__ import annotations

import hashlib
import json

import pytest

from localllm.model_registry.errors import GGUFError, PullError
from localllm.model_registry.pull import Puller
from localllm.model_registry.pull.catalog import Catalog
from localllm.model_registry.pull.hub_headers import HubShapes
from localllm.model_registry.store import LayerType
from tests.support.local_hub import LocalHub
from tests.support.pulls import fast_pull_options
from tests.support.real_voice import JOE_RATE, joe_voice_path

REPO = "rhasspy/piper-voices"
JOE = "en/en_US/joe/medium/en_US-joe-medium"
AMY = "en/en_US/amy/medium/en_US-amy-medium"
FAST = fast_pull_options()
ONNX = b"\x08\x07\x12\x04fake" * 4096  # 40 KiB that start as an ONNX model does


@pytest.fixture(scope="module")
def voice_config() -> bytes:
    return (joe_voice_path() / "en_US-joe-medium.onnx.json").read_bytes()


@pytest.fixture
def hub(voice_config):
    files = {
        f"{JOE}.onnx": ONNX,
        f"{JOE}.onnx.json": voice_config,
        "en/en_US/joe/medium/MODEL_CARD": b"# joe",
        f"{AMY}.onnx": ONNX[::-1],
        f"{AMY}.onnx.json": voice_config,
        "voices.json": b"{}",
        "en/en_US/nobody/medium/MODEL_CARD": b"# nobody",
    }
    with LocalHub() as hub:
        hub.add_repo(REPO, files)
        for path in (f"{JOE}.onnx", f"{AMY}.onnx"):  # as the real hub keeps them
            hub._file(REPO, path).lfs = True
        yield hub


@pytest.fixture
def puller(store, hub):
    with Puller(store, endpoint=hub.endpoint, options=FAST) as puller:
        yield puller


def test_the_catalog_name_pulls_the_voices_two_files(store, puller, voice_config):
    events = list(puller.pull("voice:joe"))
    assert events[0].status == "pulling manifest" and events[-1].status == "success"
    manifest = store.read_manifest("voice:joe")
    assert manifest.is_voice and {x.media_type for x in manifest.layers} == {LayerType.VOICE}
    names = [layer.file_name for layer in manifest.layers]
    assert names == ["en_US-joe-medium.onnx", "en_US-joe-medium.onnx.json"]
    assert manifest.layers[0].digest.hex == hashlib.sha256(ONNX).hexdigest()
    config = store.read_config(manifest)
    assert (config["model_format"], config["model_family"]) == ("onnx", "piper")
    assert config["voice"]["sample_rate"] == JOE_RATE
    assert config["source"]["catalog"] == "voice:joe"
    assert config["source"]["files"] == [f"{JOE}.onnx", f"{JOE}.onnx.json"]
    folder = store.model_folder("voice:joe", LayerType.VOICE)
    assert (folder / "en_US-joe-medium.onnx.json").read_bytes() == voice_config
    assert store.verify().ok


def test_another_voice_of_the_same_repository_is_its_own_folder(store, puller):
    assert list(puller.pull("voice:amy"))[-1].status == "success"
    (model,) = [x for x in store.read_manifest("voice:amy").layers if x.size == len(ONNX)]
    assert model.file_name == "en_US-amy-medium.onnx"
    assert model.digest.hex == hashlib.sha256(ONNX[::-1]).hexdigest()


def test_a_config_that_is_no_voice_stops_before_the_model(store, hub, puller):
    hub.add_repo(REPO, {f"{JOE}.onnx": ONNX, f"{JOE}.onnx.json": json.dumps({"a": 1}).encode()})
    hub._file(REPO, f"{JOE}.onnx").lfs = True
    with pytest.raises(PullError, match="no audio sample_rate"):
        list(puller.pull("voice:joe"))
    assert hub.blob_requests(REPO, f"{JOE}.onnx") == 0
    assert not store.list_models()


def test_a_folder_without_a_voice_says_so(store, hub, tmp_path):
    entry = Catalog.load().lookup("voice:joe").to_json()
    catalog = tmp_path / "catalog.json"
    nobody = entry | {"name": "voice:nobody", "aliases": [], "path": "en/en_US/nobody/medium"}
    catalog.write_text(json.dumps({"models": [nobody]}))
    puller = Puller(store, endpoint=hub.endpoint, options=FAST, catalog_path=catalog)
    with puller, pytest.raises(PullError, match=r"en/en_US/nobody/medium is not a Piper voice"):
        list(puller.pull("voice:nobody"))
    assert not store.list_models() and not list(store.blobs.committed())


def test_a_catalog_path_must_be_a_plain_folder():
    entry = Catalog.load().lookup("voice:joe").to_json()
    for path in ("../etc", "/abs/olute", "en//joe", "en/../x"):
        raw = json.dumps({"models": [entry | {"path": path}]}).encode()
        with pytest.raises(PullError, match="path must be a folder"):
            Catalog.from_json(raw)


def test_a_memory_plan_of_a_voice_is_a_clear_error(puller):
    with pytest.raises(GGUFError, match="it is a voice"):
        HubShapes(puller).model("voice:joe")
