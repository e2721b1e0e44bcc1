"""Where other apps keep GGUF models, from the locations the caller was given.

Only these places are scanned: the Hugging Face hub cache, LM Studio's two model folders,
Ollama's store and folders the user named. Nothing here reads the environment; the daemon's
settings decide the locations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ScanRoots"]


@dataclass(frozen=True, slots=True)
class ScanRoots:
    hugging_face: tuple[Path, ...] = ()  # hub caches: models--org--repo/snapshots/...
    lm_studio: tuple[Path, ...] = ()  # publisher/repo/file.gguf
    ollama: tuple[Path, ...] = ()  # manifests/ + blobs/
    folders: tuple[Path, ...] = ()  # named by the user

    @classmethod
    def defaults(
        cls,
        home: Path,
        hf_hub_cache: Path | None = None,
        ollama_models: Path | None = None,
        folders: Sequence[Path] = (),
    ) -> ScanRoots:
        """The usual places under ``home``, each overridden where its app's variable is set
        (``HF_HUB_CACHE`` or ``HF_HOME``/hub, ``OLLAMA_MODELS``), as those apps do."""
        return cls(
            hugging_face=(hf_hub_cache or home / ".cache" / "huggingface" / "hub",),
            lm_studio=(home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"),
            ollama=(ollama_models or home / ".ollama" / "models",),
            folders=tuple(folders),
        )
