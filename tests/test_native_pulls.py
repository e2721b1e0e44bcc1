"""Pulls through the daemon: progress as NDJSON, hanging up does not stop a pull, pause,
resume and cancel, and a pull list that survives the daemon being killed mid-pull."""

from __future__ import annotations

import json

import httpx
import pytest

from localllm.daemon.client import BadRequest, Client, ModelNotFound, ServerError
from localllm.model_registry.store import Store
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.daemon import Daemon
from tests.support.local_hub import LocalHub
from tests.support.polling import wait_for
from tests.support.pulls import StreamWatcher
from tests.support.pulls import publish as publish_repo

pytestmark = pytest.mark.slow

RATE = 1_500_000  # bytes/s per connection: a 3.7 MB model takes about 2.5 s
MIB = 1 << 20  # the downloader reports progress per MiB written


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Distinct small models (distinct digests), so no test finds another's blob in the store."""
    root = tmp_path_factory.mktemp("pull-models")
    return [
        write_tiny_model(root / f"m{seed}.gguf", n_embd=256, seed=seed).read_bytes()
        for seed in range(5)
    ]


@pytest.fixture(scope="module")
def hub():
    with LocalHub() as hub:
        yield hub


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, hub):
    root = tmp_path_factory.mktemp("native-pulls")
    with Daemon(root / "store", root / "logs", env={"HF_ENDPOINT": hub.endpoint}) as running:
        yield running


@pytest.fixture(scope="module")
def client(daemon):
    with Client(daemon.url) as client:
        yield client


def publish(hub, files, index: int, rate: float | None = RATE) -> tuple[str, str, str]:
    """A throttled repo with model ``index``; returns (repo, file, name to pull)."""
    return publish_repo(hub, files[index], f"local/Pull{index}-GGUF", rate)


def names(client) -> set[str]:
    return {m.name for m in client.list_models()}


def test_progress_events_and_hanging_up_does_not_cancel(daemon, client, hub, files):
    repo, file, name = publish(hub, files, 0)
    body = {"model": name}
    with httpx.stream("POST", daemon.url + "/api/pull", json=body, timeout=30) as response:
        assert response.headers["content-type"] == "application/x-ndjson"
        lines = response.iter_lines()
        first, second = json.loads(next(lines)), json.loads(next(lines))
    assert first == {"status": "pulling manifest"}
    assert second["digest"] == "sha256:" + hub.sha256(repo, file)
    assert second["total"] == len(files[0])
    [record] = client.pulls()
    assert record.name == name.lower() and record.state == "running"
    assert wait_for(lambda: name.lower() in names(client), timeout=30), client.pulls()
    assert client.pulls() == []
    assert hub.bytes_served(repo, file) == len(files[0])  # one download, not restarted


def test_pause_then_resume_continues_the_partial_download(client, hub, files):
    repo, file, name = publish(hub, files, 1)
    watcher = StreamWatcher(client.pull(name))
    assert wait_for(lambda: watcher.completed >= MIB, timeout=20)
    client.pause_pull(name)
    assert watcher.last() == "paused"
    [record] = client.pulls()
    assert record.state == "paused" and 0 < record.completed < record.total
    hub.set_throttle(repo, file, None)
    resumed = list(client.resume_pull(name))
    assert resumed[-1].status == "success" and name.lower() in names(client)
    assert hub.bytes_served(repo, file) < 1.5 * len(files[1])  # resumed, not started over
    with pytest.raises(ModelNotFound):
        client.pause_pull(name)  # nothing left to pause


def test_cancel_stops_the_pull_and_deletes_its_partial(daemon, client, hub, files):
    repo, _, name = publish(hub, files, 2)
    watcher = StreamWatcher(client.pull(name))
    assert wait_for(lambda: watcher.completed >= MIB, timeout=20)
    client.cancel_pull(name)
    assert watcher.last() == "cancelled"
    assert client.pulls() == [] and name.lower() not in names(client)
    store = Store(daemon_store(daemon))
    digest = "sha256:" + hub.sha256(repo, "Pull2-F16.gguf")
    assert wait_for(lambda: not store.layout.partial_path(digest).exists(), timeout=5)
    with pytest.raises(ModelNotFound):
        client.cancel_pull(name)


def test_a_failed_pull_is_listed_until_cancelled(daemon, client, hub, files):
    repo, file, name = publish(hub, files, 4, rate=None)
    hub.report_size(repo, file, len(files[4]) + 10)  # the hub's metadata lies about the size
    with pytest.raises(ServerError, match="changed size"):
        list(client.pull(name))
    [record] = client.pulls()
    assert record.state == "failed" and "changed size" in record.error
    answer = httpx.post(daemon.url + "/api/pull", json={"model": name, "stream": False})
    assert answer.status_code == 502 and "changed size" in answer.json()["error"]
    client.cancel_pull(name)
    assert client.pulls() == []


