"""The loaded Whisper model: what it is, and one request turned into faster-whisper's call.

faster-whisper answers a call with the audio's language and a generator: each segment is
decoded when it is asked for, so the loop can send it on (and notice a cancel) before the
next one is written.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from faster_whisper import (  # type: ignore[import-untyped]
    BatchedInferencePipeline,
    WhisperModel,
)

from ...runners import child_entry
from ...runners.resident import resident_bytes
from ..frames import Segment, TranscribeRequest, TranscriberInfo, TranscriberSpec, Word
from .audio import Piece, Recording, audio_pieces
from .failure import RequestFailure
from .features import SlicedFeatureExtractor

__all__ = ["Heard", "LoadError", "Transcription", "WhisperRunner", "segment_event"]

# What faster-whisper needs in the folder; without tokenizer.json it would fetch one from the
# Hugging Face Hub, and a runner reaches for no network
_MODEL_FILES = ("model.bin", "config.json", "tokenizer.json")
_FALLBACK_STEP = 0.2  # OpenAI's whisper: temperature_increment_on_fallback
# a piece at least this long is read by faster-whisper's batched pipeline (where the answer
# shows no segment times): 0.68x the time of a sequential read on 2 cores, the same word error
# rate (bench/RESULTS.md "Speech to text")
_BATCHED_FROM_SECONDS = 60.0
_FRAMES_PER_SECOND = 100  # Whisper's feature frames: a segment's seek counts them


class LoadError(child_entry.LoadError):
    """The model cannot be loaded; the message says why in words a user can act on."""


@dataclass(frozen=True, slots=True)
class Heard:
    """A segment as faster-whisper wrote it, and where its piece starts in the recording."""

    offset: float  # seconds
    segment: Any


@dataclass(frozen=True, slots=True)
class Transcription:
    """A request under way: the audio's language and length, its segments still to come."""

    language: str
    language_probability: float
    duration: float
    duration_after_vad: float
    segments: Iterator[Heard]  # decoded one by one, as they are asked for
    recording: Recording  # its length is known once the segments are all out


