"""The progress sidecar and the blob downloader on their own (arbitrary bytes, no GGUF)."""

from __future__ import annotations

import hashlib
import json
import os

import httpx
import pytest

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import DownloadError
from localllm.model_registry.pull.downloader import BlobDownload
from localllm.model_registry.pull.fetch import BlobSource
from localllm.model_registry.pull.partial import PartialState, list_partials
from tests.support.local_hub import LocalHub
from tests.support.pulls import fast_pull_options

PART = 64 << 10


def test_geometry_and_prefix():
    state = PartialState(size=250, part_size=100)
    assert state.part_count == 3 and state.part_range(2) == (200, 250)
    state.add(0, 100)
    state.add(1, 30)
    state.add(2, 50)
    assert state.completed == 180
    assert state.contiguous_prefix() == 130
    assert state.pending() == [1]
    assert state.next_offset(1) == 130
    state.reset_to_prefix(130)
    assert state.received == [100, 30, 0]
    assert PartialState(0, 100).pending() == [] and PartialState(0, 100).contiguous_prefix() == 0


def test_sidecar_round_trip_and_rejects(tmp_path):
    path = tmp_path / "sha256-x.partial.json"
    state = PartialState(size=250, part_size=100)
    state.add(0, 42)
    state.names = ["hf.co/a/b:latest"]
    state.save(path)
    loaded = PartialState.load(path, 250)
    assert loaded is not None
    assert (loaded.received, loaded.part_size, loaded.names) == ([42, 0, 0], 100, state.names)
    assert PartialState.load(path, 251) is None  # another file now: start over
    assert PartialState.load(tmp_path / "missing.json") is None
    too_much = {"size": 250, "part_size": 100, "received": [101, 0, 0]}
    for broken in (b"{", b"[]", json.dumps(too_much).encode()):
        path.write_bytes(broken)
        assert PartialState.load(path, 250) is None
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp files left


def test_list_partials(tmp_path):
    digest = Digest("a" * 64)
    state = PartialState(size=10, part_size=4)
    state.add(0, 4)
    state.names = ["n"]
    state.save(tmp_path / f"{digest.filename}.partial.json")
    (tmp_path / "sha256-nonsense.partial.json").write_text("{}")
    (infos,) = list_partials(tmp_path)
    assert (infos.digest, infos.size, infos.completed, infos.names) == (digest, 10, 4, ("n",))


@pytest.fixture
def served():
    data = os.urandom(5 * PART + 123)
    with LocalHub() as hub:
        hub.add_repo("local/raw", {"blob.gguf": data, "empty.gguf": b""})
        yield hub, data


def download(hub, tmp_path, path: str, data: bytes, size: int | None = None, **options):
    digest = Digest(hashlib.sha256(data).hexdigest())
    size = len(data) if size is None else size
    url = f"{hub.endpoint}/local/raw/resolve/main/{path}"
    client = httpx.Client()
    source = BlobSource(client, url, size, repo="local/raw")
    partial, state = tmp_path / "blob.partial", tmp_path / "blob.partial.json"
    job = BlobDownload(source, digest, size, partial, state, fast_pull_options(**options))
    try:
        return job, job.run(), partial
    finally:
        client.close()


@pytest.mark.parametrize("pwrite", [True, False], ids=["pwrite", "seek-and-write"])
def test_download_of_arbitrary_bytes(served, tmp_path, monkeypatch, pwrite):
    monkeypatch.setattr(
        "localllm.model_registry.pull.downloader._HAS_PWRITE", pwrite
    )  # False: Windows
    hub, data = served
    job, verified, partial = download(hub, tmp_path, "blob.gguf", data)
    assert verified and partial.read_bytes() == data and job.fetched == len(data)


def test_empty_file(served, tmp_path):
    hub, _ = served
    _, verified, partial = download(hub, tmp_path, "empty.gguf", b"")
    assert verified and partial.read_bytes() == b""


def test_resume_keeps_the_part_size_of_the_sidecar(served, tmp_path):
    hub, data = served
    state = PartialState(len(data), PART)  # an earlier run with 64 KiB parts did part 0
    state.add(0, PART)
    state.save(tmp_path / "blob.partial.json")
    (tmp_path / "blob.partial").write_bytes(data[:PART] + bytes(len(data) - PART))
    job, verified, partial = download(hub, tmp_path, "blob.gguf", data, part_size=1 << 20)
    assert verified and partial.read_bytes() == data
    assert job.fetched == len(data) - PART


def test_a_file_that_changed_size_on_the_hub(served, tmp_path):
    hub, data = served
    with pytest.raises(DownloadError, match="changed size"):
        download(hub, tmp_path, "blob.gguf", data, size=len(data) + 10)
    assert not (tmp_path / "blob.partial").exists()
