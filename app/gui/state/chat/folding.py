"""Very long messages are folded in the transcript: their first lines, then "Show all".

A pasted log or a long reply from the history would otherwise push the rest of the chat
screens away. Lines are counted in the text as written; a single very long line counts as the
lines it would take at about ``_LINE_CHARS`` characters each.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FOLD_LINES", "Fold", "fold"]

FOLD_LINES = 40  # a message longer than this is folded...
_SHOWN_LINES = 30  # ...to its first this many lines
_LINE_CHARS = 120


@dataclass(frozen=True, slots=True)
class Fold:
    shown: str  # the text to draw
    hidden_lines: int  # how many lines "Show all" adds; 0 when nothing is folded

    @property
    def folded(self) -> bool:
        return self.hidden_lines > 0


def _height(line: str) -> int:
    return max(1, -(-len(line) // _LINE_CHARS))


def fold(text: str, limit: int = FOLD_LINES, keep: int = _SHOWN_LINES) -> Fold:
    lines = text.split("\n")
    total = sum(_height(line) for line in lines)
    if total <= limit:
        return Fold(text, 0)
    shown, height = [], 0
    for line in lines:
        if height + _height(line) > keep:
            room = (keep - height) * _LINE_CHARS
            if room > 0:
                shown.append(line[:room] + "…")
                height = keep
            break
        shown.append(line)
        height += _height(line)
    return Fold("\n".join(shown).rstrip(), total - height)
