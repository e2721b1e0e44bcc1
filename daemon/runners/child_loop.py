"""A one-request-at-a-time runner's loop: requests in the order they came, each streamed back
step by step (a segment, a sentence) as soon as it is made.

A thread reads stdin so that a cancel (or the next request) arrives while a step is being
made; the loop looks at what came between steps, so a cancel stops a running request before
its next step and drops a queued one at once. When stdin closes (the daemon exited or died)
the runner exits: it never lingers as an orphan. Used by the transcription and speech
workers; it imports none of their libraries.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
import traceback
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from typing import Any, ClassVar, Generic, TypeAlias, TypeVar

from .child_frames import CancelOp, ChildWire, ShutdownOp, Work
from .protocol import FrameReader, encode_frame
from .typed_frames import ProtocolError, Tagged

__all__ = ["EventWriter", "Inbox", "RequestFailure", "RequestServer", "say_as", "start_reader"]

_Request = TypeVar("_Request", bound=Tagged)
_Work = TypeVar("_Work", bound=Work)
# What the reader thread hands the loop: requests, then None (stdin closed); a ProtocolError
# (the daemon sent what is no request) is raised by the loop, a bug to see in the log
Inbox: TypeAlias = queue.SimpleQueue[_Request | ProtocolError | None]
_ORPHAN_GRACE_SECONDS = 30.0  # after stdin closes, how long the loop gets to exit by itself


def say_as(role: str, text: str) -> None:
    """One line of the runner's own in its log (stderr, which the daemon keeps)."""
    print(f"{role}[{os.getpid()}]: {text}", file=sys.stderr, flush=True)


def start_reader(reader: FrameReader, decode: Callable[[Any], _Request]) -> Inbox[_Request]:
    """Read requests on a daemon thread into a queue, then None when stdin closes."""
    inbox: Inbox[_Request] = queue.SimpleQueue()

    def pump() -> None:
        try:
            while (message := reader.read()) is not None:
                inbox.put(decode(message))
        except (ProtocolError, ValueError) as exc:  # ValueError: a frame that is not JSON
            inbox.put(ProtocolError(str(exc)))
        finally:
            inbox.put(None)
        time.sleep(_ORPHAN_GRACE_SECONDS)
        os._exit(3)  # the loop is stuck inside a step: do not outlive the daemon

    threading.Thread(target=pump, name="stdin-reader", daemon=True).start()
    return inbox


class EventWriter:
    """Events to the daemon, each written at once: a step is streamed on as it is made."""

    def __init__(self, fd: int, encode: Callable[[Tagged], dict[str, Any]]):
        self._fd = fd
        self._encode = encode

    def send(self, event: Tagged) -> None:
        data = memoryview(encode_frame(self._encode(event)))
        while data:
            data = data[os.write(self._fd, data) :]


class RequestFailure(Exception):
    """A request the runner cannot serve, and why: raised where it is found, answered by the
    loop as an error event of its ``kind`` while the runner goes on serving. Each runner
    narrows ``kind`` to its own ``ErrorKind``."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class RequestServer(ABC, Generic[_Request, _Work]):
    """Serves ``work`` requests in arrival order until shutdown or the end of stdin; a
    subclass says how one is served (:meth:`_perform`) and signs its log lines (``_ROLE``)."""

    _ROLE: ClassVar[str]  # "transcriber": its log lines read "transcriber[<pid>]: ..."

    def __init__(
        self,
        wire: ChildWire[Any, Any, _Request, Any],
        work: type[_Work],
        out: EventWriter,
        inbox: Inbox[_Request],
    ):
        self._wire = wire
        self._work = work
        self._out = out
        self._inbox = inbox
        self._queued: deque[_Work] = deque()
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

    @abstractmethod
    def _perform(self, op: _Work) -> None:
        """Serve ``op``, sending its events; stop early where :meth:`_stopping` says so."""

    def _say(self, text: str) -> None:
        say_as(self._ROLE, text)

    def _stopping(self) -> bool:
        """Whether the running request is to stop here (its cancel, or the runner's end)."""
        self._take(block=False)
        return self._cancelled or self._exiting

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

    def _handle(self, message: _Request | ProtocolError | None) -> None:
        if isinstance(message, ProtocolError):
            raise message
        if message is None or isinstance(message, ShutdownOp):
            self._exiting = True
        elif isinstance(message, self._work):
            self._queued.append(message)
        elif isinstance(message, CancelOp):
            self._cancel(message.id)
        else:  # a spec after the first frame
            self._say(f"ignored an unexpected {message.TAG!r} request")

    def _cancel(self, rid: int) -> None:
        if rid == self._running:
            self._cancelled = True
            return
        queued = [op for op in self._queued if op.id != rid]
        if len(queued) < len(self._queued):
            self._queued = deque(queued)
            self._say(f"request {rid} cancelled before it started")

    def _serve(self, op: _Work) -> None:
        self._running, self._cancelled = op.id, False
        try:
            self._perform(op)
        except RequestFailure as exc:
            self._out.send(self._wire.error(op.id, exc.kind, str(exc)))
        except ProtocolError:  # the daemon's bug, not this request's: the runner ends
            raise
        except Exception as exc:  # the log keeps the traceback; the runner serves the next
            traceback.print_exc()
            self._out.send(self._wire.error(op.id, "internal", f"{type(exc).__name__}: {exc}"))
        finally:
            self._running = None
