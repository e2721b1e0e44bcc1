"""A long text cut into pieces the voice speaks one after another.

Piper phonemizes all it is given before it speaks the first sentence, and speaks a sentence
in one go however long it is: a book in one call would start late and could make minutes of
audio in one array. So the text goes to the voice a paragraph at a time, and a paragraph
longer than ``limit`` characters is cut where a sentence ends, else after a comma, else at a
space (a text with none is cut anyway): speech starts after one piece, and no piece's audio
is larger than a few seconds' worth per hundred characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["PIECE_CHARACTERS", "pieces"]

PIECE_CHARACTERS = 600
_PARAGRAPHS = re.compile(r"\n\s*\n")
# where to cut, best first: after a sentence's end (a space after it, except in Chinese or
# Japanese, which write none), after a clause's, at any space
_CUTS = (
    re.compile(r"[.!?;:\u2026]['\"\u201d\u2019)\]]*\s|[\u3002\uff01\uff1f]"),
    re.compile(r"[,\uff0c\u3001]\s?"),
    re.compile(r"\s"),
)


def pieces(text: str, limit: int = PIECE_CHARACTERS) -> Iterator[str]:
    """``text`` in order, in pieces of at most ``limit`` characters; blank ones left out."""
    for paragraph in _PARAGRAPHS.split(text):
        rest = paragraph.strip()
        while len(rest) > limit:
            cut = _cut(rest, limit)
            head, rest = rest[:cut].strip(), rest[cut:].strip()
            if head:
                yield head
        if rest:
            yield rest


def _cut(text: str, limit: int) -> int:
    """Where to end the first piece of ``text``: the last good place in its first ``limit``
    characters, but not in the first half of them (so pieces stay long)."""
    window = text[: limit + 1]
    for pattern in _CUTS:
        ends = [match.end() for match in pattern.finditer(window) if match.end() > limit // 2]
        if ends:
            return min(ends[-1], limit)
    return limit
