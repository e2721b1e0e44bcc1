"""Writing a model's streamed answer as it arrives, and the ``--verbose`` timing report.

Shared by one-shot ``localllm run`` and the interactive chat, so both print the same way. A
thinking model's reasoning goes through :class:`ThinkingOutput` (shown apart, or hidden) and is
never part of the answer's text.
The stream is closed on the way out whatever happens, which drops the connection and so stops
the generation on the daemon (Ctrl-C really stops the model, not just the printing).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TextIO

from localllm.app.cli.formatting import format_duration
from localllm.app.cli.progress import Spinner
from localllm.app.cli.thinking_output import ThinkingOutput, isatty
from localllm.daemon.api import ChatChunk, GenerateChunk

__all__ = ["Answer", "stream_answer", "timing_lines"]


@dataclass
class Answer:
    text: str
    final: ChatChunk | GenerateChunk | None  # the last chunk (``done: true``) with the timings
    thinking: str = ""  # what a thinking model reasoned, shown or not; never in ``text``


def stream_answer(
    chunks: Iterable[ChatChunk | GenerateChunk],
    out: TextIO,
    thinking: ThinkingOutput | None = None,
) -> Answer:
    """Print each piece of ``/api/chat`` or ``/api/generate`` output as it comes (on a
    terminal, a spinner stands in until the first piece shown). ``thinking`` says where the
    reasoning goes; without it, nowhere."""
    thinking = thinking or ThinkingOutput(None)
    pieces: list[str] = []
    thoughts: list[str] = []
    final: ChatChunk | GenerateChunk | None = None
    spinner = Spinner(out).start() if isatty(out) else None
    try:
        for chunk in chunks:
            thought, piece = _thinking(chunk), _content(chunk)
            if spinner is not None and (piece or (thought and thinking.shown)):
                spinner.stop()
                spinner = None
            if thought:
                thinking.write(thought)
                thoughts.append(thought)
            if piece or _calls(chunk):
                thinking.close()
            if piece:
                out.write(piece)
                out.flush()
                pieces.append(piece)
            if chunk.done:
                final = chunk
    finally:
        if spinner is not None:
            spinner.stop()
        thinking.finish()
        if isinstance(chunks, Iterator) and hasattr(chunks, "close"):
            chunks.close()
    return Answer("".join(pieces), final, "".join(thoughts))


def _content(chunk: ChatChunk | GenerateChunk) -> str:
    return chunk.message.content if isinstance(chunk, ChatChunk) else chunk.response


def _thinking(chunk: ChatChunk | GenerateChunk) -> str:
    return (chunk.message.thinking if isinstance(chunk, ChatChunk) else chunk.thinking) or ""


def _calls(chunk: ChatChunk | GenerateChunk) -> bool:
    """A tool call ends the thinking as an answer does."""
    return isinstance(chunk, ChatChunk) and bool(chunk.message.tool_calls)


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
