"""llama.cpp's own buffers for a model and runner spec, measured in this process exactly as the
runner allocates them: the model loaded by the runner's ``Model``, its generation context made
by the runner's ``Engine`` (one thread), and every buffer llama.cpp logs read by the runner's
``BufferLedger`` through its ``LogRouter``. What a memory plan is checked against.

A model is loaded once for many contexts (a 262k vocabulary takes half a second to load):
:class:`MeasuredModel` keeps the model's buffers and adds each context's."""

from __future__ import annotations

import dataclasses
import functools
import tempfile

from localllm.daemon.runners.types import LlamaBuffer, RunnerSpec

__all__ = ["MeasuredModel", "measure_buffers"]


@functools.cache
def _router():
    """llama.cpp's log callback is the process's: installed once, its ledger swapped per load."""
    import llama_cpp

    from localllm.daemon.runners.worker.system import LogRouter

    llama_cpp.llama_backend_init()
    return LogRouter()


class MeasuredModel:
    """A model loaded as the runner loads it (with ``spec``), and its buffers."""

    def __init__(self, spec: RunnerSpec):
        from localllm.daemon.runners.worker.buffers import BufferLedger
        from localllm.daemon.runners.worker.model import Model

        router = _router()
        router.ledger = ledger = BufferLedger()
        self.model = Model.load(spec)
        self.buffers = ledger.buffers()

    def context(self, spec: RunnerSpec) -> tuple[tuple[LlamaBuffer, ...], str]:
        """The model's buffers and those of a generation context made for ``spec`` (its
        context, slots, batch, cache type and flash attention; the same model files), and the
        flash attention the context was given ("on", "off" or llama.cpp's "auto")."""
        import llama_cpp

        from localllm.daemon.runners.protocol import FrameWriter
        from localllm.daemon.runners.worker.buffers import BufferLedger
        from localllm.daemon.runners.worker.engine import Engine

        if spec.model_paths != self.model.spec.model_paths:
            raise ValueError("a context of another model")
        self.model.spec = dataclasses.replace(spec)  # what the model's contexts are made with
        router = _router()
        router.ledger = ledger = BufferLedger()
        with tempfile.TemporaryFile() as sink:
            ledger.begin("context")
            engine = Engine(self.model, spec, 1, FrameWriter(sink.fileno()), None, ledger)
            llama_cpp.llama_free(engine.ctx)
        return self.buffers + ledger.buffers(), self.model.attention

    def close(self) -> None:
        self.model.close()


def measure_buffers(spec: RunnerSpec) -> tuple[tuple[LlamaBuffer, ...], str]:
    """:meth:`MeasuredModel.context` for one spec, its model loaded for it and freed."""
    measured = MeasuredModel(spec)
    try:
        return measured.context(spec)
    finally:
        measured.close()
