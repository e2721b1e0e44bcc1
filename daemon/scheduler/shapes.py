"""Model shapes for memory plans, each file's header read once, in a worker thread.

A header is small but not free to read (a 262k-token vocabulary is skipped string by string),
so the loader never reads one on the event loop, and reads each file once: a store's blobs
never change (a re-pulled model is another blob), and a file outside the store is read again
when its size or modification time changes. The cache holds a bounded number of shapes.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence

from localllm.model_registry.errors import GGUFError
from localllm.model_registry.model_shape import ModelShape, read_model_shape

__all__ = ["ModelShapes"]

MOST_SHAPES = 64


class ModelShapes:
    def __init__(self, most: int = MOST_SHAPES):
        self._most = most
        self._cache: OrderedDict[tuple[tuple[str, int, int], ...], ModelShape] = OrderedDict()
        self._lock = threading.Lock()
        self.reads = 0  # headers parsed (what the cache saves)

    async def get(self, paths: Sequence[str]) -> ModelShape | None:
        """The shape of the model in ``paths`` (its shards in order); None where a file
        cannot be read as a GGUF (the plan then falls back on the store's summary)."""
        if not paths:
            return None
        return await asyncio.to_thread(self._get, tuple(paths))

    def _get(self, paths: tuple[str, ...]) -> ModelShape | None:
        try:
            key = tuple(_identity(path) for path in paths)
        except OSError:
            return None
        with self._lock:
            shape = self._cache.get(key)
            if shape is not None:
                self._cache.move_to_end(key)
                return shape
        try:
            shape = read_model_shape(paths)
        except (OSError, GGUFError):
            return None
        with self._lock:
            self.reads += 1
            self._cache[key] = shape
            while len(self._cache) > self._most:
                self._cache.popitem(last=False)
        return shape


def _identity(path: str) -> tuple[str, int, int]:
    stat = os.stat(path)
    return path, stat.st_size, stat.st_mtime_ns
