"""Entry point: ``python -m localllm.daemon.speech.worker`` (spec as the first frame)."""

from __future__ import annotations

import logging
import os
import signal
import sys
import traceback

__all__ = ["main"]


def _claim_stdout() -> int:
    """Keep the real stdout for frames and point fd 1 at stderr, so no stray print (ours or
    native code's) can corrupt the protocol."""
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return fd


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the daemon decides when a runner ends
    out_fd = _claim_stdout()
    # Piper's and onnxruntime's warnings belong in the runner log
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    from ...runners.protocol import FrameReader
    from ..frames import FatalEv, ProtocolError, ReadyEv, Request, SpecOp, decode_request
    from .loop import EventWriter, Server, say, start_reader
    from .voice import LoadError, PiperSpeaker

    out = EventWriter(out_fd)
    reader = FrameReader(sys.stdin.buffer)
    first = reader.read()
    request: Request | ProtocolError | None
    try:
        request = None if first is None else decode_request(first)
    except ProtocolError as exc:
        request = exc
    if not isinstance(request, SpecOp):
        say(f"expected a spec frame first, not {request}")
        return 2
    spec = request.spec
    say(f"loading {spec.model_path} ({spec.device})")
    try:
        speaker = PiperSpeaker.load(spec)
    except LoadError as exc:  # the daemon's error names it, with the lines above
        out.send(FatalEv(str(exc)))
        return 1
    info = speaker.describe()
    say(
        f"ready in {info.load_seconds:.2f} s on {info.device}, {info.sample_rate} Hz "
        f"{info.language}, {info.memory_bytes >> 20} MiB"
    )
    out.send(ReadyEv(info))
    Server(speaker, out, start_reader(reader)).run()
    return 0


def _exit_now(code: int) -> None:
    """Leave without interpreter or native teardown: nothing is left to save."""
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    try:
        _exit_now(main())
    except BaseException:
        traceback.print_exc()
        _exit_now(1)
