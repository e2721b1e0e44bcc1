"""Downloads under network faults: drops, stalls, corrupt bytes, no Range support, errors."""

from __future__ import annotations

import hashlib

import pytest

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import DigestMismatchError, DownloadError
from localllm.model_registry.pull import Puller
from localllm.model_registry.tiny_gguf import write_tiny_model
from tests.support.local_hub import LocalHub
from tests.support.polling import wait_for
from tests.support.pulls import PullThread, fast_pull_options, sidecar_completed

REPO, FILE, NAME = "local/Faulty-GGUF", "Faulty-Q8_0.gguf", "hf.co/local/faulty-gguf"
PART = 64 << 10


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("faulty") / "m.gguf"
    return write_tiny_model(path, n_embd=128, n_layer=4, file_type="Q8_0", seed=7).read_bytes()


@pytest.fixture
def digest(data) -> Digest:
    return Digest(hashlib.sha256(data).hexdigest())


@pytest.fixture
def hub(data):
    with LocalHub() as hub:
        hub.add_repo(REPO, {FILE: data})
        yield hub


@pytest.fixture
def puller(store, hub):
    with Puller(store, endpoint=hub.endpoint, options=fast_pull_options(part_size=PART)) as p:
        yield p


def assert_pulled(store, digest, data) -> None:
    manifest = store.read_manifest(NAME)
    assert manifest.layers[0].digest == digest
    assert store.blobs.path(digest).read_bytes() == data
    assert not store.layout.partial_path(digest).exists()
    assert not store.layout.partial_state_path(digest).exists()


def assert_untouched(store, digest) -> None:
    assert store.list_models() == []
    assert not store.blobs.exists(digest)


def test_dropped_connection_is_retried(store, hub, puller, data, digest):
    hub.set_fault(REPO, FILE, drop_at=len(data) // 2 + 1000)
    assert list(puller.pull(NAME))[-1].status == "success"
    assert_pulled(store, digest, data)
    assert hub.bytes_served(REPO, FILE) <= len(data) + PART
    assert hub.blob_requests(REPO, FILE) > -(-len(data) // PART)  # one more than the parts


def test_stalled_connection_is_retried(store, hub, puller, data, digest):
    # The hub goes quiet mid-file until the puller hangs up (a minute at most, then it would go
    # on): only the puller's own stall timeout (1 s here) moves the pull on.
    hub.set_fault(REPO, FILE, stall_at=len(data) // 3, stall_seconds=60.0)
    assert list(puller.pull(NAME))[-1].status == "success"
    assert_pulled(store, digest, data)
    assert wait_for(lambda: hub.stalls_abandoned(REPO, FILE) == 1), "the stall was waited out"


def test_server_errors_are_retried(store, hub, puller, data, digest):
    hub.set_fault(REPO, FILE, status=503, times=2)
    assert list(puller.pull(NAME))[-1].status == "success"
    assert_pulled(store, digest, data)


def test_persistent_errors_give_up_and_leave_nothing(store, hub, puller, digest):
    hub.set_fault(REPO, FILE, status=500, times=None)
    with pytest.raises(DownloadError, match="run the pull again to resume"):
        list(puller.pull(NAME))
    assert_untouched(store, digest)
    assert not store.layout.partial_path(digest).exists()  # nothing worth resuming


def test_failure_mid_way_keeps_the_partial_for_a_resume(store, hub, puller, data, digest):
    hub.set_fault(REPO, FILE, drop_at=len(data) // 2, times=None)
    with pytest.raises(DownloadError, match="failed 4 times in a row"):
        list(puller.pull(NAME))
    assert_untouched(store, digest)
    recorded = sidecar_completed(store.layout.partial_state_path(digest))
    assert len(data) // 2 - 4 * PART <= recorded < len(data)
    hub.set_fault(REPO, FILE, None)
    hub.wait_idle()
    hub.reset_counters()
    assert list(puller.pull(NAME))[-1].status == "success"
    assert hub.bytes_served(REPO, FILE) == len(data) - recorded
    assert_pulled(store, digest, data)


@pytest.mark.parametrize("times", [1, None])
def test_corrupt_bytes_never_reach_the_store(store, hub, puller, digest, times):
    hub.set_fault(REPO, FILE, corrupt=True, times=times)
    with pytest.raises(DigestMismatchError) as caught:
        list(puller.pull(NAME))
    assert "downloaded data did not match" in str(caught.value)
    assert "run the pull again" in str(caught.value)
    assert_untouched(store, digest)
    assert not store.layout.partial_path(digest).exists()
    assert not store.layout.partial_state_path(digest).exists()


def test_server_without_range_support(store, hub, puller, data, digest):
    hub.set_fault(REPO, FILE, ignore_range=True, times=None)
    assert list(puller.pull(NAME))[-1].status == "success"
    assert_pulled(store, digest, data)


def test_server_that_stops_supporting_ranges_mid_download(store, hub, data, digest):
    options = fast_pull_options(part_size=PART, connections=2)
    hub.set_throttle(REPO, FILE, 400_000)
    with Puller(store, endpoint=hub.endpoint, options=options) as puller:
        first = PullThread(puller, NAME)
        first.start()
        first.wait_for_bytes(len(data) // 3)
        puller.pause(NAME)
        assert first.finish() == "paused"
        assert sidecar_completed(store.layout.partial_state_path(digest)) > 0
        hub.set_throttle(REPO, FILE, None)
        hub.set_fault(REPO, FILE, ignore_range=True, times=None)
        assert list(puller.pull(NAME))[-1].status == "success"
    assert_pulled(store, digest, data)


def test_expired_cdn_addresses_are_renewed(store, hub, puller, data, digest):
    hub.expire_cdn_urls(after_requests=6)  # the parts after the sixth meet an expired address
    assert list(puller.pull(NAME))[-1].status == "success"
    assert_pulled(store, digest, data)
    kinds = ["cdn" if path.startswith("/cdn/") else "hub" for _, path in hub.requests_log]
    sixth_cdn = [i for i, kind in enumerate(kinds) if kind == "cdn"][5]
    assert "hub" in kinds[sixth_cdn:]  # a fresh address was asked for after the expiry
