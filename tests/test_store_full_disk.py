"""A disk that fills up during a write: a clear error, and nothing half-written left behind."""

from __future__ import annotations

import pytest

from localllm.model_registry.errors import InsufficientSpaceError
from localllm.model_registry.store import Store
from tests.support.small_disk import small_disk as mounted
from tests.support.store import assert_store_consistent, put_model


class Zeros:
    """An endless-enough stream whose size the writer cannot know in advance."""

    def __init__(self, size: int):
        self.left = size

    def read(self, n: int) -> bytes:
        n = min(n, self.left)
        self.left -= n
        return b"\0" * n


@pytest.fixture
def small_disk(tmp_path):
    with mounted(tmp_path / "small-disk", "96m") as folder:
        yield folder


def test_disk_filling_up_mid_write_leaves_no_partial_blob(small_disk):
    store = Store(small_disk / "store")
    put_model(store, "existing", b"weights that must survive")
    with pytest.raises(InsufficientSpaceError, match="not enough disk space"):
        store.blobs.write_stream(Zeros(200 << 20))
    leftovers = [p.name for p in store.layout.blobs_dir.iterdir() if p.name.startswith(".tmp")]
    assert leftovers == []
    assert_store_consistent(store)
    assert [e.name.display for e in store.list_models()] == ["existing"]


def test_a_write_that_cannot_fit_is_refused_before_it_starts(small_disk):
    store = Store(small_disk / "store")
    with pytest.raises(InsufficientSpaceError) as caught:
        store.blobs.write_stream(Zeros(10), size_hint=500 << 20)
    assert caught.value.needed == 500 << 20
    assert str(small_disk) not in str(caught.value)
