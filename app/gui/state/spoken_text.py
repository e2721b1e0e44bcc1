"""An answer as it is read aloud, without Qt: its words without Markdown's marks. A voice that
spells out ``**``, a URL or forty lines of code helps nobody, so code blocks are named, not
read, links and pictures are read as their text, and emphasis, headings, quotes, bullets and
table rules go. The daemon streams its WAV before it knows its length, so the header's sizes
are filled in (``sized_wav``) before it is played or kept.
"""

from __future__ import annotations

import re
import struct

__all__ = ["CODE_BLOCK", "sized_wav", "speakable"]

CODE_BLOCK = "(There is a code block here, in the chat.)"
_FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_INLINE_CODE = re.compile(r"`+([^`]*)`+")
_EMPHASIS = re.compile(r"(\*\*|__|~~|\*)(?=\S)(.+?)(?<=\S)\1")
_LINE_MARK = re.compile(r"^\s{0,3}(?:#{1,6}\s+|>\s?|[-*+]\s+)", re.MULTILINE)
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}.*$", re.MULTILINE)
_BLANK_LINES = re.compile(r"\n{3,}")
_WAV_HEADER = 44  # RIFF, fmt and the data chunk's header, as the daemon writes them


def speakable(markdown: str) -> str:
    text = _FENCE.sub(CODE_BLOCK, markdown)
    text = _LINK.sub(r"\1", text)
    text = _INLINE_CODE.sub(r"\1", text)
    text = _EMPHASIS.sub(r"\2", text)
    text = _LINE_MARK.sub("", text)
    text = _TABLE_RULE.sub("", text)
    text = "\n".join(line.strip(" |").replace(" | ", ", ") for line in text.splitlines())
    return _BLANK_LINES.sub("\n\n", text).strip()


def sized_wav(audio: bytes) -> bytes:
    """A canonical WAV with its RIFF and data sizes said (anything else as it came)."""
    if len(audio) < _WAV_HEADER or audio[:4] != b"RIFF" or audio[36:40] != b"data":
        return audio
    riff = struct.pack("<I", len(audio) - 8)
    data = struct.pack("<I", len(audio) - _WAV_HEADER)
    return audio[:4] + riff + audio[8:40] + data + audio[_WAV_HEADER:]
