"""How ``localllm run`` shows a thinking model's reasoning: apart from the answer, never in it.

As ``ollama run`` does: ``Thinking...``, the thinking as it streams, ``...done thinking.``,
then the answer. On a terminal the thinking is grey; when stdout is not a terminal the thinking
goes to stderr as plain text, so what a script reads on stdout is the answer alone (still valid
JSON with ``--format json``). Hidden (``--hidethinking``), the model still thinks and nothing
of it is printed.
"""

from __future__ import annotations

from typing import TextIO

__all__ = ["CLOSING", "EFFORTS", "OPENING", "THINK_VALUES", "ThinkingOutput", "isatty"]

OPENING, CLOSING = "Thinking...\n", "...done thinking.\n\n"
GREY, BOLD, RESET = "\x1b[38;5;245m", "\x1b[1m", "\x1b[0m"  # Ollama's grey
EFFORTS = ("low", "medium", "high")
#: what ``--think=VALUE`` may say, and what it sends
THINK_VALUES: dict[str, bool | str] = {"true": True, "false": False} | {e: e for e in EFFORTS}


class ThinkingOutput:
    """Writes the thinking pieces of one answer where they belong; :meth:`close` before the
    answer's first piece, :meth:`finish` when the stream ends however it ends."""

    def __init__(self, stream: TextIO | None, styled: bool = False):
        self.stream = stream  # None: hidden
        self.styled = styled
        self._open = False
        self._line_ended = True

    @classmethod
    def choose(cls, out: TextIO, err: TextIO, hidden: bool = False) -> ThinkingOutput:
        """Beside the answer on a terminal, else on stderr; grey where that is a terminal."""
        if hidden:
            return cls(None)
        stream = out if isatty(out) else err
        return cls(stream, isatty(stream))

    @property
    def shown(self) -> bool:
        return self.stream is not None

    def write(self, piece: str) -> None:
        if self.stream is None or not piece:
            return
        if not self._open:
            self._write(GREY + BOLD + OPENING + RESET + GREY if self.styled else OPENING)
            self._open = True
        self._write(piece)
        self._line_ended = piece.endswith("\n")

    def close(self) -> None:
        """The thinking is over and the answer begins."""
        if not self._open:
            return
        ending = "" if self._line_ended else "\n"
        self._write(ending + (GREY + BOLD + CLOSING + RESET if self.styled else CLOSING))
        self._open = False

    def finish(self) -> None:
        """The stream ended (cut off, or Ctrl-C) while thinking: end the line and leave the
        terminal's colours as they were, without claiming the thinking was done."""
        if not self._open:
            return
        self._write((RESET if self.styled else "") + ("" if self._line_ended else "\n"))
        self._open = False

    def _write(self, text: str) -> None:
        assert self.stream is not None
        self.stream.write(text)
        self.stream.flush()


def isatty(stream: TextIO | None) -> bool:
    """Whether ``stream`` is a terminal; no stream, a closed one or one without ``isatty`` (a
    stand-in some embedders set) is not."""
    if stream is None:
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
