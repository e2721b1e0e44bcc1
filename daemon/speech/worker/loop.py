"""The speech runner's loop: requests in the order they came, one at a time, each sentence's
audio sent on as soon as the voice has made it.

A thread reads stdin so that a cancel (or the next request) arrives while a sentence is being
spoken; the loop looks at what came between sentences, so a cancel stops a running request
before its next sentence and drops a queued one at once. When stdin closes (the daemon exited
or died) the runner exits: it never lingers as an orphan.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
import traceback
from collections import deque
from typing import TypeAlias

from ...runners.protocol import FrameReader, encode_frame
from ..frames import (
    AudioChunk,
    CancelOp,
    ErrorEv,
    Event,
    ProtocolError,
    Request,
    ShutdownOp,
    SpeakOp,
    SpeechDone,
    decode_request,
    encode,
)
from .voice import PiperSpeaker, RequestFailure

__all__ = ["EventWriter", "Inbox", "Server", "say", "start_reader"]

# What the reader thread hands the loop: requests, then None (stdin closed); a ProtocolError
# (the daemon sent what is no request) is raised by the loop, a bug to see in the log
Inbox: TypeAlias = queue.SimpleQueue[Request | ProtocolError | None]
_ORPHAN_GRACE_SECONDS = 30.0  # after stdin closes, how long the loop gets to exit by itself
_CHUNK_BYTES = 1 << 20  # at most this much audio a frame (24 s at 22,050 Hz): frames stay small


def say(text: str) -> None:
    """One line of the runner's own in its log (stderr, which the daemon keeps)."""
    print(f"speaker[{os.getpid()}]: {text}", file=sys.stderr, flush=True)


def start_reader(reader: FrameReader) -> Inbox:
    """Read requests on a daemon thread into a queue, then None when stdin closes."""
    inbox: Inbox = queue.SimpleQueue()

    def pump() -> None:
        try:
            while (message := reader.read()) is not None:
                inbox.put(decode_request(message))
        except (ProtocolError, ValueError) as exc:  # ValueError: a frame that is not JSON
            inbox.put(ProtocolError(str(exc)))
        finally:
            inbox.put(None)
        time.sleep(_ORPHAN_GRACE_SECONDS)
        os._exit(3)  # the loop is stuck inside a sentence: do not outlive the daemon

    threading.Thread(target=pump, name="stdin-reader", daemon=True).start()
    return inbox


class EventWriter:
    """Events to the daemon, each written at once: audio is streamed on as it is made."""

    def __init__(self, fd: int):
        self._fd = fd

    def send(self, event: Event) -> None:
        data = memoryview(encode_frame(encode(event)))
        while data:
            data = data[os.write(self._fd, data) :]


class Server:
    """Serves speech requests in arrival order until shutdown or the end of stdin."""

    def __init__(self, speaker: PiperSpeaker, out: EventWriter, inbox: Inbox):
        self._speaker = speaker
        self._out = out
        self._inbox = inbox
        self._queued: deque[SpeakOp] = deque()
        self._running: int | None = None
        self._cancelled = False  # the running request's
        self._exiting = False

    def run(self) -> None:
        while True:
            self._take(block=not self._queued)
            if self._exiting:
                return
            if self._queued:
                self._serve(self._queued.popleft())

    def _take(self, block: bool) -> None:
        """Handle every message waiting (waiting for one if ``block``)."""
        try:
            message = self._inbox.get(block=block)
        except queue.Empty:
            return
        while True:
            self._handle(message)
            try:
                message = self._inbox.get_nowait()
            except queue.Empty:
                return

    def _handle(self, message: Request | ProtocolError | None) -> None:
        if isinstance(message, ProtocolError):
            raise message
        if message is None or isinstance(message, ShutdownOp):
            self._exiting = True
        elif isinstance(message, SpeakOp):
            self._queued.append(message)
        elif isinstance(message, CancelOp):
            self._cancel(message.id)
        else:  # a spec after the first frame
            say(f"ignored an unexpected {message.TAG!r} request")

    def _cancel(self, rid: int) -> None:
        if rid == self._running:
            self._cancelled = True
            return
        queued = [op for op in self._queued if op.id != rid]
        if len(queued) < len(self._queued):
            self._queued = deque(queued)
            say(f"request {rid} cancelled before it started")

    def _stopping(self) -> bool:
        """Whether the running request is to stop here (its cancel, or the runner's end)."""
        self._take(block=False)
        return self._cancelled or self._exiting

    def _serve(self, op: SpeakOp) -> None:
        self._running, self._cancelled = op.id, False
        try:
            self._speak(op)
        except RequestFailure as exc:
            self._out.send(ErrorEv(op.id, exc.kind, str(exc)))
        except ProtocolError:  # the daemon's bug, not this request's: the runner ends
            raise
        except Exception as exc:  # the log keeps the traceback; the runner serves the next
            traceback.print_exc()
            self._out.send(ErrorEv(op.id, "internal", f"{type(exc).__name__}: {exc}"))
        finally:
            self._running = None

    def _speak(self, op: SpeakOp) -> None:
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
