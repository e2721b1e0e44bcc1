"""A transcript in the shapes OpenAI's audio API answers with (``response_format``): ``json``
(the text), ``text``, ``srt`` and ``vtt`` subtitles, and ``verbose_json`` (language, duration,
segments and, when asked, words: the SDK's ``TranscriptionVerbose``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from localllm.daemon.transcription.frames import Segment

__all__ = ["FORMATS", "Transcript", "TranscriptFormat", "render"]

TranscriptFormat = Literal["json", "text", "srt", "vtt", "verbose_json"]
FORMATS: tuple[TranscriptFormat, ...] = get_args(TranscriptFormat)


@dataclass(frozen=True, slots=True)
class Transcript:
    task: Literal["transcribe", "translate"]
    language: str
    duration: float  # seconds of audio
    segments: tuple[Segment, ...]

    @property
    def text(self) -> str:
        """The whole text, as Whisper writes it without its leading space."""
        return "".join(segment.text for segment in self.segments).strip()


def render(
    transcript: Transcript, form: TranscriptFormat, words: bool = False
) -> tuple[object, str]:
    """The answer's body (a dict for JSON, else text) and its media type; ``words``: the
    verbose answer lists every word with its times."""
    if form == "json":
        usage = {"type": "duration", "seconds": round(transcript.duration, 3)}
        return {"text": transcript.text, "usage": usage}, "application/json"
    if form == "verbose_json":
        return _verbose(transcript, words), "application/json"
    if form == "text":
        return transcript.text + "\n", "text/plain; charset=utf-8"
    if form == "srt":
        return _subtitles(transcript.segments, ",", numbered=True), "text/plain; charset=utf-8"
    return "WEBVTT\n\n" + _subtitles(transcript.segments, "."), "text/vtt; charset=utf-8"


def _verbose(transcript: Transcript, words: bool) -> dict[str, object]:
    answer: dict[str, object] = {
        "task": transcript.task,
        "language": transcript.language,
        "duration": round(transcript.duration, 3),
        "text": transcript.text,
        "segments": [
            {
                "id": segment.index,
                "seek": segment.seek,
                "start": segment.start,
                "end": segment.end,
                "text": segment.text,
                "tokens": list(segment.tokens),
                "temperature": segment.temperature,
                "avg_logprob": segment.avg_logprob,
                "compression_ratio": segment.compression_ratio,
                "no_speech_prob": segment.no_speech_prob,
            }
            for segment in transcript.segments
        ],
        "usage": {"type": "duration", "seconds": round(transcript.duration, 3)},
    }
    if words:
        answer["words"] = [
            {"word": word.word.strip(), "start": word.start, "end": word.end}
            for segment in transcript.segments
            for word in segment.words
        ]
    return answer


def _subtitles(segments: Sequence[Segment], comma: str, numbered: bool = False) -> str:
    """SubRip (numbered cues, ``00:00:01,500``) or WebVTT (``00:00:01.500``) cues."""
    cues = []
    for number, segment in enumerate(segments, 1):
        timing = f"{_clock(segment.start, comma)} --> {_clock(segment.end, comma)}"
        head = f"{number}\n{timing}" if numbered else timing
        cues.append(f"{head}\n{segment.text.strip()}\n")
    return "\n".join(cues)


def _clock(seconds: float, comma: str) -> str:
    millis = max(0, round(seconds * 1000))
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    whole, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{whole:02d}{comma}{millis:03d}"
