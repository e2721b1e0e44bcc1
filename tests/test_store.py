"""The content-addressed store: blobs, manifests, list/copy/remove/prune/verify."""

from __future__ import annotations

import json
import os
import time

import pytest

from localllm.model_registry.digests import Digest, sha256_of_bytes
from localllm.model_registry.errors import (
    BlobNotFoundError,
    CorruptManifestError,
    DigestMismatchError,
    InsufficientSpaceError,
    InvalidDigestError,
    InvalidNameError,
    ModelExistsError,
    ModelNotFoundError,
)
from localllm.model_registry.names import parse_name
from localllm.model_registry.store import BlobRef, Layer, LayerType, Manifest, Store
from tests.support.store import assert_store_consistent, put_model

SCALE = "org.localllm.adapter.scale"


def blob_files(store: Store) -> list[str]:
    return sorted(p.name for p in store.layout.blobs_dir.iterdir())


def test_blob_is_stored_under_the_digest_of_its_content(store):
    blob = store.blobs.write_bytes(b"weights")
    assert blob.digest == sha256_of_bytes(b"weights")
    assert store.blobs.path(blob.digest).read_bytes() == b"weights"
    assert blob_files(store) == [blob.digest.filename]


def test_a_blob_cannot_be_stored_under_a_wrong_digest(store):
    wrong = sha256_of_bytes(b"something else")
    with pytest.raises(DigestMismatchError):
        store.blobs.write_bytes(b"weights", expected=wrong)
    assert blob_files(store) == []  # no blob, no temp file left behind


def test_identical_content_is_stored_once(store):
    first = store.blobs.write_bytes(b"same")
    second = store.blobs.write_bytes(b"same")
    assert first.digest == second.digest
    assert blob_files(store) == [first.digest.filename]


def test_write_refuses_when_the_disk_cannot_hold_it(store):
    with (
        pytest.raises(InsufficientSpaceError, match="bytes needed"),
        open(os.devnull, "rb") as empty,
    ):
        store.blobs.write_stream(empty, size_hint=1 << 62)
    assert blob_files(store) == []


def test_manifest_round_trip_and_model_id(store):
    manifest = put_model(store, "qwen:7b", b"weights")
    assert store.read_manifest("qwen:7b") == manifest
    raw = store.layout.manifest_path(manifest_name := store.list_models()[0].name).read_bytes()
    assert manifest_name.display == "qwen:7b"
    assert store.list_models()[0].model_id == sha256_of_bytes(raw)
    assert (
        json.loads(raw)["config"]["mediaType"] == "application/vnd.docker.container.image.v1+json"
    )


def test_manifest_cannot_refer_to_missing_blobs(store):
    ghost = sha256_of_bytes(b"never written")
    manifest = Manifest(BlobRef(ghost, 1), (Layer(LayerType.MODEL, ghost, 1),))
    with pytest.raises(BlobNotFoundError):
        store.write_manifest("ghost", manifest)
    assert store.list_models() == []


def test_list_shows_name_id_size_and_modified(store):
    put_model(store, "a", b"1" * 10)
    put_model(store, "hf.co/org/repo:q4_k_m", b"2" * 20)
    older = store.layout.manifest_path(parse_name("a"))
    os.utime(older, (older.stat().st_atime, older.stat().st_mtime - 60))  # written a minute ago
    entries = store.list_models()
    assert [e.name.display for e in entries] == ["hf.co/org/repo:q4_k_m", "a"]
    assert entries[0].size == 20 + entries[0].manifest.config.size
    assert entries[1].modified == older.stat().st_mtime < entries[0].modified


def test_copy_shares_blobs(store):
    put_model(store, "a", b"weights")
    store.copy("a", "b:v2")
    assert store.read_manifest("b:v2") == store.read_manifest("a")
    assert len(blob_files(store)) == 2
    with pytest.raises(ModelExistsError):
        store.copy("a", "b:v2", overwrite=False)
    with pytest.raises(ModelNotFoundError):
        store.copy("missing", "c")


