"""Pause, resume, cancel, shared downloads, and resuming after the puller was killed."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from localllm.model_registry.digests import Digest
from localllm.model_registry.pull import Puller, list_partials
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.local_hub import LocalHub
from tests.support.polling import wait_for
from tests.support.pulls import PullThread, fast_pull_options, sidecar_completed

REPO, FILE, NAME = "local/Slow-GGUF", "Slow-Q8_0.gguf", "hf.co/local/slow-gguf"
PART = 64 << 10
ROOT = Path(__file__).resolve().parents[1]
PULL_SCRIPT = """
import json, os, sys
from localllm.model_registry.pull import Puller
from localllm.model_registry.store import Store
from tests.support.pulls import fast_pull_options

store, name, connections, part = Store(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
options = fast_pull_options(connections=int(connections), part_size=int(part))
with Puller(store, endpoint=os.environ["HF_ENDPOINT"], options=options) as puller:
    for event in puller.pull(name):
        print(json.dumps(event.to_json()), flush=True)
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("slow") / "m.gguf"
    return write_tiny_model(path, n_embd=128, n_layer=4, file_type="Q8_0", seed=9).read_bytes()


@pytest.fixture
def digest(data) -> Digest:
    return Digest(hashlib.sha256(data).hexdigest())


@pytest.fixture
def hub(data):
    with LocalHub() as hub:
        hub.add_repo(REPO, {FILE: data})
        hub.set_throttle(REPO, FILE, 150_000)  # per connection: a pull takes about 2 s
        yield hub


@pytest.fixture
def puller(store, hub):
    with Puller(store, endpoint=hub.endpoint, options=fast_pull_options()) as puller:
        yield puller


def paths(store, digest):
    layout = store.layout
    lock = layout.partial_path(digest).with_name(layout.partial_path(digest).name + ".lock")
    return layout.partial_path(digest), layout.partial_state_path(digest), lock


def start_pull(puller, name=NAME) -> PullThread:
    thread = PullThread(puller, name)
    thread.start()
    return thread


def test_pause_keeps_the_partial_and_resume_continues(store, hub, puller, data, digest):
    pulling = start_pull(puller)
    pulling.wait_for_bytes(len(data) // 3)
    assert puller.pause(NAME)
    assert pulling.finish() == "paused"
    partial, state, lock = paths(store, digest)
    assert partial.exists() and state.exists() and not lock.exists()
    assert store.list_models() == [] and not store.blobs.exists(digest)
    recorded = sidecar_completed(state)
    assert pulling.completed <= recorded < len(data)
    assert [p.names for p in list_partials(store.layout.blobs_dir)] == [(f"{NAME}:latest",)]

    hub.set_throttle(REPO, FILE, None)
    hub.wait_idle()
    hub.reset_counters()
    events = list(puller.pull(NAME))
    assert events[-1].status == "success"
    assert hub.bytes_served(REPO, FILE) == len(data) - recorded  # finished parts stay finished
    assert store.blobs.path(digest).read_bytes() == data
    assert not partial.exists() and not state.exists()


def test_pause_with_nothing_running(puller):
    assert not puller.pause(NAME)
    assert not puller.cancel(NAME)


def test_cancel_deletes_the_partial(store, hub, puller, data, digest):
    pulling = start_pull(puller)
    pulling.wait_for_bytes(len(data) // 4)
    assert puller.cancel(NAME)
    assert pulling.finish() == "cancelled"
    assert not any(path.exists() for path in paths(store, digest))
    assert store.list_models() == [] and not store.blobs.exists(digest)


def test_cancel_a_paused_pull_from_another_puller(store, hub, puller, data, digest):
    pulling = start_pull(puller)
    pulling.wait_for_bytes(len(data) // 4)
    puller.pause(NAME)
    assert pulling.finish() == "paused"
    assert paths(store, digest)[0].exists()
    with Puller(store, endpoint=hub.endpoint) as restarted:  # e.g. after a daemon restart
        assert restarted.cancel(NAME)
        assert not restarted.cancel(NAME)
    assert not any(path.exists() for path in paths(store, digest))


def test_leaving_the_iteration_early_pauses(store, hub, puller, data, digest):
    events = puller.pull(NAME)
    for event in events:
        if event.completed and event.completed > len(data) // 4:
            break
    events.close()
    partial, state, _ = paths(store, digest)
    assert partial.exists() and sidecar_completed(state) > len(data) // 4
    assert store.list_models() == []
    hub.set_throttle(REPO, FILE, None)
    assert list(puller.pull(NAME))[-1].status == "success"


def test_leaving_an_async_pull_early_pauses(store, hub, puller, data, digest):
    async def pull_a_quarter() -> None:
        async for event in puller.apull(NAME):
            if event.completed and event.completed > len(data) // 4:
                break

    asyncio.run(pull_a_quarter())
    partial, state, lock = paths(store, digest)
    assert wait_for(lambda: state.exists() and not lock.exists()), "the pull did not pause"
    assert partial.exists() and store.list_models() == []
    hub.set_throttle(REPO, FILE, None)
    assert list(puller.pull(NAME))[-1].status == "success"


def test_two_pulls_in_one_puller_share_one_download(store, hub, puller, data, digest):
    hub.set_throttle(REPO, FILE, 500_000)
    first, second = start_pull(puller), start_pull(puller, "hf.co/local/slow-gguf:q8_0")
    assert (first.finish(), second.finish()) == ("success", "success")
    assert hub.bytes_served(REPO, FILE) == len(data)
    assert {model.name.display for model in store.list_models()} == {
        "hf.co/local/slow-gguf",
        "hf.co/local/slow-gguf:q8_0",
    }


def run_pull_process(store, hub, connections: int = 4) -> subprocess.Popen:
    env = os.environ | {"HF_ENDPOINT": hub.endpoint, "PYTHONPATH": str(ROOT)}
    arguments = [str(store.root), NAME, str(connections), str(PART)]
    command = [sys.executable, "-c", PULL_SCRIPT, *arguments]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)


def test_two_processes_download_a_blob_once(store, hub, data, digest):
    hub.set_throttle(REPO, FILE, 500_000)
    processes = [run_pull_process(store, hub) for _ in range(2)]
    outputs = [process.communicate(timeout=60)[0] for process in processes]
    assert [process.returncode for process in processes] == [0, 0]
    for output in outputs:
        assert json.loads(output.splitlines()[-1]) == {"status": "success"}
    assert hub.bytes_served(REPO, FILE) == len(data)
    assert store.blobs.path(digest).read_bytes() == data


def test_resume_after_the_pulling_process_was_killed(store, hub, data, digest):
    connections = 2
    hub.set_throttle(REPO, FILE, 200_000)
    process = run_pull_process(store, hub, connections)
    partial, state, _ = paths(store, digest)
    try:
        assert wait_for(lambda: sidecar_completed(state) >= len(data) // 4, 30), "no progress"
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=10)
    assert partial.exists() and state.exists()
    recorded = sidecar_completed(state)
    assert recorded < len(data)
    hub.set_throttle(REPO, FILE, None)
    hub.wait_idle()
    served_before = hub.bytes_served(REPO, FILE)
    hub.reset_counters()
    options = fast_pull_options(connections=connections, part_size=PART)
    with Puller(store, endpoint=hub.endpoint, options=options) as puller:
        assert list(puller.pull(NAME))[-1].status == "success"
    served_after = hub.bytes_served(REPO, FILE)
    assert served_after == len(data) - recorded
    refetched = served_before + served_after - len(data)
    assert 0 <= refetched <= connections * PART
    assert store.blobs.path(digest).read_bytes() == data
    assert store.read_manifest(NAME).layers[0].digest == digest
