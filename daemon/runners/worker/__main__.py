"""Entry point: ``python -m localllm.daemon.runners.worker`` (spec as the first frame on stdin)."""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import time
import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the modules themselves load once stdout is claimed (``main``)
    from ..protocol import FrameReader, FrameWriter
    from ..types import RunnerSpec

__all__ = ["main"]


def _claim_stdout() -> int:
    """Keep the real stdout for frames and point fd 1 at stderr, so no stray print (ours or
    native code's) can corrupt the protocol."""
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return fd


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the daemon decides when a runner ends
    out_fd = _claim_stdout()
    from ..frames import LoadingEv, ProtocolError, Request, SpecOp, decode_request
    from ..protocol import FrameReader, FrameWriter

    out = FrameWriter(out_fd)
    reader = FrameReader(sys.stdin.buffer)
    first = reader.read()
    request: Request | ProtocolError | None
    try:
        request = None if first is None else decode_request(first)
    except ProtocolError as exc:
        request = exc
    if not isinstance(request, SpecOp):
        print(f"runner: expected a spec frame first, not {request}", file=sys.stderr)
        return 2
    spec = request.spec
    out.send(LoadingEv())
    out.flush()
    return _serve(spec, reader, out, verbose="--verbose" in argv)


def _serve(spec: RunnerSpec, reader: FrameReader, out: FrameWriter, verbose: bool) -> int:
    started = time.perf_counter()
    import llama_cpp as lc

    from ..frames import FatalEv, ReadyEv
    from .loop import Worker, start_reader
    from .model import LoadError, Model
    from .system import LogRouter, default_threads, describe, say

    router = LogRouter(verbose)  # llama.cpp calls it until the process exits
    say(f"loading {spec.model_name} from {', '.join(spec.model_paths)}")
    lc.llama_backend_init()
    threads = spec.num_threads or default_threads()
    try:
        model = Model.load(spec)
        positions = model.context_within_positions(spec.num_ctx)
        if positions < spec.num_ctx:
            say(f"context capped at {positions} tokens: the model's learned position table")
            spec = dataclasses.replace(spec, num_ctx=positions)
        worker = Worker(spec, model, threads, out, router.ledger)
        worker.warm_up()
    except LoadError as exc:
        out.send(FatalEv(str(exc), exc.invalid_request))
        out.flush()
        return 1
    info = describe(spec, model, time.perf_counter() - started, router.ledger)
    say(
        f"ready in {info.load_seconds:.2f} s: {info.backend}, {threads} threads, "
        f"{info.gpu_layers}/{info.total_layers} layers on GPU, "
        f"context {spec.num_ctx} x {spec.num_parallel} slots, {info.memory_bytes >> 20} MiB"
    )
    out.send(ReadyEv(info))
    out.flush()
    worker.run(start_reader(reader))
    return 0


def _exit_now(code: int) -> None:
    """Leave without interpreter or native teardown: nothing is left to save, freeing a large
    model takes time, and llama.cpp may log from static destructors after Python is gone."""
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    try:
        _exit_now(main())
    except BaseException:
        traceback.print_exc()
        _exit_now(1)
