"""Adding a model found on disk: a hard link (same inode, no second copy), hashed and checked;
a copy only across file systems, with its size reported; a tampered Ollama blob refused."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from localllm.model_registry.errors import DigestMismatchError, ModelExistsError, NotLinkableError
from localllm.model_registry.local_models import ScanRoots, add_found_model, describe_file, scan
from localllm.model_registry.store import LayerType, Store
from localllm.model_registry.store.placing import Placement
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.other_apps import hf_cache_model, ollama_model
from tests.support.store import assert_store_consistent


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path / "store")


def _weights_blob(store: Store, name: str) -> Path:
    manifest = store.read_manifest(name)
    [layer] = [layer for layer in manifest.layers if layer.media_type is LayerType.MODEL]
    return store.layout.blob_path(layer.digest)


def _disk_kib(*paths: Path) -> int:
    """Disk use as ``du`` counts it: a file linked twice is counted once."""
    out = subprocess.run(["du", "-skc", *map(str, paths)], capture_output=True, text=True)
    return int(out.stdout.splitlines()[-1].split()[0])


def test_hugging_face_file_is_hard_linked_not_copied(tmp_path, store):
    hub = tmp_path / "hub"
    snapshot = hf_cache_model(hub, "org/repo", "Tiny-Q8_0.gguf")
    before = _disk_kib(hub, store.root)
    [found] = scan(ScanRoots(hugging_face=(hub,)), store).models
    report = add_found_model(store, found)
    blob = _weights_blob(store, "tiny:q8_0")
    assert os.stat(blob).st_ino == os.stat(snapshot).st_ino  # the same file
    assert os.stat(blob).st_nlink == 2
    assert [f.placement for f in report.files] == [Placement.LINKED]
    assert report.copied_bytes == 0
    assert _disk_kib(hub, store.root) - before < 64  # manifests and config, not 1+ MiB again
    assert blob.name == f"sha256-{snapshot.resolve().name}"  # hashed to what HF named it
    assert_store_consistent(store)
    [again] = scan(ScanRoots(hugging_face=(hub,)), store).models
    assert again.in_store


def test_adding_linked_content_again_leaves_the_other_apps_file_time(tmp_path, store):
    source = write_tiny_model(tmp_path / "Theirs.gguf")
    add_found_model(store, describe_file(source, store))
    long_ago = time.time() - 30 * 86400
    os.utime(source, (long_ago, long_ago))
    store.blobs.write_bytes(source.read_bytes())  # the same content, uploaded
    _, placement = store.blobs.add_file(source, mode="copy")
    assert placement is Placement.PRESENT
    assert source.stat().st_mtime == long_ago  # the app's file, untouched
    own = store.blobs.write_bytes(b"ours alone")
    os.utime(store.blobs.path(own.digest), (long_ago, long_ago))
    store.blobs.write_bytes(b"ours alone")  # the store's own file: its grace period renewed
    assert store.blobs.path(own.digest).stat().st_mtime > long_ago


def test_editing_a_linked_original_is_caught_by_verify(tmp_path, store):
    source = write_tiny_model(tmp_path / "Edit.gguf")
    add_found_model(store, describe_file(source, store))
    with source.open("r+b") as stream:  # an app rewriting its file in place
        stream.seek(-16, os.SEEK_END)
        stream.write(b"\xff" * 16)
    assert not store.verify().ok
    source.unlink()  # deleting either name is safe: the other keeps the bytes
    assert _weights_blob(store, "edit").is_file()


def test_across_file_systems_it_is_copied_and_the_size_told(tmp_path, store):
    if os.stat("/dev/shm").st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("/dev/shm is on the same file system here")
    with tempfile.TemporaryDirectory(dir="/dev/shm") as other:
        source = write_tiny_model(Path(other) / "Far.gguf")
        found = describe_file(source, store)
        assert not found.linkable
        with pytest.raises(NotLinkableError, match=r"Far\.gguf"):
            add_found_model(store, found, mode="link")
        assert store.list_models() == []
        progress: list[int] = []
        report = add_found_model(
            store, found, on_progress=lambda _f, done, _t: progress.append(done)
        )
        assert [f.placement for f in report.files] == [Placement.COPIED]
        assert report.copied_bytes == source.stat().st_size == progress[-1]
        assert os.stat(_weights_blob(store, "far")).st_ino != os.stat(source).st_ino
        assert describe_file(source, store).in_store  # remembered by path, size and time


def test_a_copy_of_content_the_store_holds_says_so(tmp_path, store):
    source = write_tiny_model(tmp_path / "Twice.gguf")
    first = store.blobs.add_file(source, mode="copy")
    again = store.blobs.add_file(source, mode="copy")
    assert (first[1], again[1]) == (Placement.COPIED, Placement.PRESENT)
    assert first[0].digest == again[0].digest


def test_ollama_blob_is_checked_and_a_tampered_one_refused(tmp_path, store):
    root = tmp_path / "ollama"
    blob = ollama_model(root, "good", "1b", template="{{ .Prompt }}")
    ollama_model(root, "bad", "1b", seed=5)
    bad_blob = next(p for p in (root / "blobs").iterdir() if p != blob and p.stat().st_size > 4096)
    with bad_blob.open("r+b") as stream:
        stream.seek(-8, os.SEEK_END)
        stream.write(b"\x00\x01\x02\x03\x04\x05\x06\x07")  # header intact, content changed
    found = {m.name: m for m in scan(ScanRoots(ollama=(root,)), store).models}
    with pytest.raises(DigestMismatchError):
        add_found_model(store, found["bad:1b"])
    assert store.list_models() == []
    assert not [p for p in store.layout.blobs_dir.iterdir() if p.name.startswith(".tmp-")]
    add_found_model(store, found["good:1b"])
    manifest = store.read_manifest("good:1b")
    assert store.read_text_layer(manifest, LayerType.TEMPLATE) == "{{ .Prompt }}"
    assert os.stat(_weights_blob(store, "good:1b")).st_ino == os.stat(blob).st_ino
    assert_store_consistent(store)


def test_an_existing_name_is_never_overwritten(tmp_path, store):
    source = write_tiny_model(tmp_path / "Same.gguf")
    add_found_model(store, describe_file(source, store))
    other = (
        write_tiny_model(tmp_path / "x" / "Same.gguf", seed=9)
        if (tmp_path / "x").mkdir() is None
        else None
    )
    with pytest.raises(ModelExistsError, match="same"):
        add_found_model(store, describe_file(other, store))
    add_found_model(store, describe_file(other, store), name="same-two", mode="copy")
    assert {e.name.display for e in store.list_models()} == {"same", "same-two"}


def test_a_refused_hard_link_falls_back_to_a_clone_or_a_copy(tmp_path, store, monkeypatch):
    """Linux refuses to hard-link a file another user owns (protected_hardlinks): the file
    is then cloned where the file system can, else copied, and checked all the same."""
    source = write_tiny_model(tmp_path / "Theirs.gguf")

    def refuse(*_args, **_kwargs):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", refuse)
    report = add_found_model(store, describe_file(source, store))
    [added] = report.files
    assert added.placement in (Placement.CLONED, Placement.COPIED)
    assert os.stat(_weights_blob(store, "theirs")).st_ino != os.stat(source).st_ino
    assert_store_consistent(store)
