"""The model store: the one place that reads and writes models.

Writes follow one rule: blobs first, manifest last (atomically), and deletes the other way
round: manifest first, then only blobs nothing else refers to. An interruption at any point
therefore leaves every listed model complete; at worst it leaves an unreferenced blob that
``prune`` reclaims later.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import (
    BlobNotFoundError,
    CorruptManifestError,
    ModelExistsError,
    ModelKindError,
    ModelNotFoundError,
    RegistryError,
)
from localllm.model_registry.names import ModelName, parse_name
from localllm.model_registry.store.atomic import TEMP_PREFIX, atomic_write_bytes
from localllm.model_registry.store.blobs import BlobStore
from localllm.model_registry.store.folders import ModelFolders
from localllm.model_registry.store.layout import StoreLayout
from localllm.model_registry.store.locking import Lease, Leases, StoreLock
from localllm.model_registry.store.manifests import LayerType, Manifest

__all__ = ["ModelEntry", "PruneReport", "RemoveReport", "Store", "VerifyReport"]

DEFAULT_PRUNE_GRACE_SECONDS = 3600.0
_FOLDER_KINDS = {
    LayerType.CT2: "a transcription model (Whisper in CTranslate2 form)",
    LayerType.VOICE: "a voice (Piper's .onnx and .onnx.json)",
}


@dataclass(frozen=True, slots=True)
class ModelEntry:
    name: ModelName
    model_id: Digest
    size: int
    modified: float
    manifest: Manifest


@dataclass(frozen=True, slots=True)
class RemoveReport:
    name: ModelName
    deleted_blobs: tuple[Digest, ...]
    freed_bytes: int
    kept_blobs: tuple[Digest, ...]


@dataclass(frozen=True, slots=True)
class PruneReport:
    deleted_blobs: tuple[Digest, ...]
    freed_bytes: int
    skipped_reason: str | None = None


@dataclass(frozen=True, slots=True)
class VerifyReport:
    checked: int
    corrupt: dict[Digest, tuple[ModelName, ...]] = field(default_factory=dict)
    missing: dict[Digest, tuple[ModelName, ...]] = field(default_factory=dict)
    unreadable_manifests: tuple[ModelName, ...] = ()

    @property
    def ok(self) -> bool:
        return not (self.corrupt or self.missing or self.unreadable_manifests)


class Store:
    """A content-addressed model store rooted at one directory."""

    def __init__(self, root: Path | str, lock_timeout: float = 60.0):
        self.layout = StoreLayout(Path(root).expanduser().absolute())
        for directory in (self.layout.blobs_dir, self.layout.manifests_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self.lock = StoreLock(self.layout.lock_path, timeout=lock_timeout)
        self.blobs = BlobStore(self.layout, self.lock)
        self.folders = ModelFolders(self.layout, self.lock, self.blobs)
        self._leases = Leases(self.layout.leases_dir)

    @property
    def root(self) -> Path:
        return self.layout.root

    # -- leases -----------------------------------------------------------------------------
    def lease(self, digests: Iterable[Digest] = ()) -> contextlib.AbstractContextManager[Lease]:
        """Keep blobs safe from garbage collection while an operation builds a manifest.

        The yielded :class:`Lease` grows with ``lease.add(digest)``; pass ``lease.add`` as the
        ``on_hashed`` callback of a blob write so the blob is leased before it is committed.
        """
        return self._leases.hold(digests)

    # -- manifests --------------------------------------------------------------------------
    def write_manifest(self, name: ModelName | str, manifest: Manifest) -> Digest:
        """Commit a model: every blob must already be in the store. Returns the model id."""
        name = _name(name)
        path = self.layout.manifest_path(name)
        with self.lock.held():
            for digest in manifest.digests:
                if not self.blobs.exists(digest):
                    raise BlobNotFoundError(
                        f"cannot write {name.display}: blob {digest.short} is not in the store"
                    )
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, manifest.to_bytes())
        return manifest.model_id

    def read_manifest(self, name: ModelName | str) -> Manifest:
        name = _name(name)
        try:
            raw = self.layout.manifest_path(name).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ModelNotFoundError(f"model {name.display!r} not found") from None
        try:
            return Manifest.from_bytes(raw)
        except CorruptManifestError as error:
            raise CorruptManifestError(f"model {name.display!r}: {error}") from None

    def exists(self, name: ModelName | str) -> bool:
        return self.layout.manifest_path(_name(name)).is_file()

    def read_config(self, manifest: Manifest) -> dict[str, object]:
        return _json_object(self.blobs.path(manifest.config.digest).read_bytes())

    def read_text_layer(self, manifest: Manifest, media_type: LayerType) -> str | None:
        """The last layer of a text type (template, system, license joined), or None."""
        layers = manifest.layers_of(media_type)
        if not layers:
            return None
        texts = [self.blobs.path(layer.digest).read_text(encoding="utf-8") for layer in layers]
        return "\n".join(texts) if media_type is LayerType.LICENSE else texts[-1]

    def read_json_layer(self, manifest: Manifest, media_type: LayerType) -> object:
        layers = manifest.layers_of(media_type)
        if not layers:
            return None
        return json.loads(self.blobs.path(layers[-1].digest).read_bytes())

    def model_folder(self, name: ModelName | str, kind: LayerType = LayerType.CT2) -> Path:
        """The folder a transcription model's runner reads (``kind`` CT2), or a voice's
        (VOICE): its files under their own names (hard links to its blobs), made on first use
        and again if it was damaged.

        :class:`ModelNotFoundError` for no such model, :class:`ModelKindError` for a model
        that is not of that kind (``Manifest.is_transcription`` and ``is_voice`` tell first)."""
        name = _name(name)
        manifest = self.read_manifest(name)
        if not manifest.layers_of(kind):
            what = _FOLDER_KINDS.get(kind, f"a model of {kind.short} files")
            raise ModelKindError(f"{name.display} is not {what}")
        return self.folders.folder(manifest)

    # -- operations -------------------------------------------------------------------------
    def list_models(self) -> list[ModelEntry]:
        entries = []
        for name, path in self._manifest_files():
            try:
                raw = path.read_bytes()
                manifest = Manifest.from_bytes(raw)
                modified = path.stat().st_mtime
            except (OSError, CorruptManifestError):
                continue
            entries.append(
                ModelEntry(name, manifest.model_id, manifest.total_size, modified, manifest)
            )
        return sorted(entries, key=lambda entry: entry.modified, reverse=True)

    def copy(
        self, source: ModelName | str, destination: ModelName | str, overwrite: bool = True
    ) -> Digest:
        source, destination = _name(source), _name(destination)
        manifest = self.read_manifest(source)
        if not overwrite and self.exists(destination):
            raise ModelExistsError(f"model {destination.display!r} already exists")
        return self.write_manifest(destination, manifest)

    def remove(self, name: ModelName | str) -> RemoveReport:
        """Delete the manifest, then the blobs that no other model and no lease still use."""
        name = _name(name)
        with self.lock.held():
            manifest = self.read_manifest(name)
            path = self.layout.manifest_path(name)
            path.unlink()
            self._remove_empty_parents(path.parent)
            in_use, models, unreadable = self._in_use()
            if unreadable:
                return RemoveReport(name, (), 0, tuple(sorted(manifest.digests, key=str)))
            self.folders.remove_unused(models)  # first: its links keep a blob's bytes
            doomed = sorted(manifest.digests - in_use, key=str)
            freed = sum(self.blobs.delete(digest) for digest in doomed)
            kept = tuple(sorted(manifest.digests & in_use, key=str))
        return RemoveReport(name, tuple(doomed), freed, kept)

    def prune(self, grace_seconds: float = DEFAULT_PRUNE_GRACE_SECONDS) -> PruneReport:
        """Delete unreferenced blobs older than the grace period. Partial downloads stay."""
        cutoff = time.time() - grace_seconds
        with self.lock.held():
            in_use, models, unreadable = self._in_use()
            if unreadable:
                names = ", ".join(name.display for name in unreadable)
                return PruneReport((), 0, f"unreadable manifests ({names}); run verify first")
            self.folders.remove_unused(models)
            doomed = [
                blob.digest
                for blob in self.blobs.committed()
                if blob.digest not in in_use and blob.mtime < cutoff
            ]
            freed = sum(self.blobs.delete(digest) for digest in doomed)
            for temp in self.blobs.stale_temp_files(cutoff):
                temp.unlink(missing_ok=True)
        return PruneReport(tuple(doomed), freed)

    def verify(self) -> VerifyReport:
        """Re-hash every blob; report corrupt or missing ones with the models they break."""
        users: dict[Digest, list[ModelName]] = {}
        unreadable = []
        for name, path in self._manifest_files():
            try:
                manifest = Manifest.from_bytes(path.read_bytes())
            except (OSError, CorruptManifestError):
                unreadable.append(name)
                continue
            for digest in manifest.digests:
                users.setdefault(digest, []).append(name)
        corrupt, missing, checked = {}, {}, 0
        present = {blob.digest for blob in self.blobs.committed()}
        for digest in sorted(present | users.keys(), key=str):
            models = tuple(users.get(digest, ()))
            if digest not in present:
                missing[digest] = models
                continue
            checked += 1
            if not self.blobs.matches_digest(digest):
                corrupt[digest] = models
        return VerifyReport(checked, corrupt, missing, tuple(unreadable))

    # -- internals --------------------------------------------------------------------------
    def _in_use(self) -> tuple[set[Digest], set[Digest], list[ModelName]]:
        """The blobs models and leases use, the ids of the models, the unreadable manifests."""
        in_use = set(self._leases.leased())
        models: set[Digest] = set()
        unreadable = []
        for name, path in self._manifest_files():
            try:
                manifest = Manifest.from_bytes(path.read_bytes())
            except (OSError, CorruptManifestError):
                unreadable.append(name)
                continue
            in_use |= manifest.digests
            models.add(manifest.model_id)
        return in_use, models, unreadable

    def _manifest_files(self) -> Iterator[tuple[ModelName, Path]]:
        base = self.layout.manifests_dir
        for path in base.glob("*/*/*/*"):
            if not path.is_file() or path.name.startswith(TEMP_PREFIX):
                continue
            try:
                name = ModelName(*path.relative_to(base).parts)
            except (RegistryError, TypeError):
                continue
            yield name, path

    def _remove_empty_parents(self, directory: Path) -> None:
        while directory != self.layout.manifests_dir:
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent


def _name(name: ModelName | str) -> ModelName:
    return name if isinstance(name, ModelName) else parse_name(name)


def _json_object(raw: bytes) -> dict[str, object]:
    try:
        value = json.loads(raw)
    except ValueError:
        raise CorruptManifestError("model config is not valid JSON") from None
    if not isinstance(value, dict):
        raise CorruptManifestError("model config is not a JSON object")
    return value
