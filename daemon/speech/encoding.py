"""The speech runner's 16-bit mono PCM in the formats OpenAI's ``/v1/audio/speech`` answers
in, encoded as it comes so that a long text is heard before it has all been spoken.

``wav`` and ``pcm`` need no encoder: a WAV is the PCM behind a header that, as streaming TTS
servers write it, gives its sizes as unknown (the largest a RIFF size can say; players and
FFmpeg read such a file to its end). ``mp3``, ``opus`` (in Ogg), ``flac`` and ``aac`` (ADTS)
are encoded by PyAV (FFmpeg) into containers that need no seeking back, each at the voice's
sample rate where the codec takes it (Opus takes 48 kHz: the speech is resampled). Which of
them this PyAV build can encode, :func:`supported_formats` says.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Protocol, cast

import av
import numpy as np

__all__ = ["FORMATS", "AudioFormat", "SpeechEncoder", "encoder_for", "supported_formats"]


@dataclass(frozen=True, slots=True)
class AudioFormat:
    name: str  # as OpenAI's ``response_format`` names it
    media_type: str
    container: str = ""  # FFmpeg's muxer; "" for the formats written here
    codecs: tuple[str, ...] = ()  # FFmpeg's encoders for it, the best first
    rate: int = 0  # the sample rate it is encoded at; 0: the voice's


FORMATS: dict[str, AudioFormat] = {
    f.name: f
    for f in (
        AudioFormat("wav", "audio/wav"),
        AudioFormat("pcm", "audio/pcm"),
        AudioFormat("mp3", "audio/mpeg", "mp3", ("libmp3lame", "mp3")),
        AudioFormat("opus", "audio/ogg", "ogg", ("libopus", "opus"), rate=48_000),
        AudioFormat("flac", "audio/flac", "flac", ("flac",)),
        AudioFormat("aac", "audio/aac", "adts", ("aac",)),
    )
}
_UNKNOWN_SIZE = 0xFFFFFFFF


class SpeechEncoder(Protocol):
    def encode(self, pcm: bytes) -> bytes:
        """The bytes to send for ``pcm`` (the first call's begin with any header)."""

    def finish(self) -> bytes:
        """The last bytes: what the encoder held back, the container's end."""


def supported_formats() -> tuple[str, ...]:
    """The formats this PyAV build can write (``wav`` and ``pcm`` always)."""
    return tuple(name for name, f in FORMATS.items() if not f.codecs or _codec(f) is not None)


def encoder_for(name: str, sample_rate: int) -> SpeechEncoder:
    """An encoder of 16-bit mono PCM at ``sample_rate`` into format ``name`` (one that
    :func:`supported_formats` lists)."""
    form = FORMATS[name]
    if name == "pcm":
        return _Raw(b"")
    if name == "wav":
        return _Raw(wav_header(sample_rate))
    return _Encoded(form, sample_rate)


def wav_header(sample_rate: int) -> bytes:
    """A 16-bit mono WAV header whose sizes say "unknown": the audio follows as it is made."""
    block = 2  # bytes a sample
    fmt = struct.pack("<HHIIHH", 1, 1, sample_rate, sample_rate * block, block, 16)
    return (
        b"RIFF"
        + struct.pack("<I", _UNKNOWN_SIZE)
        + b"WAVEfmt "
        + struct.pack("<I", len(fmt))
        + fmt
        + b"data"
        + struct.pack("<I", _UNKNOWN_SIZE)
    )


class _Raw:
    def __init__(self, header: bytes):
        self._header = header

    def encode(self, pcm: bytes) -> bytes:
        header, self._header = self._header, b""
        return header + pcm

    def finish(self) -> bytes:
        return self._header  # a speech with no sound at all is still a (header-only) WAV


class _Sink:
    """Where PyAV writes the container: kept until taken, never sought back in."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        data = b"".join(self._parts)
        self._parts.clear()
        return data


class _Encoded:
    def __init__(self, form: AudioFormat, sample_rate: int):
        codec = _codec(form)
        if codec is None:
            raise ValueError(f"this PyAV build cannot encode {form.name}")
        rate = _rate(codec, form.rate or sample_rate)
        self._input_rate = sample_rate
        self._sink = _Sink()
        self._container = av.open(self._sink, mode="w", format=form.container)
        stream = self._container.add_stream(codec.name, rate=rate, layout="mono")
        self._stream = cast("av.AudioStream", stream)
        names = [f.name for f in codec.audio_formats or ()]
        wanted = next((n for n in ("s16", "s16p") if n in names), names[0] if names else "s16")
        self._resampler = av.AudioResampler(format=wanted, layout="mono", rate=rate)

    def encode(self, pcm: bytes) -> bytes:
        samples = np.frombuffer(pcm, dtype="<i2").astype(np.int16)
        frame = av.AudioFrame.from_ndarray(samples[np.newaxis, :], format="s16", layout="mono")
        frame.sample_rate = self._input_rate
        self._write(frame)
        return self._sink.take()

    def finish(self) -> bytes:
        self._write(None)
        for packet in self._stream.encode(None):
            self._container.mux(packet)
        self._container.close()
        return self._sink.take()

    def _write(self, frame: av.AudioFrame | None) -> None:
        for resampled in self._resampler.resample(frame):
            for packet in self._stream.encode(resampled):
                self._container.mux(packet)


def _codec(form: AudioFormat) -> av.Codec | None:
    for name in form.codecs:
        try:
            return av.Codec(name, "w")
        except (av.error.FFmpegError, ValueError):  # not in this FFmpeg build
            continue
    return None


def _rate(codec: av.Codec, wanted: int) -> int:
    """``wanted``, or the codec's nearest rate above it where it takes only some."""
    rates = sorted(codec.audio_rates or ())
    if not rates or wanted in rates:
        return wanted
    return next((rate for rate in rates if rate >= wanted), rates[-1])