class WhisperRunner:
    def __init__(self, model: Any, spec: TranscriberSpec, load_seconds: float):
        self._model = model
        self.spec = spec
        self.load_seconds = load_seconds
        self.languages: tuple[str, ...] = tuple(model.supported_languages)
        self.multilingual = bool(model.model.is_multilingual)

    @classmethod
    def load(cls, spec: TranscriberSpec) -> WhisperRunner:
        started = time.perf_counter()
        folder = Path(spec.model_path)
        if not folder.is_dir():
            raise LoadError(f"no Whisper model at {folder}: there is no such folder")
        missing = [name for name in _MODEL_FILES if not (folder / name).is_file()]
        if missing:
            raise LoadError(f"no Whisper model at {folder}: it has no {', '.join(missing)}")
        try:
            model = WhisperModel(
                str(folder),
                device=spec.device,
                compute_type=spec.compute_type,
                cpu_threads=spec.threads,
                local_files_only=True,
            )
        except (RuntimeError, ValueError, OSError) as exc:
            raise LoadError(f"cannot load the Whisper model at {folder}: {exc}") from None
        extractor = getattr(model, "feat_kwargs", None)
        if isinstance(extractor, dict):  # faster-whisper 1.1+: same features, less memory
            model.feature_extractor = SlicedFeatureExtractor(**extractor)
        return cls(model, spec, time.perf_counter() - started)

    def describe(self) -> TranscriberInfo:
        return TranscriberInfo(
            multilingual=self.multilingual,
            languages=self.languages,
            device=str(self._model.model.device),
            compute_type=str(self._model.model.compute_type),
            load_seconds=self.load_seconds,
            memory_bytes=resident_bytes(),
            pid=os.getpid(),
        )

    def start(self, request: TranscribeRequest) -> Transcription:
        """Read the first piece of the audio and detect its language; the segments come from
        the result, the later pieces read as they are needed."""
        self._check(request)
        rate = int(self._model.feature_extractor.sampling_rate)
        recording = audio_pieces(request.audio_path, rate, self.spec.piece_seconds)
        pieces = iter(recording)
        first = next(pieces)
        segments, info = self._transcribe(first.samples, request, request.language, True)
        language = str(info.language)
        duration = max(recording.stated, recording.seconds)
        return Transcription(
            language,
            float(info.language_probability),
            duration,
            float(info.duration_after_vad) + max(duration - recording.seconds, 0.0),
            self._all_segments(segments, pieces, request, language),
            recording,
        )

    def _all_segments(
        self,
        first: Iterator[Any],
        pieces: Iterator[Piece],
        request: TranscribeRequest,
        language: str,
    ) -> Iterator[Heard]:
        """The first piece's segments, then each later piece's, in the language of the first.
        A later piece gets no prompt: Whisper base, prompted with the end of the piece before,
        wrote one segment for a whole piece and dropped sentences of it (it skipped 2 of 3 on
        tests/test_transcription_long.py's clip); unprompted it reads it as the first."""
        for segment in first:
            yield Heard(0.0, segment)
        for piece in pieces:
            segments, _ = self._transcribe(piece.samples, request, language, first_piece=False)
            for segment in segments:
                yield Heard(piece.start, segment)

    def _transcribe(
        self, samples: Any, request: TranscribeRequest, language: str | None, first_piece: bool
    ) -> tuple[Iterator[Any], Any]:
        """faster-whisper's call on one piece: batched where it pays (a long piece whose
        segment times nobody reads: its segments are whole 30 s chunks), else sequential."""
        seconds = samples.shape[0] / int(self._model.feature_extractor.sampling_rate)
        arguments = {
            "language": language,
            "task": request.task,
            "beam_size": request.beam_size,
            "temperature": _temperatures(request.temperature),
            "initial_prompt": request.initial_prompt if first_piece else None,
            "word_timestamps": request.word_timestamps,
        }
        batched = self.spec.batch_size > 1 and seconds >= _BATCHED_FROM_SECONDS
        if batched and not request.timed_segments:
            pipeline = BatchedInferencePipeline(self._model)
            answer = pipeline.transcribe(samples, batch_size=self.spec.batch_size, **arguments)
        else:
            answer = self._model.transcribe(samples, vad_filter=request.vad_filter, **arguments)
        segments, info = answer
        return iter(segments), info

    def _check(self, request: TranscribeRequest) -> None:
        if request.language is not None and request.language not in self.languages:
            known = ", ".join(self.languages)
            raise RequestFailure(
                "invalid_request", f"the model knows no language {request.language!r}: {known}"
            )
        if request.task == "translate" and not self.multilingual:
            raise RequestFailure("invalid_request", "an English-only model cannot translate")
        if not 0.0 <= request.temperature <= 1.0:
            raise RequestFailure("invalid_request", "temperature is between 0 and 1")
        if not 1 <= request.beam_size <= 16:
            raise RequestFailure("invalid_request", "beam_size is between 1 and 16")


def segment_event(rid: int, index: int, heard: Heard) -> Segment:
    """faster-whisper's segment as the frame that carries it, its times in the recording
    (plain floats: its own are numpy's, which JSON cannot write)."""
    segment, offset = heard.segment, heard.offset
    words = tuple(
        Word(float(w.start) + offset, float(w.end) + offset, str(w.word), float(w.probability))
        for w in segment.words or ()
    )
    return Segment(
        id=rid,
        index=index,
        start=float(segment.start) + offset,
        end=float(segment.end) + offset,
        text=str(segment.text),
        words=words,
        avg_logprob=float(segment.avg_logprob),
        no_speech_prob=float(segment.no_speech_prob),
        compression_ratio=float(segment.compression_ratio),
        temperature=float(segment.temperature or 0.0),
        seek=int(segment.seek) + round(offset * _FRAMES_PER_SECOND),
        tokens=tuple(int(t) for t in segment.tokens),
    )


def _temperatures(first: float) -> tuple[float, ...]:
    """``first``, then the hotter ones a failed window is decoded again at, up to 1.0."""
    steps = int((1.0 - first) / _FALLBACK_STEP + 1e-9)
    return tuple(round(first + _FALLBACK_STEP * n, 6) for n in range(steps + 1))
