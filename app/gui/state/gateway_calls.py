"""How the gateway runs a ``daemon.client`` call: every client error becomes a
``GatewayError`` in words for the user with a hint saying what to do next, and a stream's
answers are converted lazily, closing the stream when the consumer stops early.

Kept apart from ``gateway.py`` (the calls themselves) so that module stays about which call
does what, and this one about what a failure means to the user.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping
from typing import TypeVar

from localllm.daemon.client import ClientError, DaemonTimeout, DaemonUnavailable
from localllm.daemon.client.launcher import DaemonStartError

__all__ = [
    "HINTS",
    "PULL_HINTS",
    "REMOTE_HINTS",
    "SPEECH_HINTS",
    "TRANSCRIBE_HINTS",
    "GatewayError",
    "call",
    "flatten",
    "stream",
]

T = TypeVar("T")
Chunk = TypeVar("Chunk")
Hints = Mapping[int, str]
_STREAM_ERROR = -1  # the key for an error line in the middle of a stream (no HTTP status)

HINTS: Hints = {
    401: "The daemon wants an API key: turn the local-network switch off and on again on the "
    "Server page, or set LOCALLLM_API_KEY.",
    404: "Pull the model first (Discover, or the first-run page), or pick another model.",
    502: "The daemon could not reach Hugging Face: check the internet connection and retry. "
    "Offline? Import a GGUF file you already have (Models, Import GGUF).",
    503: "The daemon is busy with other requests; try again in a moment.",
    507: "Unload other models on the Server page, or pick a smaller model or context.",
}
PULL_HINTS: Hints = {
    **HINTS,
    404: "No model by that name: search for it on the Discover page.",
    400: "Check the name: hf.co/<org>/<repo>:<quant>, or a name from the first-run page.",
    _STREAM_ERROR: "Resume it on the Downloads page once that is fixed; "
    "what was downloaded is kept.",
}

REMOTE_HINTS: Hints = {
    **HINTS,
    400: "Names are lowercase letters, digits, '-' and '_'; URLs start with http:// or https://.",
    404: "It is gone already: the list is refreshed.",
    409: "Pick another name, or remove that remote first.",
}

TRANSCRIBE_HINTS: Hints = {
    **HINTS,
    400: "Check that the file is audio the daemon can read (WAV, MP3, M4A, Ogg, FLAC, WebM).",
    404: "Pick another speech-to-text model in Settings, Voice, or get whisper:base.",
}
SPEECH_HINTS: Hints = {**HINTS, 404: "Pick another voice in Settings, Voice."}


class GatewayError(Exception):
    """A failed daemon call, in words for the user, with what to do next."""

    def __init__(self, message: str, hint: str = "", *, unavailable: bool = False, status=None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.unavailable = unavailable
        self.status = status

    def __str__(self) -> str:
        return f"{self.message} {self.hint}".strip()


def _translate(exc: ClientError, hints: Hints) -> GatewayError:
    if isinstance(exc, DaemonStartError):
        tail = next((line for line in reversed(exc.details) if line.strip()), "")
        return GatewayError(exc.message, tail, unavailable=True)
    if isinstance(exc, DaemonTimeout):  # there, but busy: nothing to restart
        return GatewayError(
            "The localllm daemon did not answer in time.",
            "It is busy (loading a model, reading a long prompt): try again once it is done.",
        )
    if isinstance(exc, DaemonUnavailable):
        return GatewayError(
            "The localllm daemon is not answering.",
            "Restart it from the status bar, or run `localllm serve`.",
            unavailable=True,
        )
    hint = hints.get(exc.status if exc.status is not None else _STREAM_ERROR, "")
    if exc.code == "download_failed":
        hint = HINTS[502]
    return GatewayError(exc.message or str(exc), hint, status=exc.status)


def call(fn: Callable[[], T], hints: Hints = HINTS) -> T:
    try:
        return fn()
    except ClientError as exc:
        raise _translate(exc, hints) from exc


def stream(
    chunks: Callable[[], Iterable[Chunk]], convert: Callable[[Chunk], T], hints: Hints = HINTS
) -> Generator[T, None, None]:
    """Convert a client stream lazily (the request goes out on the first ``next()``), closing
    it when the consumer stops early."""
    iterator = iter(call(chunks, hints))
    try:
        while True:
            try:
                chunk = next(iterator)
            except StopIteration:
                return
            except ClientError as exc:
                raise _translate(exc, hints) from exc
            yield convert(chunk)
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()


def flatten(batches: Generator[tuple[T, ...], None, None]) -> Generator[T, None, None]:
    try:
        for batch in batches:
            yield from batch
    finally:
        batches.close()
