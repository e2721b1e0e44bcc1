"""Splitting a model's streamed output into thinking and answer, markers taken out.

Text arrives in pieces that can end anywhere, in the middle of a marker too, so a piece that
could be the start of a marker is held back until the next piece says what it is: no part of a
marker ever reaches the thinking or the answer. ``feed`` returns ``(thinking, answer)`` text
that is safe to send now; ``finish`` what is left at the end; ``end_thinking`` closes the
thinking early (a thinking budget ran out: the answer part follows).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from localllm.daemon.inference.thinking import HARMONY, ThinkingFormat

__all__ = ["HarmonySplitter", "Split", "TagSplitter", "splitter_for"]

Split = tuple[str, str]  # (thinking, answer)


def splitter_for(fmt: ThinkingFormat, opened: bool) -> TagSplitter | HarmonySplitter:
    """The splitter for ``fmt``; ``opened``: the output starts inside the thinking."""
    if fmt.name == HARMONY.name:
        return HarmonySplitter(opened)
    return TagSplitter(fmt.opening, fmt.closing, opened)


def _cut(text: str, markers: Sequence[str]) -> tuple[str, str | None, str]:
    """(text before the first marker, the marker, the rest); with no marker, the rest is the
    longest tail of ``text`` that could be the start of one (held back)."""
    found = [(i, m) for m in markers if (i := text.find(m)) >= 0]
    if found:
        index, marker = min(found)
        return text[:index], marker, text[index + len(marker) :]
    keep = 0
    for marker in markers:
        for size in range(min(len(marker) - 1, len(text)), keep, -1):
            if text.endswith(marker[:size]):
                keep = size
                break
    return text[: len(text) - keep], None, text[len(text) - keep :]


class _Output:
    """Collects one call's thinking and answer pieces."""

    def __init__(self) -> None:
        self.thinking: list[str] = []
        self.answer: list[str] = []

    def split(self) -> Split:
        return "".join(self.thinking), "".join(self.answer)


class TagSplitter:
    """``<think>...</think>`` and ``[THINK]...[/THINK]``. Whitespace around the thinking and
    before the answer is dropped, as the models write ``<think>\\n...\\n</think>\\n\\n``. A stray
    marker (a second opening, a closing with nothing open) is dropped too."""

    def __init__(self, opening: str, closing: str, opened: bool):
        self._opening, self._closing = opening, closing
        self.in_thinking = opened
        self._held = ""  # may be the start of a marker
        self._space = ""  # the thinking's trailing whitespace, sent only if text follows
        self._fresh = True  # nothing sent yet in this part: leading whitespace is dropped

    def feed(self, text: str) -> Split:
        out = _Output()
        self._held += text
        while True:
            before, marker, self._held = _cut(self._held, (self._opening, self._closing))
            self._send(before, out)
            if marker is None:
                return out.split()
            self._switch(marker == self._opening)

    def end_thinking(self) -> Split:
        out = _Output()
        if self.in_thinking:
            held, self._held = self._held, ""
            self._send(held, out)
            self._switch(False)
        return out.split()

    def finish(self) -> Split:
        out = _Output()
        held, self._held = self._held, ""
        self._send(held, out)
        return out.split()

    def _send(self, text: str, out: _Output) -> None:
        if self._fresh:
            text = text.lstrip()
        if not text:
            return
        self._fresh = False
        if not self.in_thinking:
            out.answer.append(text)
            return
        text = self._space + text
        body = text.rstrip()
        self._space = text[len(body) :]
        if body:
            out.thinking.append(body)

    def _switch(self, thinking: bool) -> None:
        if thinking == self.in_thinking:
            return  # a stray marker
        self.in_thinking, self._space, self._fresh = thinking, "", True


_HARMONY_MARKERS = (
    "<|start|>",
    "<|end|>",
    "<|channel|>",
    "<|message|>",
    "<|constrain|>",
    "<|return|>",
    "<|call|>",
)
_MESSAGE_ENDS = ("<|end|>", "<|return|>", "<|call|>")
_MAX_HEADER = 1024  # characters of a message header kept ("<|channel|>commentary to=...")
_RECIPIENT = re.compile(r"to=functions\.([^\s<]+)")


class HarmonySplitter:
    """gpt-oss's channels: ``analysis`` is thinking; ``final`` and ``commentary`` are answer;
    a commentary message to ``functions.NAME`` becomes a ``<tool_call>`` block in the answer,
    for the tool-call parser."""

    def __init__(self, opened: bool):
        self._held = ""
        self._header: list[str] | None = None  # collecting a message header
        self._header_size = 0
        self._channel: str | None = "analysis" if opened else None  # in a message body
        self._in_call = False

    @property
    def in_thinking(self) -> bool:
        return self._channel == "analysis"

    def feed(self, text: str) -> Split:
        out = _Output()
        self._held += text
        while True:
            before, marker, self._held = _cut(self._held, _HARMONY_MARKERS)
            self._text(before, out)
            if marker is None:
                return out.split()
            self._marker(marker, out)

    def end_thinking(self) -> Split:
        out = _Output()
        if self.in_thinking:
            held, self._held = self._held, ""
            self._text(held, out)
            self._channel = "final"
        return out.split()

    def finish(self) -> Split:
        out = _Output()
        held, self._held = self._held, ""
        if self._header is None:
            self._text(held, out)
        self._end_message(out)
        return out.split()

    def _add_to_header(self, text: str) -> None:
        """Keep the header's first ``_MAX_HEADER`` characters: what names the channel and the
        recipient; a model that never ends its header cannot grow it without bound."""
        if self._header is not None and self._header_size < _MAX_HEADER:
            self._header.append(text[: _MAX_HEADER - self._header_size])
            self._header_size += len(self._header[-1])

    def _start_header(self, marker: str) -> None:
        self._header, self._header_size = [], 0
        self._add_to_header(marker)

    def _text(self, text: str, out: _Output) -> None:
        if self._header is not None:
            self._add_to_header(text)
        elif self._channel == "analysis":
            out.thinking.append(text)
        elif self._channel is not None:
            out.answer.append(text)
        elif text.strip():  # text outside any message: the model skipped the header
            self._channel = "final"
            out.answer.append(text.lstrip())

    def _marker(self, marker: str, out: _Output) -> None:
        if marker in ("<|start|>", "<|channel|>") and self._header is None:
            self._end_message(out)
            self._start_header(marker)
        elif marker in _MESSAGE_ENDS:
            self._end_message(out)
            self._header = None
        elif self._header is not None and marker == "<|message|>":
            self._open_message("".join(self._header), out)
        elif self._header is not None:
            self._add_to_header(marker)  # <|channel|> or <|constrain|> inside a header

    def _open_message(self, header: str, out: _Output) -> None:
        self._header = None
        words = header.partition("<|channel|>")[2].replace("<|", " ").split()
        self._channel = words[0] if words else "final"
        recipient = _RECIPIENT.search(header)
        if recipient is not None and self._channel != "analysis":
            self._in_call = True
            out.answer.append(f'<tool_call>{{"name": {json.dumps(recipient[1])}, "arguments": ')

    def _end_message(self, out: _Output) -> None:
        if self._in_call:
            out.answer.append("}</tool_call>")
            self._in_call = False
        self._channel = None
