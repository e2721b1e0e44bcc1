"""Where a recording's sound comes from: the one seam between the composer's microphone and a
device. Everything after it (the level meter, stopping, the WAV file, the transcription) is the
same whichever source plays.

``Microphone`` records the default input device through Qt Multimedia's ``QAudioSource``, as
16-bit mono (16 kHz where the device takes it, else 48 or 44.1 kHz: Whisper resamples). Qt
Multimedia comes with PySide6-Addons, not PySide6-Essentials: without it the microphone says so
and audio files can still be transcribed. ``WavFile`` plays a WAV file's frames into the same
pipeline, a chunk at a time on a timer as a device would (the tests' and screenshots'
microphone: only the device differs).
"""

from __future__ import annotations

import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QObject, QTimer, Signal

from localllm.app.gui.state.voice import AudioFormat

__all__ = [
    "AudioInput",
    "AudioSource",
    "AudioSourceError",
    "Microphone",
    "MicrophoneSource",
    "WavFile",
    "WavFileSource",
]

Heard = Callable[[bytes], None]  # 16-bit little-endian frames, as they come
Failed = Callable[[str], None]  # why the source stopped on its own
NO_MULTIMEDIA = (
    "Recording needs Qt Multimedia, which this PySide6 lacks: install PySide6-Addons "
    "(pip install pyside6-addons). Audio files can still be transcribed (the arrow beside "
    "the microphone, or drop them on the chat)."
)
NO_MICROPHONE = "No microphone found: connect one, or transcribe an audio file instead."
_RATES = (16_000, 48_000, 44_100)


class AudioSourceError(Exception):
    """A source that cannot start, in words for the user."""


class AudioSource(Protocol):
    format: AudioFormat

    def start(self, heard: Heard, failed: Failed) -> None: ...

    def stop(self) -> None: ...


class AudioInput(Protocol):
    """A kind of source: whether it can record here, and a new source for each take."""

    def problem(self) -> str: ...  # why it cannot record ("" when it can)

    def open(self, parent: QObject) -> AudioSource: ...  # raises AudioSourceError


def _multimedia() -> Any:
    try:
        from PySide6 import QtMultimedia
    except ImportError:
        raise AudioSourceError(NO_MULTIMEDIA) from None
    return QtMultimedia


class Microphone:
    """The system's default input device."""

    def problem(self) -> str:
        try:
            media = _multimedia()
        except AudioSourceError as error:
            return str(error)
        return NO_MICROPHONE if media.QMediaDevices.defaultAudioInput().isNull() else ""

    def open(self, parent: QObject) -> MicrophoneSource:
        return MicrophoneSource(parent)


class MicrophoneSource(QObject):
    """One take from the default input device, in the first 16-bit mono format it takes."""

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        media = _multimedia()
        device = media.QMediaDevices.defaultAudioInput()
        if device.isNull():
            raise AudioSourceError(NO_MICROPHONE)
        chosen = next((f for f in map(_format, _RATES) if device.isFormatSupported(f)), None)
        if chosen is None:
            raise AudioSourceError(f"{device.description()} does not record 16-bit mono sound.")
        self.format = AudioFormat(chosen.sampleRate(), 1)
        self._media = media
        self._input = media.QAudioSource(device, chosen, self)
        self._device: Any = None

    def start(self, heard: Heard, failed: Failed) -> None:
        self._device = self._input.start()
        if self._device is None or self._input.error() != self._media.QtAudio.Error.NoError:
            failed("The microphone could not be opened (another app may hold it).")
            return
        self._device.readyRead.connect(lambda: heard(bytes(self._device.readAll().data())))
        self._input.stateChanged.connect(lambda _state: self._check(failed))

    def stop(self) -> None:
        self._input.stop()

    def _check(self, failed: Failed) -> None:
        if self._input.error() != self._media.QtAudio.Error.NoError:
            failed("The microphone stopped (unplugged, or taken by another app).")


def _format(rate: int) -> Any:
    media = _multimedia()
    wanted = media.QAudioFormat()
    wanted.setSampleRate(rate)
    wanted.setChannelCount(1)
    wanted.setSampleFormat(media.QAudioFormat.SampleFormat.Int16)
    return wanted


class WavFile:
    """A WAV file as a microphone: ``speed`` times faster than it was spoken."""

    def __init__(self, path: Path, *, speed: float = 4.0, chunk_ms: int = 100):
        self.path, self.speed, self.chunk_ms = Path(path), speed, chunk_ms

    def problem(self) -> str:
        return ""

    def open(self, parent: QObject) -> WavFileSource:
        return WavFileSource(self.path, parent, speed=self.speed, chunk_ms=self.chunk_ms)


class WavFileSource(QObject):
    """A 16-bit mono WAV file's frames, ``chunk_ms`` of them per tick of a timer; when they
    run out it goes quiet (``finished``), as a microphone in a silent room would."""

    finished = Signal()

    def __init__(
        self, path: Path, parent: QObject | None = None, *, speed: float = 4.0, chunk_ms: int = 100
    ):
        super().__init__(parent)
        try:
            with wave.open(str(path), "rb") as wav:
                if wav.getsampwidth() != 2 or wav.getnchannels() != 1:
                    raise AudioSourceError(f"{Path(path).name} is not 16-bit mono.")
                self.format = AudioFormat(wav.getframerate(), 1)
                self._frames = wav.readframes(wav.getnframes())
        except (OSError, EOFError, wave.Error) as error:
            raise AudioSourceError(f"Cannot play {Path(path).name}: {error}") from None
        self._chunk = max(2, self.format.bytes_per_second * chunk_ms // 1000 // 2 * 2)
        self._position = 0
        self._heard: Heard | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(max(1, round(chunk_ms / speed)))
        self._timer.timeout.connect(self._play)

    @property
    def done(self) -> bool:
        return self._position >= len(self._frames)

    def start(self, heard: Heard, failed: Failed) -> None:
        self._heard = heard
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def _play(self) -> None:
        chunk = self._frames[self._position : self._position + self._chunk]
        self._position += len(chunk)
        if chunk and self._heard is not None:
            self._heard(chunk)
        if self.done:
            self._timer.stop()
            self.finished.emit()
