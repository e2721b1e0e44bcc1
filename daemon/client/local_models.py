"""The client's calls for models already on this computer (``/api/local-models``,
``/api/import``), kept apart from ``client.py`` so each module stays small."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localllm.daemon.api.local_models import ImportProgress, LocalModelsResponse
from localllm.daemon.client.answers import Answer

__all__ = ["LocalModelCalls"]


class LocalModelCalls:
    """Mixed into ``Client``: uses its ``_answer`` and ``_ndjson``."""

    if TYPE_CHECKING:  # ``Client`` defines them

        def _answer(self, model: type[Answer], method: str, path: str, **kwargs: Any) -> Answer: ...

        def _ndjson(
            self, model: type[Answer], path: str, body: Mapping[str, Any]
        ) -> Iterator[Answer]: ...

    def local_models(self) -> LocalModelsResponse:
        """GGUF models the daemon found in other apps' folders and the folders it was given."""
        return self._answer(LocalModelsResponse, "GET", "/api/local-models")

    def import_file(
        self, path: Path | str, name: str | None = None, mode: str = "auto"
    ) -> Iterator[ImportProgress]:
        """Add a GGUF file on the daemon's machine: ``auto`` links it into the store where the
        file system allows and copies it otherwise; ``link`` never copies; ``copy`` always."""
        body: dict[str, Any] = {"path": str(Path(path).absolute()), "mode": mode, "stream": True}
        if name:
            body["name"] = name
        return self._ndjson(ImportProgress, "/api/import", body)
