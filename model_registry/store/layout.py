"""Where things live inside a store directory, and the only code that builds those paths.

Every path is built from a validated :class:`Digest` or :class:`ModelName`, and checked once
more to lie inside the store before it is returned.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import InvalidDigestError, InvalidNameError
from localllm.model_registry.names import ModelName

__all__ = ["PARTIAL_STATE_SUFFIX", "PARTIAL_SUFFIX", "StoreLayout"]

PARTIAL_SUFFIX = ".partial"
PARTIAL_STATE_SUFFIX = ".partial.json"


@dataclass(frozen=True, slots=True)
class StoreLayout:
    root: Path

    @property
    def blobs_dir(self) -> Path:
        return self.root / "blobs"

    @property
    def manifests_dir(self) -> Path:
        return self.root / "manifests"

    @property
    def folders_dir(self) -> Path:
        """Transcription models' folders: their blobs under their own file names."""
        return self.root / "folders"

    @property
    def leases_dir(self) -> Path:
        return self.root / "leases"

    @property
    def imports_memo_path(self) -> Path:
        """Files added from other apps' folders: path, size, mtime -> digest."""
        return self.root / "imports.json"

    @property
    def lock_path(self) -> Path:
        return self.root / ".lock"

    def blob_path(self, digest: Digest | str) -> Path:
        return self._inside(self.blobs_dir, Digest.parse(digest).filename)

    def partial_path(self, digest: Digest | str) -> Path:
        """Where a download in progress keeps its bytes (never pruned)."""
        return self._inside(self.blobs_dir, Digest.parse(digest).filename + PARTIAL_SUFFIX)

    def partial_state_path(self, digest: Digest | str) -> Path:
        """The progress sidecar that lets a download resume after the process was killed."""
        return self._inside(self.blobs_dir, Digest.parse(digest).filename + PARTIAL_STATE_SUFFIX)

    def folder_path(self, model_id: Digest | str) -> Path:
        """The folder of the model whose id (its manifest's digest) is ``model_id``."""
        return self._inside(self.folders_dir, Digest.parse(model_id).filename)

    def manifest_path(self, name: ModelName) -> Path:
        if not isinstance(name, ModelName):
            raise InvalidNameError("a manifest path needs a parsed model name")
        return self._inside(self.manifests_dir, *name.path_parts)

    def _inside(self, base: Path, *parts: str) -> Path:
        path = base.joinpath(*parts)
        resolved_base = base.resolve()
        if not path.resolve().is_relative_to(resolved_base) or path.resolve() == resolved_base:
            # Unreachable with validated parts; kept as a second line of defence.
            raise InvalidDigestError("path escapes the model store")
        return path
