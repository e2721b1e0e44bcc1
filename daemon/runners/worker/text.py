"""Turn a sequence's token bytes into text events: whole UTF-8 characters, never a stop string.

Tokens can end in the middle of a multi-byte character, and a stop string can span tokens, so
text is held back until it is known to be complete and not the start of a stop string.
"""

from __future__ import annotations

import codecs
from collections.abc import Sequence

__all__ = ["TextStream"]


class TextStream:
    def __init__(self, stops: Sequence[str] = ()):
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._stops = tuple(s for s in stops if s)
        self._held = ""
        self.matched: str | None = None  # the stop string that ended the text, once one has

    @property
    def stopped(self) -> bool:
        return self.matched is not None

    def push(self, data: bytes) -> str:
        """Text that is now safe to emit; sets :attr:`matched` when a stop string appears."""
        text = self._decoder.decode(data)
        if not self._stops:
            return text
        text = self._held + text
        found = [(i, stop) for stop in self._stops if (i := text.find(stop)) >= 0]
        if found:
            cut, self.matched = min(found)
            self._held = ""
            return text[:cut]
        keep = self._partial_stop(text)
        self._held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        """Everything still held back, at the end of generation (no stop string came)."""
        text = self._held + self._decoder.decode(b"", final=True)
        self._held = ""
        return text

    def _partial_stop(self, text: str) -> int:
        """Length of the longest tail of ``text`` that begins some stop string."""
        best = 0
        for stop in self._stops:
            for k in range(min(len(stop) - 1, len(text)), best, -1):
                if text.endswith(stop[:k]):
                    best = k
                    break
        return best
