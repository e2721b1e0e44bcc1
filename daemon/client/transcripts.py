"""A transcription as the daemon streams it (``/v1/audio/transcriptions`` with ``stream``):
what was heard, segment by segment with where it is in the recording (for progress), then the
whole answer in the format asked for."""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["Heard", "TranscriptEnd", "TranscriptEvent", "transcript_event"]


@dataclass(frozen=True, slots=True)
class Heard:
    text: str  # the segment's text (the first without its leading space)
    start: float  # seconds into the recording
    end: float
    duration: float  # of the whole recording, as its file states it (0.0: unknown)


@dataclass(frozen=True, slots=True)
class TranscriptEnd:
    text: str  # all of it
    document: str  # the answer in the format asked for: text, srt, vtt or JSON


TranscriptEvent = Heard | TranscriptEnd


def transcript_event(data: object) -> TranscriptEvent | None:
    """The event an SSE payload carries; None for one that is not a transcript's."""
    if not isinstance(data, dict):
        return None
    if data.get("type") == "transcript.text.delta":
        return Heard(
            str(data.get("delta", "")),
            _seconds(data.get("start")),
            _seconds(data.get("end")),
            _seconds(data.get("duration")),
        )
    if data.get("type") == "transcript.text.done":
        text = str(data.get("text", ""))
        document = data.get("document", text + "\n")
        if not isinstance(document, str):
            document = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
        return TranscriptEnd(text, document)
    return None


def _seconds(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0
