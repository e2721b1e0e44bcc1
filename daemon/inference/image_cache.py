"""Images already prepared, so a chat does not re-read them every turn.

Clients resend a conversation's images with every new message; reading, turning and
re-encoding a large photo costs up to a second of CPU. The daemon keeps the PNGs it made,
keyed by the sha256 of the bytes the client sent, within a byte budget: the least recently
used go first. Hashing an image costs a few milliseconds.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["ImageCache"]

DEFAULT_BUDGET = 64 << 20  # bytes of prepared PNGs kept


class ImageCache:
    """Prepared PNGs by the sha256 of their source; safe to use from several threads."""

    def __init__(self, budget: int = DEFAULT_BUDGET):
        self.budget = budget
        self._entries: OrderedDict[bytes, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def prepared(self, source: bytes, prepare: Callable[[bytes], bytes]) -> bytes:
        """``prepare(source)``, or what it gave for the same bytes before. Failures (a
        image that cannot be read) are not kept: they raise every time."""
        key = hashlib.sha256(source).digest()
        with self._lock:
            if (png := self._entries.get(key)) is not None:
                self._entries.move_to_end(key)
                return png
        png = prepare(source)  # outside the lock: other images need not wait
        self._keep(key, png)
        return png

    def _keep(self, key: bytes, png: bytes) -> None:
        if len(png) > self.budget:
            return
        with self._lock:
            if key not in self._entries:
                self._entries[key] = png
                self._size += len(png)
            while self._size > self.budget:
                _, dropped = self._entries.popitem(last=False)
                self._size -= len(dropped)
