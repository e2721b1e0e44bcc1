"""Sections to overlapping passages that remember where they came from (page, lines and
characters), so a citation can point at them and show them.

Passages end at line boundaries when they can; a line longer than a passage is cut. Each
passage overlaps the one before by about ``overlap`` characters of whole lines, so a sentence
cut at a boundary is whole in one of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from localllm.app.documents.parsing import Section

__all__ = ["Chunk", "chunk_sections"]

CHUNK_CHARS = 900
OVERLAP_CHARS = 150


@dataclass(frozen=True, slots=True)
class Chunk:
    text: str
    page: int | None
    line_start: int  # 1-based, within the page for a PDF
    line_end: int
    char_start: int  # offsets into the section's text
    char_end: int


@dataclass(frozen=True, slots=True)
class _Piece:
    line: int
    start: int
    end: int


def chunk_sections(
    sections: Iterable[Section], size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS
) -> list[Chunk]:
    if not 0 <= overlap < size:
        raise ValueError("overlap must be at least 0 and smaller than the chunk size")
    chunks: list[Chunk] = []
    for section in sections:
        chunks.extend(_chunk(section, size, overlap))
    return chunks


def _pieces(text: str, size: int) -> list[_Piece]:
    """Each line (without its newline) as one piece, or several when it is longer than
    ``size``; blank lines are left out."""
    pieces, offset = [], 0
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            for start in range(0, len(line), size):
                pieces.append(_Piece(number, offset + start, offset + min(start + size, len(line))))
        offset += len(line) + 1
    return pieces


def _chunk(section: Section, size: int, overlap: int) -> list[Chunk]:
    pieces = _pieces(section.text, size)
    chunks, first = [], 0
    while first < len(pieces):
        last = first
        while last + 1 < len(pieces) and pieces[last + 1].end - pieces[first].start <= size:
            last += 1
        chunks.append(_make(section, pieces[first], pieces[last]))
        if last + 1 >= len(pieces):
            break
        first = _overlap_start(pieces, first, last, overlap)
    return chunks


def _overlap_start(pieces: list[_Piece], first: int, last: int, overlap: int) -> int:
    """Where the next passage starts: the earliest of this one's trailing pieces that fit in
    ``overlap`` characters, and always after ``first`` so the walk moves on."""
    start, index = last + 1, last
    while index > first and pieces[last].end - pieces[index].start <= overlap:
        start, index = index, index - 1
    return start


def _make(section: Section, first: _Piece, last: _Piece) -> Chunk:
    text = section.text[first.start : last.end]
    return Chunk(text, section.page, first.line, last.line, first.start, last.end)
