"""The transcription runner's loop (``daemon.runners.child_loop``): requests in the order they
came, one at a time, each segment sent on as soon as it is written; a cancel stops a running
request before its next segment."""

from __future__ import annotations

import time

from ...runners.child_loop import EventWriter, Inbox, RequestServer, say_as
from ..frames import WIRE, Request, TranscribeOp, TranscriptionDone, TranscriptionInfo
from .model import WhisperRunner, segment_event

__all__ = ["Server", "say"]


def say(text: str) -> None:
    """One line of the runner's own in its log (stderr, which the daemon keeps)."""
    say_as(Server._ROLE, text)


class Server(RequestServer[Request, TranscribeOp]):
    """Serves transcriptions in arrival order until shutdown or the end of stdin."""

    _ROLE = "transcriber"

    def __init__(self, runner: WhisperRunner, out: EventWriter, inbox: Inbox[Request]):
        super().__init__(WIRE, TranscribeOp, out, inbox)
        self._runner = runner

    def _perform(self, op: TranscribeOp) -> None:
        started = time.perf_counter()
        job = self._runner.start(op.request)
        say(f"request {op.id}: {job.duration:.1f} s of audio, language {job.language}")
        info = TranscriptionInfo(
            op.id, job.language, job.language_probability, job.duration, job.duration_after_vad
        )
        self._out.send(info)
        count = 0
        while not self._stopping():
            segment = next(job.segments, None)
            if segment is None:
                seconds = time.perf_counter() - started
                duration = job.recording.seconds or job.duration
                self._out.send(TranscriptionDone(op.id, duration, seconds, count))
                return
            self._out.send(segment_event(op.id, count, segment))
            count += 1
        why = "cancelled" if self._cancelled else "stopped: the runner is exiting"
        say(f"request {op.id} {why} after {count} segments")
