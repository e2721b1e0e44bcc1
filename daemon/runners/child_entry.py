"""How a one-request-at-a-time runner process (``python -m <its worker>``) begins and ends: it
claims stdout for frames, reads its spec as the first frame, loads, reports ready (or fatal),
serves until the daemon is done with it, and leaves without teardown.

Importing this module imports nothing heavy, so a worker's ``__main__`` can claim stdout
before its model library is loaded (and prints to it).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from .child_frames import FatalEv
from .child_loop import EventWriter, Inbox, RequestServer, start_reader
from .protocol import FrameReader
from .typed_frames import FrameCodec, ProtocolError, Tagged

__all__ = ["LoadError", "claim_stdout", "exit_now", "read_spec", "run_main", "serve_child"]

_SpecOp = TypeVar("_SpecOp")
_Loaded = TypeVar("_Loaded")
_Request = TypeVar("_Request", bound=Tagged)


class LoadError(Exception):
    """The model cannot be loaded; the message says why in words a user can act on."""


def claim_stdout() -> int:
    """Keep the real stdout for frames and point fd 1 at stderr, so no stray print (ours or
    native code's) can corrupt the protocol; the model library's warnings (``logging``) go
    to stderr too, the runner log. Ctrl-C is ignored: the daemon decides when a runner ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return fd


def read_spec(
    reader: FrameReader,
    decode: Callable[[Any], object],
    spec_op: type[_SpecOp],
    say: Callable[[str], None],
) -> _SpecOp | None:
    """The first frame, which must be ``spec_op`` (None, said in the log, if it is not)."""
    first = reader.read()
    request: object
    try:
        request = None if first is None else decode(first)
    except ProtocolError as exc:
        request = exc
    if not isinstance(request, spec_op):
        say(f"expected a spec frame first, not {request}")
        return None
    return request


def serve_child(
    out_fd: int,
    codec: FrameCodec[_Request, Any],
    spec_op: type[_SpecOp],
    *,
    load: Callable[[_SpecOp], _Loaded],
    ready: Callable[[_Loaded], Tagged],
    server: Callable[[_Loaded, EventWriter, Inbox[_Request]], RequestServer[_Request, Any]],
    say: Callable[[str], None],
) -> int:
    """A worker's life after it claimed stdout (``out_fd``): its spec (a ``spec_op``) first,
    then ``load`` it (a LoadError is sent as fatal), send ``ready``'s event and serve with
    ``server`` until the end. Returns the exit code."""
    out = EventWriter(out_fd, codec.encode)
    reader = FrameReader(sys.stdin.buffer)
    request = read_spec(reader, codec.decode_request, spec_op, say)
    if request is None:
        return 2
    try:
        loaded = load(request)
    except LoadError as exc:  # the daemon's error names it, with the lines above
        out.send(FatalEv(str(exc)))
        return 1
    out.send(ready(loaded))
    server(loaded, out, start_reader(reader, codec.decode_request)).run()
    return 0


def exit_now(code: int) -> NoReturn:
    """Leave without interpreter or native teardown: nothing is left to save, and freeing a
    model on a GPU takes time (CTranslate2 may hang there in a dying process)."""
    sys.stderr.flush()
    os._exit(code)


def run_main(main: Callable[[], int]) -> NoReturn:
    """Run a worker's ``main`` and exit with its code (1, with the traceback, if it raised)."""
    try:
        exit_now(main())
    except BaseException:
        traceback.print_exc()
        exit_now(1)
