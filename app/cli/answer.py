"""Writing a model's streamed answer as it arrives, and the ``--verbose`` timing report.

Shared by one-shot ``localllm run`` and the interactive chat, so both print the same way.
The stream is closed on the way out whatever happens, which drops the connection and so stops
the generation on the daemon (Ctrl-C really stops the model, not just the printing).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TextIO

from app.cli.formatting import format_duration
from app.cli.progress import Spinner
from daemon.api import ChatChunk, GenerateChunk

__all__ = ["Answer", "stream_answer", "timing_lines"]


@dataclass
class Answer:
    text: str
    final: ChatChunk | GenerateChunk | None  # the last chunk (``done: true``) with the timings


def stream_answer(chunks: Iterable[ChatChunk | GenerateChunk], out: TextIO) -> Answer:
    """Print each piece of ``/api/chat`` or ``/api/generate`` output as it comes (on a
    terminal, a spinner stands in until the first piece)."""
    pieces: list[str] = []
    final: ChatChunk | GenerateChunk | None = None
    spinner = Spinner(out).start() if _isatty(out) else None
    try:
        for chunk in chunks:
            piece = _content(chunk)
            if piece and spinner is not None:
                spinner.stop()
                spinner = None
            if piece:
                out.write(piece)
                out.flush()
                pieces.append(piece)
            if chunk.done:
                final = chunk
    finally:
        if spinner is not None:
            spinner.stop()
        if isinstance(chunks, Iterator) and hasattr(chunks, "close"):
            chunks.close()
    return Answer("".join(pieces), final)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _content(chunk: ChatChunk | GenerateChunk) -> str:
    return chunk.message.content if isinstance(chunk, ChatChunk) else chunk.response


def timing_lines(final: ChatChunk | GenerateChunk) -> list[str]:
    """What ``ollama run --verbose`` prints after an answer (durations come in nanoseconds)."""
    rows = [
        ("total duration", format_duration(final.total_duration)),
        ("load duration", format_duration(final.load_duration)),
        ("prompt eval count", _tokens(final.prompt_eval_count)),
        ("prompt eval duration", format_duration(final.prompt_eval_duration)),
        ("prompt eval rate", _rate(final.prompt_eval_count, final.prompt_eval_duration)),
        ("eval count", _tokens(final.eval_count)),
        ("eval duration", format_duration(final.eval_duration)),
        ("eval rate", _rate(final.eval_count, final.eval_duration)),
    ]
    return [f"{label + ':':<22}{value}" for label, value in rows]


def _tokens(count: int | None) -> str:
    return "-" if count is None else f"{count} token(s)"


def _rate(count: int | None, nanoseconds: int | None) -> str:
    if count is None or nanoseconds is None or nanoseconds <= 0:
        return "-"
    return f"{count / (nanoseconds / 1e9):.2f} tokens/s"
