"""Importing a file the user has: the file whose GGUF header is checked is the file stored.

The importer once read the header by path and then opened the path again to copy (or linked
it by name), so swapping the path for a link to another file in between imported that file.
Now each file is opened once: the copy is made from the open file, and a hard link made by
name is kept only if it is that very file. A clone is private (0600) as a copy is.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import NotLinkableError
from localllm.model_registry.importer import FileEvents, import_gguf
from localllm.model_registry.store import LayerType, Store
from localllm.model_registry.store.placing import reflink

SECRET = b"-----BEGIN OPENSSH PRIVATE KEY-----\nnot a model at all\n"


class SwapOnLookup(Mapping[Path, Digest]):
    """``FileEvents.expected`` that, when the importer asks about ``path`` (after it checked
    the header, before it stores the bytes), swaps ``path`` for a link to ``target``: what a
    local attacker racing the import would do."""

    def __init__(self, path: Path, target: Path):
        self.path, self.target, self.swapped = path, target, False

    def __getitem__(self, key: Path) -> Digest:
        raise KeyError(key)

    def get(self, key, default=None):
        if key == self.path and not self.swapped:
            self.path.unlink()
            self.path.symlink_to(self.target)
            self.swapped = True
        return default

    def __iter__(self) -> Iterator[Path]:
        return iter(())

    def __len__(self) -> int:
        return 0


@pytest.fixture
def racing(tmp_path, tiny_model_path) -> tuple[Path, Path, str]:
    """A model file to import, a secret beside it, and the model's digest."""
    model = tmp_path / "incoming" / "model.gguf"
    model.parent.mkdir()
    model.write_bytes(tiny_model_path.read_bytes())
    secret = tmp_path / "id_rsa"
    secret.write_bytes(SECRET)
    return model, secret, "sha256:" + hashlib.sha256(model.read_bytes()).hexdigest()


def _stored_digests(store: Store) -> set[str]:
    return {str(blob.digest) for blob in store.blobs.committed()}


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
@pytest.mark.parametrize("mode", ["copy", "auto"])
def test_a_swap_after_the_header_check_stores_the_checked_file(tmp_path, racing, mode):
    model, secret, digest = racing
    store = Store(tmp_path / "store")
    events = FileEvents(mode=mode, expected=SwapOnLookup(model, secret))
    import_gguf(store, "raced", model, events=events)
    assert events.expected.swapped and model.is_symlink()
    [layer] = store.read_manifest("raced").layers_of(LayerType.MODEL)
    assert str(layer.digest) == digest
    secret_digest = "sha256:" + hashlib.sha256(SECRET).hexdigest()
    assert secret_digest not in _stored_digests(store)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
def test_a_swap_refuses_a_link_rather_than_link_another_file(tmp_path, racing):
    model, secret, _ = racing
    store = Store(tmp_path / "store")
    events = FileEvents(mode="link", expected=SwapOnLookup(model, secret))
    with pytest.raises(NotLinkableError, match="changed while it was added"):
        import_gguf(store, "raced", model, events=events)
    assert _stored_digests(store) == set() and not store.exists("raced")


def test_an_unraced_link_is_still_a_link(tmp_path, racing):
    model, _, digest = racing
    store = Store(tmp_path / "store")
    import_gguf(store, "linked", model, events=FileEvents(mode="link"))
    [layer] = store.read_manifest("linked").layers_of(LayerType.MODEL)
    assert str(layer.digest) == digest
    assert store.blobs.path(layer.digest).stat().st_ino == model.stat().st_ino


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reflinks are Linux's FICLONE")
def test_a_clone_is_made_private_whatever_the_umask(tmp_path, monkeypatch, tiny_model_path):
    """The clone's temp file has mode 0600 from the start (no file system here may clone, so
    the ioctl notes the mode of the file it was given and says it cannot)."""
    import fcntl

    modes: list[int] = []

    def clone(fd: int, request: int, source: int) -> None:
        modes.append(stat.S_IMODE(os.fstat(fd).st_mode))
        raise OSError(errno.EOPNOTSUPP, "this file system cannot clone")

    monkeypatch.setattr(fcntl, "ioctl", clone)
    old = os.umask(0o022)
    try:
        assert reflink(tiny_model_path, tmp_path) is None
    finally:
        os.umask(old)
    assert modes == [0o600]
    assert list(tmp_path.iterdir()) == []  # the temp file is gone
