"""The sampling a model's authors recommend (GGUF ``general.sampling.*``), for every model.

Models imported since it is recorded carry it in their config; for older ones it is read
from the weights file's header once (off the event loop) and remembered per file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from localllm.daemon.inference.resolve import ResolvedModel
from localllm.model_registry.errors import GGUFError
from localllm.model_registry.gguf_info import read_gguf_info

__all__ = ["RecommendedSampling"]


class RecommendedSampling:
    def __init__(self) -> None:
        self._by_path: dict[str, Mapping[str, object]] = {}

    async def of(self, model: ResolvedModel) -> Mapping[str, object]:
        """Option name -> value; empty when the model recommends nothing."""
        if model.recommended_sampling is not None:
            return model.recommended_sampling
        path = model.target.model_paths[0]
        if path not in self._by_path:
            self._by_path[path] = await asyncio.to_thread(_read, path)
        return self._by_path[path]


def _read(path: str) -> Mapping[str, object]:
    try:
        return read_gguf_info(path).sampling
    except (OSError, GGUFError):
        return {}  # the runner will say what is wrong with the file when it loads it