def test_rm_never_deletes_a_blob_another_model_uses(store):
    shared = put_model(store, "a", b"shared", b"only-a")
    put_model(store, "b", b"shared")
    report = store.remove("a")
    only_a = sha256_of_bytes(b"only-a")
    assert only_a in report.deleted_blobs
    assert store.blobs.exists(sha256_of_bytes(b"shared"))
    assert not store.blobs.exists(only_a)
    assert not store.exists("a")
    assert_store_consistent(store)
    store.remove("b")
    assert blob_files(store) == []
    assert list(store.layout.manifests_dir.iterdir()) == []  # empty directories removed too
    assert shared.layers[0].digest not in {b.digest for b in store.blobs.committed()}


def test_rm_of_unknown_model(store):
    with pytest.raises(ModelNotFoundError):
        store.remove("nope")


def test_rm_keeps_leased_blobs(store):
    put_model(store, "a", b"weights")
    digest = sha256_of_bytes(b"weights")
    with store.lease([digest]):
        store.remove("a")
        assert store.blobs.exists(digest)


def test_prune_deletes_only_old_unreferenced_blobs_and_never_partials(store):
    put_model(store, "keep", b"kept")
    old = store.blobs.write_bytes(b"old orphan")
    young = store.blobs.write_bytes(b"young orphan")
    leased = store.blobs.write_bytes(b"leased orphan")
    partial = store.layout.partial_path(sha256_of_bytes(b"downloading"))
    partial.write_bytes(b"half")
    store.layout.partial_state_path(sha256_of_bytes(b"downloading")).write_text("{}")
    stale_temp = store.layout.blobs_dir / ".tmp-999999999-crashed"
    stale_temp.write_bytes(b"x")
    live_temp = store.layout.blobs_dir / f".tmp-{os.getpid()}-writing"
    live_temp.write_bytes(b"x")
    long_ago = time.time() - 7200
    aged = (
        store.blobs.path(old.digest),
        store.blobs.path(leased.digest),
        partial,
        stale_temp,
        live_temp,
    )
    for path in aged:
        os.utime(path, (long_ago, long_ago))
    with store.lease([leased.digest]):
        report = store.prune(grace_seconds=3600)
    assert report.deleted_blobs == (old.digest,)
    assert store.blobs.exists(young.digest) and store.blobs.exists(leased.digest)
    assert partial.exists()
    assert not stale_temp.exists()
    assert live_temp.exists()  # a writer that is still running keeps its temp file
    assert_store_consistent(store)


def test_stale_lease_of_a_dead_process_is_ignored(store):
    orphan = store.blobs.write_bytes(b"orphan")
    store.layout.leases_dir.mkdir(exist_ok=True)
    (store.layout.leases_dir / "999999999-dead.json").write_text(json.dumps([orphan.digest.wire]))
    assert store.prune(grace_seconds=-1).deleted_blobs == (orphan.digest,)
    assert list(store.layout.leases_dir.iterdir()) == []


