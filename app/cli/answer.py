"""Writing a model's streamed answer as it arrives, and the ``--verbose`` timing report.

Shared by one-shot ``localllm run`` and the interactive chat, so both print the same way.
The stream is closed on the way out whatever happens, which drops the connection and so stops
the generation on the daemon (Ctrl-C really stops the model, not just the printing).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from app.cli.formatting import format_duration
from app.cli.progress import Spinner

__all__ = ["Answer", "stream_answer", "timing_lines"]


@dataclass
class Answer:
    text: str
    final: dict[str, Any] | None  # the last chunk (``done: true``) with the timings


def stream_answer(chunks: Iterable[Mapping[str, Any]], out: TextIO) -> Answer:
    """Print each piece of ``/api/chat`` or ``/api/generate`` output as it comes (on a
    terminal, a spinner stands in until the first piece)."""
    pieces: list[str] = []
    final: dict[str, Any] | None = None
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
            if chunk.get("done"):
                final = dict(chunk)
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


def _content(chunk: Mapping[str, Any]) -> str:
    message = chunk.get("message")
    if isinstance(message, Mapping):
        return str(message.get("content") or "")
    return str(chunk.get("response") or "")


def timing_lines(final: Mapping[str, Any]) -> list[str]:
    """What ``ollama run --verbose`` prints after an answer (durations come in nanoseconds)."""
    rows = [
        ("total duration", format_duration(final.get("total_duration"))),
        ("load duration", format_duration(final.get("load_duration"))),
        ("prompt eval count", _tokens(final.get("prompt_eval_count"))),
        ("prompt eval duration", format_duration(final.get("prompt_eval_duration"))),
        (
            "prompt eval rate",
            _rate(final.get("prompt_eval_count"), final.get("prompt_eval_duration")),
        ),
        ("eval count", _tokens(final.get("eval_count"))),
        ("eval duration", format_duration(final.get("eval_duration"))),
        ("eval rate", _rate(final.get("eval_count"), final.get("eval_duration"))),
    ]
    return [f"{label + ':':<22}{value}" for label, value in rows]


def _tokens(count: object) -> str:
    return "-" if count is None else f"{count} token(s)"


def _rate(count: object, nanoseconds: object) -> str:
    if not isinstance(count, int | float) or not isinstance(nanoseconds, int | float):
        return "-"
    if nanoseconds <= 0:
        return "-"
    return f"{count / (nanoseconds / 1e9):.2f} tokens/s"
