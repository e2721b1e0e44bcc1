"""Talking to models, without Qt: what the composer's microphone does and shows, one
recording's frames and how loud they are, and where a transcript goes in the message.

A recording is kept in memory (16-bit mono PCM: 32 KB a second at 16 kHz) and written as a WAV
file only when it is sent off to be transcribed, on a worker, so the UI thread never waits on
the disk. It stops by itself at ``MAX_SECONDS``. A take shorter than ``MIN_SECONDS`` is a
click, not speech: nothing is sent.
"""

from __future__ import annotations

import array
import math
import sys
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "AUDIO_SUFFIXES",
    "MAX_SECONDS",
    "MIN_SECONDS",
    "NO_MODEL",
    "AudioFormat",
    "MicLook",
    "MicPhase",
    "Recording",
    "audio_files",
    "file_heading",
    "level",
    "mic_look",
    "spoken_lead",
]

MicPhase = Literal["idle", "recording", "transcribing"]
MAX_SECONDS = 600  # ten minutes: about 19 MB at 16 kHz
MIN_SECONDS = 0.3
# what the daemon's decoder (FFmpeg) reads and people drop: OpenAI's list, and Ogg's other names
AUDIO_SUFFIXES = frozenset(
    {".wav", ".mp3", ".m4a", ".ogg", ".oga", ".opus", ".flac", ".webm", ".aac", ".mpga", ".mpeg"}
)
_SILENCE_DB = -60.0  # the meter's bottom: quieter than a quiet room's hum
NO_MODEL = (
    "No speech-to-text model is installed: get whisper:base or import a Whisper folder "
    "(Settings, Voice)."
)


@dataclass(frozen=True, slots=True)
class AudioFormat:
    """What a source delivers: signed 16-bit little-endian samples, ``channels`` of them per
    frame (the microphone and the WAV file are asked for one)."""

    rate: int = 16_000
    channels: int = 1

    @property
    def bytes_per_second(self) -> int:
        return self.rate * self.channels * 2


def level(pcm: bytes) -> float:
    """How loud 16-bit samples are, 0 (silence, or ``_SILENCE_DB`` and below) to 1 (full
    scale), on a decibel scale as meters show it: speech sits in the upper half."""
    samples = _samples(pcm)
    if not samples:
        return 0.0
    rms = math.sqrt(sum(s * s for s in samples) / len(samples)) / 32768
    if rms <= 0:
        return 0.0
    return max(0.0, min(1.0, 1 - 20 * math.log10(rms) / _SILENCE_DB))


def _samples(pcm: bytes) -> array.array:
    samples = array.array("h")
    samples.frombytes(pcm[: len(pcm) - len(pcm) % 2])
    if sys.byteorder == "big":
        samples.byteswap()
    return samples


class Recording:
    """One take: the frames heard so far, the loudest moment, and whether it is over."""

    def __init__(self, audio: AudioFormat, limit_seconds: float = MAX_SECONDS):
        self.format = audio
        self._frames = bytearray()
        self._limit = int(limit_seconds * audio.bytes_per_second)
        self.loudest = 0.0
        self.stopped = False

    def add(self, pcm: bytes) -> float:
        """Keep ``pcm`` (up to the limit) and return its level; nothing once stopped."""
        if self.stopped:
            return 0.0
        kept = pcm[: max(0, self._limit - len(self._frames))]
        self._frames += kept
        heard = level(kept)
        self.loudest = max(self.loudest, heard)
        return heard

    def stop(self) -> None:
        self.stopped = True

    @property
    def full(self) -> bool:
        return len(self._frames) >= self._limit

    @property
    def seconds(self) -> float:
        return len(self._frames) / self.format.bytes_per_second

    @property
    def worth_sending(self) -> bool:
        return self.seconds >= MIN_SECONDS

    def write_wav(self, path: Path) -> Path:
        """The take as a WAV file at ``path`` (on a worker: it touches the disk)."""
        with wave.open(str(path), "wb") as out:
            out.setnchannels(self.format.channels)
            out.setsampwidth(2)
            out.setframerate(self.format.rate)
            out.writeframes(bytes(self._frames))
        return path


@dataclass(frozen=True, slots=True)
class MicLook:
    """How the microphone button looks and what it says."""

    enabled: bool
    name: str  # what a screen reader says, and the text beside the icon where it shows
    tooltip: str
    recording: bool


def mic_look(phase: MicPhase, model: str, problem: str = "") -> MicLook:
    """``model``: the transcription model in use ("" for none installed); ``problem``: why
    this computer cannot record ("" when it can). Without a model the button is off and says
    why; without a microphone it stays on, as its menu still transcribes files."""
    if phase == "recording":
        return MicLook(True, "Stop recording", "Stop and transcribe (click, or Esc)", True)
    if phase == "transcribing":
        return MicLook(False, "Transcribing", f"Transcribing with {model}…", False)
    if not model:
        return MicLook(False, "Talk", NO_MODEL, False)
    tip = problem or f"Talk: click to record, click again or Esc to stop ({model} transcribes)"
    return MicLook(True, "Talk", tip, False)


def spoken_lead(before: str) -> str:
    """What goes between the text before the cursor and dictated words: a space after a
    word, nothing at the start or after a space or a new line."""
    return " " if before and not before[-1].isspace() else ""


def file_heading(before: str, name: str) -> str:
    """The line that introduces an audio file's transcript, on a line of its own."""
    lead = "" if not before or before.endswith("\n") else "\n"
    return f"{lead}Transcript of {name}:\n"


def audio_files(paths: list[Path]) -> list[Path]:
    """Those of ``paths`` that are audio files by their name (the daemon reads them)."""
    return [p for p in paths if p.suffix.lower() in AUDIO_SUFFIXES]