def test_an_unknown_model_is_a_404_before_any_stream(client):
    with pytest.raises(ModelNotFound, match="catalog"):
        list(client.pull("no-such-catalog-name:7b"))
    assert client.pulls() == []


def test_the_pull_list_survives_a_killed_daemon_and_resumes(tmp_path, hub, files):
    repo, file, name = publish(hub, files, 3, rate=1_000_000)
    env = {"HF_ENDPOINT": hub.endpoint, "LOCALLLM_DATA": str(tmp_path / "data")}
    record_file = tmp_path / "data" / "pulls.json"

    def saved_progress() -> int:
        try:
            pulls = json.loads(record_file.read_text())["pulls"]
        except (OSError, ValueError, KeyError):
            return 0
        return sum(done for p in pulls.values() for _, done in p["blobs"].values())

    first = Daemon(tmp_path / "store", tmp_path / "logs1", env=env)
    try:
        with Client(first.url) as client:
            watcher = StreamWatcher(client.pull(name))
            assert wait_for(lambda: saved_progress() >= MIB, timeout=20)
            first.process.kill()  # no goodbye: the pull list still says "running"
            first.process.wait()
            watcher.join(10)
    finally:
        first.stop()
    with Daemon(tmp_path / "store", tmp_path / "logs2", env=env) as second, Client(second.url) as c:
        [record] = c.pulls()
        assert record.state == "paused" and record.interrupted is True
        assert record.name == name.lower() and record.completed >= MIB
        hub.set_throttle(repo, file, None)
        assert list(c.resume_pull(name))[-1].status == "success"
        assert name.lower() in names(c) and c.pulls() == []
    assert hub.bytes_served(repo, file) < 1.8 * len(files[3])


def daemon_store(daemon):
    return daemon.log_path.parent.parent / "store"


# -- browsing the hub ------------------------------------------------------------------------
def test_hub_search_finds_gguf_repositories(client, hub, files):
    hub.add_repo("local/Search-GGUF", {"Search-Q8_0.gguf": b"GGUF"})
    hub.add_repo("local/Search-safetensors", {"model.safetensors": b"weights"})
    found = [r.repo for r in client.hub_search("search")]
    assert found == ["local/Search-GGUF"]
    assert len(client.hub_search("", limit=1)) == 1


def test_hub_files_lists_each_quant_with_its_pull_name(daemon, client, hub):
    hub.add_repo(
        "local/Multi-GGUF",
        {
            "Multi-Q8_0.gguf": b"8" * 800,
            "Multi-Q4_K_M.gguf": b"4" * 400,
            "Q2_K/Multi-Q2_K-00001-of-00002.gguf": b"2" * 100,
            "Q2_K/Multi-Q2_K-00002-of-00002.gguf": b"2" * 150,
            "mmproj-Multi-F16.gguf": b"p" * 50,
            "README.md": b"hello",
        },
    )
    listed = client.hub_files("local/Multi-GGUF")
    assert [f.quant for f in listed] == ["Q4_K_M", "Q8_0", "Q2_K"]  # best first
    assert listed[0].name_to_pull == "hf.co/local/Multi-GGUF:Q4_K_M"
    assert listed[0].recommended and not any(f.recommended for f in listed[1:])
    q2 = listed[2]
    assert q2.shards == 2 and q2.size == 250 and q2.file.endswith("00001-of-00002.gguf")
    answer = client._connection.request(
        "GET", "/api/hub/files", params={"repo": "local/Multi-GGUF"}
    )
    assert answer.json()["projector"] == "mmproj-Multi-F16.gguf"


def test_the_catalog_is_listed_without_the_hub(client):
    listed = {m.name: m for m in client.hub_catalog()}  # the daemon's built-in catalog
    small = listed["qwen2.5:0.5b"]
    assert small.size == 491_400_032 and small.parameter_size == "494M"
    assert "qwen:0.5b" in small.aliases and small.kind == "chat" and small.description
    assert small.repo == "Qwen/Qwen2.5-0.5B-Instruct-GGUF" and small.quant == "Q4_K_M"
    assert small.capabilities == ["tools"]  # what the app's badges show before a download
    assert listed["qwen3:4b"].capabilities == ["thinking", "tools"]


def test_hub_files_errors(client):
    with pytest.raises(BadRequest, match="org/name"):
        client.hub_files("../../etc")
    with pytest.raises(ModelNotFound, match="not found on Hugging Face"):
        client.hub_files("local/No-Such-Repo")
