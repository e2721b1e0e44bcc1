"""Pulling from a local Hugging Face hub through the real huggingface_hub client."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest

from localllm.model_registry.errors import (
    AuthenticationError,
    DownloadError,
    InsufficientSpaceError,
    QuantNotFoundError,
    UnknownModelError,
)
from localllm.model_registry.pull import Puller, PullEvent
from localllm.model_registry.store import LayerType
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.local_hub import DEFAULT_TOKEN, LocalHub
from tests.support.model_writers.projector import write_tiny_projector
from tests.support.pulls import fast_pull_options

REPO = "local/Tiny-GGUF"
FAST = fast_pull_options()


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, bytes]:
    """Real tiny GGUF files (about 1-2 MB) by quant, plus a projector."""
    folder = tmp_path_factory.mktemp("hub-models")
    q8 = write_tiny_model(folder / "q8.gguf", n_embd=128, n_layer=4, file_type="Q8_0", seed=3)
    f16 = write_tiny_model(folder / "f16.gguf", n_embd=128, n_layer=4, seed=4)
    shards = [write_tiny_model(folder / f"s{i}.gguf", n_embd=64, seed=10 + i) for i in range(3)]
    projector = write_tiny_projector(folder / "mmproj.gguf")
    return {
        "Q8_0": q8.read_bytes(),
        "F16": f16.read_bytes(),
        "shards": [shard.read_bytes() for shard in shards],  # type: ignore[dict-item]
        "projector": projector.read_bytes(),
    }


@pytest.fixture
def hub(models):
    with LocalHub() as hub:
        hub.add_repo(
            REPO,
            {
                "README.md": b"# tiny",
                "Tiny-Q8_0.gguf": models["Q8_0"],
                "Tiny-F16.gguf": models["F16"],
            },
        )
        yield hub


@pytest.fixture
def puller(store, hub):
    with Puller(store, endpoint=hub.endpoint, options=FAST) as puller:
        yield puller


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def leftovers(store) -> list[str]:
    """Anything in the blob directory that is not a committed blob."""
    return sorted(p.name for p in store.layout.blobs_dir.iterdir() if p.name.count(".") > 0)


def test_full_pull(store, hub, puller, models):
    events = list(puller.pull("hf.co/local/tiny-gguf"))
    digest = sha(models["Q8_0"])
    statuses = [event.status for event in events]
    assert statuses[0] == "pulling manifest"
    assert statuses[-3:] == ["verifying sha256 digest", "writing manifest", "success"]
    progress = [event for event in events if event.status == f"pulling {digest[:12]}"]
    assert progress and all(e.digest == f"sha256:{digest}" for e in progress)
    assert all(e.total == len(models["Q8_0"]) for e in progress)
    completed = [e.completed for e in progress]
    assert completed == sorted(completed) and completed[-1] == len(models["Q8_0"])

    manifest = store.read_manifest("hf.co/local/tiny-gguf")
    assert [(layer.media_type, layer.digest.hex) for layer in manifest.layers] == [
        (LayerType.MODEL, digest)
    ]
    assert store.blobs.path(manifest.layers[0].digest).read_bytes() == models["Q8_0"]
    config = store.read_config(manifest)
    assert config["model_format"] == "gguf"
    assert config["model_family"] == config["architecture"] == "llama"
    assert config["file_type"] == "Q8_0"
    assert config["embedding_length"] == 128 and config["context_length"] == 2048
    assert isinstance(config["model_type"], str) and config["model_type"][-1] in "KMB"
    assert config["gguf"]["block_count"] == 4
    assert config["source"] == {
        "hub": "hf.co",
        "repo": REPO,
        "revision": hub.commit(REPO),
        "quant": "Q8_0",
        "files": ["Tiny-Q8_0.gguf"],
    }
    assert hub.bytes_served(REPO, "Tiny-Q8_0.gguf") == len(models["Q8_0"])
    assert hub.bytes_served(REPO, "Tiny-F16.gguf") == 0
    assert leftovers(store) == []
    assert not hub.cdn_saw_token


def test_event_wire_form():
    assert PullEvent("pulling manifest").to_json() == {"status": "pulling manifest"}
    event = PullEvent("pulling abc", "sha256:abc", 10, 0)
    assert event.to_json() == {
        "status": "pulling abc",
        "digest": "sha256:abc",
        "total": 10,
        "completed": 0,
    }
    assert PullEvent("success").is_final and not event.is_final


def test_quant_and_file_name_tags(store, puller, models):
    list(puller.pull("hf.co/local/tiny-gguf:f16"))
    manifest = store.read_manifest("hf.co/local/tiny-gguf:f16")
    assert manifest.layers[0].digest.hex == sha(models["F16"])
    assert store.read_config(manifest)["file_type"] == "F16"
    list(puller.pull("hf.co/local/tiny-gguf:tiny-q8_0.gguf"))
    manifest = store.read_manifest("hf.co/local/tiny-gguf:tiny-q8_0.gguf")
    assert manifest.layers[0].digest.hex == sha(models["Q8_0"])


def test_resolve_makes_a_plan_without_downloading(hub, puller, models):
    plan = puller.resolve("huggingface.co/local/tiny-gguf:Q8_0")
    assert plan.repo == REPO and plan.quant == "Q8_0" and len(plan.revision) == 40
    (file,) = plan.files
    assert (file.path, file.size, file.digest.hex) == (
        "Tiny-Q8_0.gguf",
        len(models["Q8_0"]),
        sha(models["Q8_0"]),
    )
    assert file.url == f"{hub.endpoint}/{REPO}/resolve/{plan.revision}/Tiny-Q8_0.gguf"
    assert hub.blob_requests(REPO, "Tiny-Q8_0.gguf") == 0


def test_repull_transfers_nothing(store, hub, puller):
    list(puller.pull("hf.co/local/tiny-gguf"))
    model_id = store.list_models()[0].model_id
    hub.reset_counters()
    events = list(puller.pull("hf.co/local/tiny-gguf"))
    assert [path for _, path in hub.requests_log] == ["/api/models/local/tiny-gguf"]
    assert events[-1].status == "success"
    assert "verifying sha256 digest" not in [event.status for event in events]
    pulling = [event for event in events if event.status.startswith("pulling sha")]
    assert all(event.completed == event.total for event in pulling)
    assert store.list_models()[0].model_id == model_id


def test_sharded_model_becomes_ordered_layers(store, hub, puller, models):
    shards = models["shards"]
    files = {f"Q8_0/Big-Q8_0-0000{i}-of-00003.gguf": data for i, data in [(2, shards[1])]}
    files |= {"Q8_0/Big-Q8_0-00003-of-00003.gguf": shards[2]}
    files |= {"Q8_0/Big-Q8_0-00001-of-00003.gguf": shards[0], "Big-F16.gguf": models["F16"]}
    hub.add_repo("local/Big-GGUF", files)
    list(puller.pull("hf.co/local/big-gguf:q8_0"))
    manifest = store.read_manifest("hf.co/local/big-gguf:q8_0")
    assert [layer.media_type for layer in manifest.layers] == [LayerType.MODEL] * 3
    assert [layer.digest.hex for layer in manifest.layers] == [sha(data) for data in shards]
    assert store.read_config(manifest)["source"]["files"] == [
        f"Q8_0/Big-Q8_0-0000{i}-of-00003.gguf" for i in (1, 2, 3)
    ]


def test_vision_projector_becomes_a_projector_layer(store, hub, puller, models):
    hub.add_repo(
        "local/Vision-GGUF",
        {
            "Vision-Q8_0.gguf": models["Q8_0"],
            "mmproj-Vision-Q8_0.gguf": b"not the one we want",
            "mmproj-Vision-f16.gguf": models["projector"],
        },
    )
    list(puller.pull("hf.co/local/vision-gguf"))
    manifest = store.read_manifest("hf.co/local/vision-gguf")
    assert [(layer.media_type, layer.digest.hex) for layer in manifest.layers] == [
        (LayerType.MODEL, sha(models["Q8_0"])),
        (LayerType.PROJECTOR, sha(models["projector"])),
    ]
    config = store.read_config(manifest)
    assert config["model_families"] == ["llama", "clip"]
    assert config["projector"]["architecture"] == "clip"


def test_catalog_short_name_from_another_catalog_file(store, hub, tmp_path, models):
    catalog = tmp_path / "catalog.json"
    entry = {
        "name": "tiny:1m",
        "aliases": ["tiny"],
        "repo": REPO,
        "quant": "F16",
        "kind": "chat",
        "parameter_size": "1M",
        "size": 2_000_000,
        "description": "test",
    }
    catalog.write_text(json.dumps({"version": 1, "models": [entry]}))
    with Puller(store, endpoint=hub.endpoint, catalog_path=catalog, options=FAST) as puller:
        assert list(puller.pull("tiny"))[-1].status == "success"
        with pytest.raises(UnknownModelError, match="did you mean tiny"):
            list(puller.pull("tiny:2m"))
    manifest = store.read_manifest("tiny")
    assert manifest.layers[0].digest.hex == sha(models["F16"])
    assert store.read_config(manifest)["source"]["catalog"] == "tiny:1m"


def test_not_enough_disk_space_fails_before_any_download(store, hub, puller):
    hub.report_size(REPO, "Tiny-Q8_0.gguf", 10**15)
    with pytest.raises(InsufficientSpaceError, match="1,000,000,000,000,000 bytes needed"):
        list(puller.pull("hf.co/local/tiny-gguf"))
    assert hub.blob_requests(REPO, "Tiny-Q8_0.gguf") == 0
    assert leftovers(store) == [] and store.list_models() == []


def test_gated_repo_needs_a_token(store, hub, models):
    hub.add_repo("local/Gated-GGUF", {"Gated-Q8_0.gguf": models["Q8_0"]}, gated=True)
    advice = (
        "this repo is gated or private: accept its terms at "
        "https://huggingface.co/local/Gated-GGUF and run `localllm login` or set HF_TOKEN"
    )
    for token, status in ((None, "401"), ("hf_wrong", "403")):
        with (
            Puller(store, endpoint=hub.endpoint, token=token, options=FAST) as puller,
            pytest.raises(AuthenticationError) as caught,
        ):
            list(puller.pull("hf.co/local/gated-gguf"))
        assert advice in str(caught.value) and status in str(caught.value)
        assert leftovers(store) == [] and store.list_models() == []
    with Puller(store, endpoint=hub.endpoint, token=DEFAULT_TOKEN, options=FAST) as puller:
        assert list(puller.pull("hf.co/local/gated-gguf"))[-1].status == "success"
    assert not hub.cdn_saw_token


def test_private_and_missing_repos(store, hub, models):
    hub.add_repo("local/Private-GGUF", {"P-Q8_0.gguf": models["Q8_0"]}, private=True)
    with (
        Puller(store, endpoint=hub.endpoint, options=FAST) as puller,
        pytest.raises(AuthenticationError, match="run `localllm login` or set HF_TOKEN"),
    ):
        puller.resolve("hf.co/local/private-gguf")
    with Puller(store, endpoint=hub.endpoint, token=DEFAULT_TOKEN, options=FAST) as puller:
        assert list(puller.pull("hf.co/local/private-gguf"))[-1].status == "success"
        with pytest.raises(UnknownModelError, match="was not found on Hugging Face"):
            puller.resolve("hf.co/local/nothing-here")


def test_unknown_quant_and_unpullable_names(puller):
    with pytest.raises(QuantNotFoundError, match="available: Q8_0, F16"):
        list(puller.pull("hf.co/local/tiny-gguf:q4_k_m"))
    with pytest.raises(UnknownModelError, match=r"hf\.co/someone/model"):
        puller.resolve("someone/model")


def test_unreachable_hub_says_to_pull_again(store):
    with (
        Puller(store, endpoint="http://127.0.0.1:9", options=FAST) as puller,
        pytest.raises(DownloadError, match="run the pull again"),
    ):
        list(puller.pull("hf.co/local/tiny-gguf"))


def test_async_pull(store, puller, models):
    async def collect() -> list[PullEvent]:
        return [event async for event in puller.apull("hf.co/local/tiny-gguf")]

    events = asyncio.run(collect())
    assert events[0].status == "pulling manifest" and events[-1].status == "success"
    assert store.read_manifest("hf.co/local/tiny-gguf").layers[0].digest.hex == sha(models["Q8_0"])


def test_async_pull_raises_failures(puller):
    async def collect() -> None:
        async for _ in puller.apull("hf.co/local/tiny-gguf:q2_k"):
            pass

    with pytest.raises(QuantNotFoundError):
        asyncio.run(collect())
