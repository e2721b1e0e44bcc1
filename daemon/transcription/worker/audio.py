"""An uploaded file read as 16 kHz mono samples, a piece at a time, with errors that say what is
wrong with it.

PyAV (FFmpeg) reads any container and codec it knows. faster-whisper takes a recording as one
float32 array (230 MB an hour, and its features half that again), so a long file is decoded
as it is read and handed on in pieces of ``piece_seconds``, each cut at the quietest tenth of a
second of its last ``_SEARCH_SECONDS`` (between words, not through one): however long the
file, the runner holds at most a piece and the next few seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import av
import numpy as np
import numpy.typing as npt

from .failure import RequestFailure

__all__ = ["Piece", "Recording", "audio_pieces"]

_SEARCH_SECONDS = 10.0  # where a piece may end: its last seconds
_QUIET_WINDOW_SECONDS = 0.1  # what "quietest" is measured over
_LAST_PIECE_SECONDS = 30.0  # a cut leaves at least this much read, so no piece is a scrap
_Floats = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class Piece:
    start: float  # seconds into the recording
    samples: _Floats


class Recording:
    """A file's pieces, as they are read; ``seconds``: how much has been read so far, its
    length once the last piece is out (the container's ``stated`` length may be missing or
    rounded)."""

    def __init__(self, stated: float, pieces: Iterator[Piece], rate: int):
        self.stated, self.seconds = stated, 0.0
        self._pieces, self._rate = pieces, rate

    def __iter__(self) -> Iterator[Piece]:
        for piece in self._pieces:
            self.seconds = piece.start + piece.samples.shape[0] / self._rate
            yield piece


def audio_pieces(path: str, rate: int, piece_seconds: float) -> Recording:
    """The recording, its first piece read: a file that has no audio stream, cannot be opened
    or holds no sound fails at once (RequestFailure), one that breaks later where it breaks."""
    try:
        container = av.open(path, metadata_errors="ignore")
    except FileNotFoundError:
        raise RequestFailure("invalid_request", f"no audio file at {path}") from None
    except av.error.FFmpegError as exc:
        raise _not_audio(exc) from None
    if not container.streams.audio:
        container.close()
        raise RequestFailure("invalid_audio", "the file holds no audio stream")
    stream = container.streams.audio[0]
    stated = (
        float(stream.duration * stream.time_base) if stream.duration and stream.time_base else 0.0
    )
    if not stated and container.duration:
        stated = container.duration / av.time_base
    pieces = _cut(_samples(container, rate), rate, piece_seconds)
    first = next(pieces, None)
    if first is None:
        raise RequestFailure("invalid_audio", "the file holds no sound")
    return Recording(stated, _chained(first, pieces), rate)


def _chained(first: Piece, rest: Iterator[Piece]) -> Iterator[Piece]:
    yield first
    yield from rest


def _samples(container: av.container.InputContainer, rate: int) -> Iterator[_Floats]:
    """The first audio stream decoded and resampled to ``rate`` Hz mono, as it is read (as
    faster-whisper's ``decode_audio`` does it, frames it cannot decode skipped)."""
    resampler = av.AudioResampler(format="s16", layout="mono", rate=rate)
    scale = np.float32(1 / 32768)
    try:
        with container:
            frames = container.decode(audio=0)
            while True:
                try:
                    frame = next(frames, None)
                except av.error.InvalidDataError:
                    continue
                for out in resampler.resample(frame):
                    yield out.to_ndarray().reshape(-1).astype(np.float32) * scale
                if frame is None:  # the resampler has given what it held back
                    return
    except av.error.FFmpegError as exc:
        raise _not_audio(exc) from None


def _cut(chunks: Iterator[_Floats], rate: int, piece_seconds: float) -> Iterator[Piece]:
    piece = max(int(piece_seconds * rate), int(_SEARCH_SECONDS * rate) * 2)
    search, keep = int(_SEARCH_SECONDS * rate), int(_LAST_PIECE_SECONDS * rate)
    held: list[_Floats] = []
    size, start = 0, 0
    for chunk in chunks:
        held.append(chunk)
        size += chunk.shape[0]
        if size < piece + keep:
            continue
        buffer = np.concatenate(held)
        end = piece - search + _quietest(buffer[piece - search : piece], rate)
        yield Piece(start / rate, buffer[:end])
        held, size, start = [buffer[end:].copy()], buffer.shape[0] - end, start + end
    if size:
        yield Piece(start / rate, np.concatenate(held))


def _quietest(samples: _Floats, rate: int) -> int:
    """The middle of the quietest window of ``samples`` (an offset into them), the last of
    equally quiet ones (the longest piece: a pause is often several silent windows)."""
    window = max(int(_QUIET_WINDOW_SECONDS * rate), 1)
    count = int(samples.shape[0]) // window
    energy = np.square(samples[: count * window].reshape(count, window)).mean(axis=1)
    last = count - 1 - int(np.argmin(energy[::-1]))
    return last * window + window // 2


def _not_audio(exc: av.error.FFmpegError) -> RequestFailure:
    reason = exc.strerror or type(exc).__name__
    return RequestFailure("invalid_audio", f"the file is not audio ({reason})")