def test_verify_reports_corrupt_and_missing_blobs_with_the_models_they_break(store):
    put_model(store, "a", b"good", b"will rot")
    put_model(store, "b", b"will vanish")
    rotten = sha256_of_bytes(b"will rot")
    gone = sha256_of_bytes(b"will vanish")
    store.blobs.path(rotten).write_bytes(b"bit flip")
    store.blobs.path(gone).unlink()
    report = store.verify()
    assert not report.ok
    assert [n.display for n in report.corrupt[rotten]] == ["a"]
    assert [n.display for n in report.missing[gone]] == ["b"]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda m: m["layers"][0].__setitem__("digest", "sha256:../../../../etc/passwd"),
        lambda m: m["layers"][0].__setitem__("digest", "sha256:" + "A" * 64),
        lambda m: m["config"].__setitem__("digest", "/etc/passwd"),
        lambda m: m["layers"][0].__setitem__("mediaType", "application/x-evil"),
        lambda m: m["layers"][0].__setitem__("size", -1),
        lambda m: m.__setitem__("layers", "nope"),
        lambda m: m.__setitem__("schemaVersion", 1),
        lambda m: m["layers"][0].__setitem__("annotations", {SCALE: "nan"}),
        lambda m: m["layers"][0].__setitem__("annotations", {SCALE: 2}),
    ],
)
def test_tampered_manifests_never_reach_a_path(store, mutate):
    put_model(store, "victim", b"weights")
    put_model(store, "other", b"other")
    path = store.layout.manifests_dir / "localllm/library/victim/latest"
    document = json.loads(path.read_bytes())
    mutate(document)
    path.write_text(json.dumps(document))
    with pytest.raises(CorruptManifestError):
        store.read_manifest("victim")
    assert [e.name.display for e in store.list_models()] == ["other"]
    # garbage collection refuses to guess what an unreadable manifest still needs
    assert store.prune(grace_seconds=-1).skipped_reason
    assert store.remove("other").deleted_blobs == ()
    assert store.blobs.exists(sha256_of_bytes(b"weights"))


def test_an_adapter_layer_keeps_its_scale_as_an_annotation(store):
    digest = sha256_of_bytes(b"lora")
    layers = (Layer(LayerType.ADAPTER, digest, 4, 0.5), Layer(LayerType.ADAPTER, digest, 4))
    manifest = Manifest(BlobRef(digest, 4), layers)
    document = json.loads(manifest.to_bytes())
    assert document["layers"][0]["annotations"] == {SCALE: "0.5"}
    assert "annotations" not in document["layers"][1]  # scale 1: as before adapters had one
    assert Manifest.from_bytes(manifest.to_bytes()) == manifest
    document["layers"][1]["annotations"] = {"org.opencontainers.image.title": "x"}
    assert Manifest.from_bytes(json.dumps(document).encode()).layers[1].scale == 1.0


@pytest.mark.parametrize(
    "digest", ["sha256:../x", "../../etc/passwd", "sha256-" + "0" * 63, "sha256:" + "0" * 64 + "/x"]
)
def test_blob_paths_validate_digests(store, digest):
    with pytest.raises(InvalidDigestError):
        store.layout.blob_path(digest)
    with pytest.raises(InvalidDigestError):
        store.layout.partial_path(digest)


def test_manifest_paths_need_validated_names(store):
    with pytest.raises(InvalidNameError):
        store.layout.manifest_path("../../x")  # type: ignore[arg-type]
    with pytest.raises(InvalidNameError):
        store.read_manifest("../../x")


def test_junk_in_the_manifest_tree_is_ignored(store):
    put_model(store, "a", b"w")
    junk = store.layout.manifests_dir / "localllm" / "library" / "a" / ".tmp-abc"
    junk.write_text("{")
    (store.layout.manifests_dir / "Bad..Host" / "x" / "y").mkdir(parents=True)
    (store.layout.manifests_dir / "Bad..Host" / "x" / "y" / "z").write_text("{}")
    assert [e.name.display for e in store.list_models()] == ["a"]


def test_store_directory_from_settings(tmp_path):
    from localllm.daemon.settings import Settings

    settings = Settings.from_env({"LOCALLLM_MODELS": str(tmp_path / "elsewhere")})
    assert settings.models_dir == tmp_path / "elsewhere"
    default = Settings.from_env({})
    assert default.models_dir.name == "models"
    assert "localllm" in str(default.models_dir)


def test_digest_objects_are_the_only_blob_keys(store):
    blob = store.blobs.write_bytes(b"x")
    assert store.blobs.exists(blob.digest.wire)
    assert store.blobs.exists(Digest.parse(blob.digest.filename))
