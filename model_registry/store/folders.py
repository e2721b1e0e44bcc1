"""Model folders (transcription models' and voices'): ``folders/sha256-<model id>/<name>``.

Whisper's and Piper's runners read a folder of named files; the store keeps content-addressed
blobs. A model's folder is made on first use from hard links to its blobs (no second copy of the
bytes; a copy-on-write clone, else a copy, only where the file system has no links), built
under a temp name and renamed into place, so a reader finds no folder or a complete one. It
is checked each time it is asked for and made again when a file is missing, extra, replaced
or changed. ``rm`` and ``prune`` delete the folders no model uses any more: their links
would otherwise keep a deleted blob's space taken.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import InvalidDigestError, ModelKindError
from localllm.model_registry.store.atomic import TEMP_PREFIX, fsync_directory, temp_file_owner
from localllm.model_registry.store.blobs import BlobStore, ensure_free_space
from localllm.model_registry.store.layout import StoreLayout
from localllm.model_registry.store.locking import StoreLock, process_alive
from localllm.model_registry.store.manifests import Layer, Manifest
from localllm.model_registry.store.placing import hard_link, reflink

__all__ = ["ModelFolders"]


class ModelFolders:
    def __init__(self, layout: StoreLayout, lock: StoreLock, blobs: BlobStore):
        self._layout, self._lock, self._blobs = layout, lock, blobs

    def folder(self, manifest: Manifest) -> Path:
        """The folder of ``manifest``'s files under their names, made (again) if need be.

        :class:`ModelKindError` for a model without such files (a GGUF model),
        :class:`BlobNotFoundError` where a blob it needs is gone (``localllm verify``)."""
        layers = manifest.folder_layers
        if not layers:
            raise ModelKindError(
                "this model is not a transcription model or a voice: it has no folder"
            )
        path = self._layout.folder_path(manifest.model_id)
        if self._intact(path, layers):
            return path
        with self._lock.held():
            if not self._intact(path, layers):  # another process may have made it meanwhile
                self._replace(path, self._build(layers))
        return path

    def remove_unused(self, model_ids: set[Digest]) -> int:
        """Delete the folders of models not in ``model_ids``, and builds that were killed
        halfway; the caller holds the store lock. Returns how many were deleted."""
        removed = 0
        for entry in self._entries():
            if self._unused(entry.name, model_ids):
                _delete(entry)
                removed += 1
        return removed

    # -- checking ---------------------------------------------------------------------------
    def _intact(self, path: Path, layers: Sequence[Layer]) -> bool:
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return False
            names = {entry.name for entry in os.scandir(path)}
        except OSError:
            return False
        if names != {layer.file_name for layer in layers}:
            return False
        return all(self._file_intact(path / str(layer.file_name), layer) for layer in layers)

    def _file_intact(self, path: Path, layer: Layer) -> bool:
        """The blob itself (a hard link), or a copy of it that nothing has touched since: a
        copy keeps its blob's modification time, and a write changes it."""
        try:
            here, blob = os.lstat(path), os.stat(self._layout.blob_path(layer.digest))
        except OSError:
            return False
        if not stat.S_ISREG(here.st_mode) or here.st_size != layer.size:
            return False
        linked = (here.st_dev, here.st_ino) == (blob.st_dev, blob.st_ino)
        return linked or (here.st_mtime_ns == blob.st_mtime_ns and blob.st_size == layer.size)

    def _unused(self, name: str, model_ids: set[Digest]) -> bool:
        if name.startswith(TEMP_PREFIX):
            owner = temp_file_owner(name)
            return owner is None or not process_alive(owner) or owner == os.getpid()
        try:
            return Digest.parse(name) not in model_ids
        except InvalidDigestError:
            return False  # not ours: left alone

    def _entries(self) -> list[Path]:
        try:
            return list(self._layout.folders_dir.iterdir())
        except OSError:
            return []

    # -- making -----------------------------------------------------------------------------
    def _build(self, layers: Sequence[Layer]) -> Path:
        """A complete new folder under a temp name; the caller renames it into place."""
        self._layout.folders_dir.mkdir(parents=True, exist_ok=True)
        temp = self._temp_name()
        temp.mkdir(mode=0o700)
        try:
            for layer in layers:
                self._place(self._blobs.path(layer.digest), temp / str(layer.file_name))
            fsync_directory(temp)
        except BaseException:
            shutil.rmtree(temp, ignore_errors=True)
            raise
        return temp

    @staticmethod
    def _place(blob: Path, target: Path) -> None:
        """``target`` as a hard link to ``blob``, else a clone of it, else a copy."""
        shared = hard_link(blob, target.parent) or reflink(blob, target.parent)
        if shared is not None:
            os.replace(shared, target)
            if not os.path.samestat(os.stat(target), os.stat(blob)):
                shutil.copystat(blob, target)  # a clone: keep the blob's time, as a copy does
            return
        ensure_free_space(target.parent, blob.stat().st_size, "a model's folder")
        shutil.copy2(blob, target)

    def _replace(self, path: Path, fresh: Path) -> None:
        """Put ``fresh`` where ``path`` is: the damaged folder is moved aside, then deleted."""
        old = None
        if os.path.lexists(path):
            old = self._temp_name()
            os.rename(path, old)
        os.rename(fresh, path)
        fsync_directory(self._layout.folders_dir)
        if old is not None:
            _delete(old)

    def _temp_name(self) -> Path:
        return self._layout.folders_dir / f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(8)}"


def _delete(path: Path) -> None:
    """A folder and its links (never what a link leads to), or a stray file."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
