"""The speech runner's loop (``daemon.runners.child_loop``): requests in the order they came,
one at a time, each sentence's audio sent on as soon as the voice has made it; a cancel stops
a running request before its next sentence."""

from __future__ import annotations

import time

from ...runners.child_loop import EventWriter, Inbox, RequestServer, say_as
from ..frames import WIRE, AudioChunk, Request, SpeakOp, SpeechDone
from .voice import PiperSpeaker

__all__ = ["Server", "say"]

_CHUNK_BYTES = 1 << 20  # at most this much audio a frame (24 s at 22,050 Hz): frames stay small


def say(text: str) -> None:
    """One line of the runner's own in its log (stderr, which the daemon keeps)."""
    say_as(Server._ROLE, text)


class Server(RequestServer[Request, SpeakOp]):
    """Serves speech requests in arrival order until shutdown or the end of stdin."""

    _ROLE = "speaker"

    def __init__(self, speaker: PiperSpeaker, out: EventWriter, inbox: Inbox[Request]):
        super().__init__(WIRE, SpeakOp, out, inbox)
        self._speaker = speaker

    def _perform(self, op: SpeakOp) -> None:
        started = time.perf_counter()
        say(f"request {op.id}: {len(op.request.text):,} characters at speed {op.request.speed:g}")
        sentences = self._speaker.speak(op.request)
        count = samples = 0
        while not self._stopping():
            pcm = next(sentences, None)
            if pcm is None:
                seconds = time.perf_counter() - started
                self._out.send(SpeechDone(op.id, samples, seconds, count))
                return
            for start in range(0, len(pcm), _CHUNK_BYTES):
                self._out.send(AudioChunk(op.id, count, pcm[start : start + _CHUNK_BYTES]))
                count += 1
            samples += len(pcm) // 2
        why = "cancelled" if self._cancelled else "stopped: the runner is exiting"
        say(f"request {op.id} {why} after {count} chunks")
