"""The loaded Piper voice: what it is, and one request turned into its speech, a sentence at a
time, as 16-bit PCM.

Piper answers ``synthesize`` with a generator: each sentence is spoken when it is asked for,
so the loop can send it on (and notice a cancel) before the next one is made.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import onnxruntime  # type: ignore[import-untyped]
from piper import PiperVoice, SynthesisConfig
from piper.config import PiperConfig

from ...runners import child_entry, child_loop
from ...runners.resident import resident_bytes
from ..frames import MAX_SPEED, MIN_SPEED, ErrorKind, SpeakerInfo, SpeakerSpec, SpeakRequest
from .text import pieces

__all__ = ["LoadError", "PiperSpeaker", "RequestFailure"]

_CUDA = "CUDAExecutionProvider"
_CPU = "CPUExecutionProvider"


class LoadError(child_entry.LoadError):
    """The voice cannot be loaded; the message says why in words a user can act on."""


class RequestFailure(child_loop.RequestFailure):
    """A request the voice cannot serve, and why: answered by the loop as an ``error`` event
    of its ``kind`` while the runner goes on serving."""

    def __init__(self, kind: ErrorKind, message: str):
        super().__init__(kind, message)


class PiperSpeaker:
    def __init__(self, voice: PiperVoice, language: str, device: str, load_seconds: float):
        self._voice = voice
        self.language = language
        self.device = device
        self.load_seconds = load_seconds

    @classmethod
    def load(cls, spec: SpeakerSpec) -> PiperSpeaker:
        started = time.perf_counter()
        model, config_path = _voice_files(Path(spec.model_path))
        try:
            document = json.loads(config_path.read_bytes())
            config = PiperConfig.from_dict(document)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise LoadError(f"cannot read the voice's {config_path.name}: {exc}") from None
        language = document.get("language")
        code = language.get("code") if isinstance(language, dict) else None
        options = onnxruntime.SessionOptions()
        if spec.threads > 0:
            options.intra_op_num_threads = spec.threads
        providers = _providers(spec)
        try:
            session = onnxruntime.InferenceSession(
                str(model), sess_options=options, providers=providers
            )
        except Exception as exc:  # onnxruntime raises its own (Fail, InvalidGraph...)
            raise LoadError(f"cannot load the voice {model.name}: {exc}") from None
        device = "cuda" if _CUDA in session.get_providers() else "cpu"
        voice = PiperVoice(session=session, config=config)
        return cls(voice, str(code or config.espeak_voice), device, time.perf_counter() - started)

    def describe(self) -> SpeakerInfo:
        config = self._voice.config
        return SpeakerInfo(
            sample_rate=int(config.sample_rate),
            language=self.language,
            speakers=int(config.num_speakers),
            device=self.device,
            load_seconds=self.load_seconds,
            memory_bytes=resident_bytes(),
            pid=os.getpid(),
        )

    def speak(self, request: SpeakRequest) -> Iterator[bytes]:
        """The speech of ``request.text``, a sentence's PCM at a time (made as it is asked
        for); RequestFailure for a request it cannot serve."""
        if not MIN_SPEED <= request.speed <= MAX_SPEED:
            raise RequestFailure(
                "invalid_request", f"speed is between {MIN_SPEED:g} and {MAX_SPEED:g}"
            )
        if not request.text.strip():
            raise RequestFailure("invalid_request", "there is no text to speak")
        length_scale = self._voice.config.length_scale / request.speed
        synthesis = SynthesisConfig(length_scale=length_scale)
        for piece in pieces(request.text):
            for chunk in self._voice.synthesize(piece, syn_config=synthesis):
                yield _pcm(chunk)


def _voice_files(folder: Path) -> tuple[Path, Path]:
    """The folder's ``<voice>.onnx`` and ``<voice>.onnx.json`` (the store made it so)."""
    if not folder.is_dir():
        raise LoadError(f"no Piper voice at {folder}: there is no such folder")
    models = sorted(path for path in folder.glob("*.onnx") if path.is_file())
    if len(models) != 1 or not Path(f"{models[0]}.json").is_file():
        raise LoadError(f"no Piper voice at {folder}: it needs one .onnx and its .onnx.json")
    return models[0], Path(f"{models[0]}.json")


def _providers(spec: SpeakerSpec) -> list[str]:
    available = onnxruntime.get_available_providers()
    return [_CUDA, _CPU] if spec.device == "auto" and _CUDA in available else [_CPU]


def _pcm(chunk: Any) -> bytes:
    """A Piper audio chunk as 16-bit little-endian samples (numpy's int16 on every machine
    this runs on is little-endian; the byte order is said, not assumed, all the same)."""
    return bytes(chunk.audio_int16_array.astype("<i2").tobytes())
