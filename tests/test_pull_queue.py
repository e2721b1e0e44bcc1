"""Many pulls at once: a bounded number download, the rest wait queued (listed and streamed
as "queued"), pause and cancel work on queued pulls, and the daemon's threads and open files
stay bounded."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import ollama
import pytest

from localllm.daemon.client import Client
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.daemon import Daemon
from tests.support.local_hub import LocalHub
from tests.support.polling import wait_for
from tests.support.pulls import StreamWatcher
from tests.support.pulls import publish as publish_repo

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc"),
]

MAX_PULLS = 2
COUNT = 6
RATE = 600_000  # bytes/s per connection: each 1 MB model takes about 2 s


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("queue-models")
    return [
        write_tiny_model(root / f"q{seed}.gguf", n_embd=128, seed=100 + seed).read_bytes()
        for seed in range(COUNT + 3)
    ]


@pytest.fixture(scope="module")
def hub():
    with LocalHub() as hub:
        yield hub


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, hub):
    root = tmp_path_factory.mktemp("pull-queue")
    env = {"HF_ENDPOINT": hub.endpoint, "LOCALLLM_MAX_PULLS": str(MAX_PULLS)}
    with Daemon(root / "store", root / "logs", env=env) as running:
        yield running


@pytest.fixture(scope="module")
def client(daemon):
    with Client(daemon.url) as client:
        yield client


def publish(hub, files, index: int, rate: float | None = RATE) -> tuple[str, str, str]:
    return publish_repo(hub, files[index], f"local/Queue{index}-GGUF", rate)


class Peaks(threading.Thread):
    """The most threads and open files a process had while this watched it."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.threads, self.files = pid, 0, 0
        self.done = threading.Event()
        self.start()

    def run(self) -> None:
        while not self.done.is_set():
            self.threads = max(self.threads, threads(self.pid))
            self.files = max(self.files, open_files(self.pid))
            time.sleep(0.02)

    def stop(self) -> tuple[int, int]:
        self.done.set()
        self.join()
        return self.threads, self.files


def states(client) -> dict[str, str]:
    return {p.name: p.state for p in client.pulls()}


def threads(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/task").iterdir()))


def open_files(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


def test_many_pulls_download_a_bounded_number_at_once(daemon, client, hub, files):
    names = [publish(hub, files, i)[2] for i in range(COUNT)]
    pid = daemon.process.pid
    before = threads(pid), open_files(pid)
    peaks = Peaks(pid)
    try:
        watchers = [StreamWatcher(client.pull(name)) for name in names[:-1]]
        ollama_client = ollama.Client(host=daemon.url)
        watchers.append(StreamWatcher(ollama_client.pull(names[-1], stream=True)))
        assert wait_for(lambda: len(client.pulls()) == COUNT, timeout=20), client.pulls()
        listed = states(client)
        assert list(listed.values()).count("queued") >= COUNT - MAX_PULLS - 1, listed
        assert [w.last() for w in watchers] == ["success"] * COUNT
    finally:
        most = peaks.stop()
    assert hub.peak_files_sending <= MAX_PULLS  # never more downloads than the bound
    assert sum("queued" in w.statuses for w in watchers) >= COUNT - MAX_PULLS - 1
    assert watchers[-1].statuses[0] == "queued"  # ollama's own client takes the status
    assert {m.name for m in client.list_models()} >= {n.lower() for n in names}
    assert client.pulls() == []
    # each running pull costs a few threads (its driver, the transfer, fetch and hash
    # workers) and open files (connections, the partial file, its lock); a queued pull costs
    # none, so the peaks do not grow with the number asked for (unbounded, 6 pulls took 24
    # more threads and 38 more files here). Every watcher holds one connection of its own.
    assert most[0] - before[0] <= MAX_PULLS * 6, (before, most)
    assert most[1] - before[1] <= COUNT + MAX_PULLS * 8, (before, most)


def test_queued_pulls_pause_cancel_and_resume(daemon, client, hub, files):
    running = [publish(hub, files, COUNT + i, rate=100_000) for i in range(MAX_PULLS)]
    watchers = [StreamWatcher(client.pull(name)) for _, _, name in running]
    assert wait_for(lambda: len(client.pulls()) == MAX_PULLS, timeout=20)
    _, _, paused = publish(hub, files, COUNT + MAX_PULLS, rate=None)
    _, _, cancelled = publish(hub, files, 0, rate=None)
    paused_watch = StreamWatcher(client.pull(paused))
    cancelled_watch = StreamWatcher(client.pull(cancelled))
    assert wait_for(lambda: states(client).get(paused.lower()) == "queued", timeout=10)
    assert wait_for(lambda: states(client).get(cancelled.lower()) == "queued", timeout=10)

    client.pause_pull(paused)
    assert paused_watch.last() == "paused"
    assert states(client)[paused.lower()] == "paused"
    client.cancel_pull(cancelled)
    assert cancelled_watch.last() == "cancelled"
    assert cancelled.lower() not in states(client)

    for repo, file, _ in running:
        hub.set_throttle(repo, file, None)
    assert [w.last() for w in watchers] == ["success"] * MAX_PULLS
    assert list(client.resume_pull(paused))[-1].status == "success"
    assert client.pulls() == []
