"""Pulling a Whisper model in CTranslate2 form from a local Hugging Face hub, through the real
huggingface_hub client: ``hf.co/Systran/faster-whisper-base`` or the catalog's
``whisper:base`` fetches every file of the model (not the README), files the hub keeps in git
checked by their git blob id and ``model.bin`` in LFS as any blob (resumable, by sha256), and
stores it as an import does; a repository that is no Whisper model, or a file that is not what
the hub listed, stops the pull with the store as it was."""

from __future__ import annotations

import hashlib
import json

import pytest

from localllm.model_registry.errors import DigestMismatchError, GGUFError, PullError
from localllm.model_registry.pull import Puller
from localllm.model_registry.pull.hub_headers import HubShapes
from localllm.model_registry.store import LayerType
from tests.support.local_hub import LocalHub
from tests.support.pulls import fast_pull_options
from tests.test_transcription_store import write_fake_whisper, write_model_bin

REPO = "Systran/faster-whisper-base"
FAST = fast_pull_options()
WHISPER_FILES = ["config.json", "model.bin", "tokenizer.json", "vocabulary.txt"]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, bytes]:
    """The repository's files: the model's four, and what else such a repository holds."""
    folder = write_fake_whisper(tmp_path_factory.mktemp("hub-whisper") / "model")
    write_model_bin(folder / "model.bin", variables=(("decoder/w", (256, 512)),))  # 256 KiB
    files = {path.name: path.read_bytes() for path in folder.iterdir()}
    return files | {"README.md": b"# whisper", ".gitattributes": b"*.bin filter=lfs"}


@pytest.fixture
def hub(files):
    with LocalHub() as hub:
        hub.add_repo(REPO, files)
        yield hub


@pytest.fixture
def puller(store, hub):
    with Puller(store, endpoint=hub.endpoint, options=FAST) as puller:
        yield puller


def _lfs(hub: LocalHub, repo: str, path: str) -> None:
    """Serve ``path`` from LFS, as the real hub serves a model.bin (the local hub's own rule
    is: .gguf files only)."""
    hub._file(repo, path).lfs = True


def test_pull_fetches_every_file_of_the_model_and_stores_one_layer_each(store, puller, files):
    events = list(puller.pull(f"hf.co/{REPO}"))
    assert events[0].status == "pulling manifest" and events[-1].status == "success"
    manifest = store.read_manifest(f"hf.co/{REPO}")
    assert [layer.file_name for layer in manifest.layers] == WHISPER_FILES
    assert {layer.media_type for layer in manifest.layers} == {LayerType.CT2}
    for layer in manifest.layers:
        assert layer.digest.hex == hashlib.sha256(files[str(layer.file_name)]).hexdigest()
        assert f"pulling {layer.digest.short}" in {event.status for event in events}
    config = store.read_config(manifest)
    assert (config["model_format"], config["model_family"], config["model_type"]) == (
        "ct2",
        "whisper",
        "131.1K",
    )
    assert config["source"]["files"] == WHISPER_FILES
    folder = store.model_folder(f"hf.co/{REPO}")
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == {
        name: files[name] for name in WHISPER_FILES
    }
    assert store.verify().ok


def test_the_catalog_name_pulls_the_same_repository(store, puller):
    assert list(puller.pull("whisper:base"))[-1].status == "success"
    manifest = store.read_manifest("whisper:base")
    assert manifest.is_transcription
    assert store.read_config(manifest)["source"]["catalog"] == "whisper:base"


def test_model_bin_in_lfs_downloads_resumably_and_is_checked_by_sha256(store, hub, puller, files):
    _lfs(hub, REPO, "model.bin")
    size = len(files["model.bin"])
    hub.set_fault(REPO, "model.bin", drop_at=size // 2)  # the connection drops halfway
    events = list(puller.pull("whisper:base"))
    assert "verifying sha256 digest" in [event.status for event in events]
    assert hub.bytes_served(REPO, "model.bin") < 2 * size  # resumed, not started over
    folder = store.model_folder("whisper:base")
    assert (folder / "model.bin").read_bytes() == files["model.bin"]


def test_a_dropped_git_file_is_fetched_again(store, hub, puller, files):
    hub.set_fault(REPO, "tokenizer.json", drop_at=10)
    assert list(puller.pull("whisper:base"))[-1].status == "success"
    assert hub.blob_requests(REPO, "tokenizer.json") == 2


def test_a_git_file_that_is_not_what_the_hub_listed_stores_nothing(store, hub, puller):
    hub.set_fault(REPO, "tokenizer.json", corrupt=True)
    with pytest.raises(DigestMismatchError, match=r"tokenizer\.json did not match its git blob"):
        list(puller.pull("whisper:base"))
    assert not store.list_models()
    assert not [p for p in store.layout.blobs_dir.iterdir() if not p.name.startswith("sha256-")]
    assert list(puller.pull("whisper:base"))[-1].status == "success"  # the fault was once


def test_a_repository_without_a_tokenizer_says_so(store, hub, files, puller):
    hub.add_repo(
        "org/faster-whisper-broken", {k: v for k, v in files.items() if k != "tokenizer.json"}
    )
    with pytest.raises(PullError, match=r"has no tokenizer\.json"):
        list(puller.pull("hf.co/org/faster-whisper-broken"))
    assert not store.list_models() and not list(store.blobs.committed())


def test_a_config_that_is_no_whisper_stops_before_the_weights(store, hub, files, puller):
    repo = "org/other-ct2"
    hub.add_repo(repo, files | {"config.json": json.dumps({"d_model": 512}).encode()})
    _lfs(hub, repo, "model.bin")
    with pytest.raises(PullError, match="does not describe a Whisper model"):
        list(puller.pull(f"hf.co/{repo}"))
    assert hub.blob_requests(repo, "model.bin") == 0
    assert not store.list_models()


def test_a_repository_with_ggufs_is_pulled_as_gguf_still(store, hub, files, puller):
    """model.bin and config.json beside GGUF files do not make it a Whisper repository."""
    hub.add_repo("org/Mixed-GGUF", files | {"Model-Q8_0.gguf": b"GGUF"})
    plan = puller.resolve("hf.co/org/Mixed-GGUF")
    assert plan.format == "gguf"


def test_a_memory_plan_of_a_whisper_repository_is_a_clear_error(puller):
    with pytest.raises(GGUFError, match="transcription model"):
        HubShapes(puller).model(f"hf.co/{REPO}")
