"""The runner's main loop: take the daemon's messages, then run one decode step, repeat.

A thread reads stdin so messages (a cancel, a new request) arrive while a step runs; the loop
picks them up between steps. When stdin closes (the daemon exited or died) the runner exits:
it never lingers as an orphan.

Requests that come together (a client's parallel calls) start together: when one wakes an idle
engine, the loop waits a few milliseconds for the next before the first decode, so their
prompts share one batch. One prompt alone costs 25-40% more per token than four in a batch
(Gemma 3 270M, the generated bench model), and the later ones would otherwise wait for it.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from typing import Any

from ..protocol import FrameReader, FrameWriter, error_to_wire, generate_from_wire
from ..types import InvalidRequestError, RerankCall, RunnerError, RunnerSpec
from .buffers import BufferLedger
from .embedder import Embedder
from .engine import Engine
from .model import Model
from .system import resident_bytes
from .vision import Vision

__all__ = ["Worker", "start_reader"]

_EOF = None
_ORPHAN_GRACE_SECONDS = 30.0  # after stdin closes, how long the loop gets to exit by itself
_GATHER_SECONDS = 0.005  # after a request wakes an idle engine: the wait for another one
_GATHER_MOST_SECONDS = 0.02  # and for all of them together


def start_reader(reader: FrameReader) -> queue.SimpleQueue:
    """Read frames on a daemon thread into a queue; ``None`` in the queue means stdin closed."""
    inbox: queue.SimpleQueue = queue.SimpleQueue()

    def pump() -> None:
        try:
            while (message := reader.read()) is not None:
                inbox.put(message)
        finally:
            inbox.put(_EOF)
        time.sleep(_ORPHAN_GRACE_SECONDS)
        os._exit(3)  # the main loop is stuck: do not outlive the daemon

    threading.Thread(target=pump, name="stdin-reader", daemon=True).start()
    return inbox


class Worker:
    """Dispatches the protocol's ops to the generation engine and the embedder."""

    def __init__(
        self,
        spec: RunnerSpec,
        model: Model,
        threads: int,
        out: FrameWriter,
        ledger: BufferLedger | None = None,
    ):
        """``ledger`` is told which part each of llama.cpp's allocations is for."""
        self.spec = spec
        self.model = model
        self.out = out
        ledger = ledger or BufferLedger()
        vision = None
        if spec.projector_path and not spec.embedding_only:
            ledger.begin("projector")
            vision = Vision(model, spec.projector_path, threads, spec.num_gpu_layers != 0)
        self.engine = None
        if not spec.embedding_only:
            ledger.begin("context")
            self.engine = Engine(model, spec, threads, out, vision, ledger)
        self.embedder = Embedder(model, spec, threads, out)
        if spec.embedding_only:
            ledger.begin("context")
            self.embedder.open()

    def warm_up(self) -> None:
        if self.engine is not None:
            self.engine.warm_up()

    def run(self, inbox: queue.SimpleQueue) -> None:
        while True:
            idle = not (self.embedder.busy or (self.engine and self.engine.busy))
            if not self._drain(inbox, block=idle):
                return
            if idle and self.engine is not None and not self._gather(inbox):
                return
            if self.engine is not None and self.engine.busy:
                self.engine.step()
            if self.embedder.busy:
                self.embedder.step()
            self.out.flush()
            if self.engine is not None and not self.engine.busy:
                self.engine.host.save_free(self.engine.slots)

    def _drain(self, inbox: queue.SimpleQueue, block: bool) -> bool:
        """Handle every waiting message; False when it is time to exit."""
        try:
            message = inbox.get(block=block)
        except queue.Empty:
            return True
        while True:
            if message is _EOF or message.get("op") == "shutdown":
                return False
            self._handle(message)
            try:
                message = inbox.get_nowait()
            except queue.Empty:
                self.out.flush()
                return True

    def _gather(self, inbox: queue.SimpleQueue) -> bool:
        """While the requests that woke the engine leave slots free, take the ones that
        follow within ``_GATHER_SECONDS`` of each other; False when it is time to exit."""
        engine = self.engine
        deadline = time.monotonic() + _GATHER_MOST_SECONDS
        while engine.waiting and not engine.active and len(engine.waiting) < len(engine.slots):
            wait = min(_GATHER_SECONDS, deadline - time.monotonic())
            if wait <= 0:
                return True
            try:
                message = inbox.get(timeout=wait)
            except queue.Empty:
                return True
            if message is _EOF or message.get("op") == "shutdown":
                return False
            self._handle(message)
        return True

    def _handle(self, message: dict[str, Any]) -> None:
        op, rid = message.get("op"), message.get("id", 0)
        handler = getattr(self, f"_op_{op}", None)
        try:
            if handler is None:
                raise RunnerError(f"unknown operation {op!r}")
            handler(rid, message)
        except RunnerError as exc:
            self.out.send(error_to_wire(rid, exc))

    def _op_generate(self, rid: int, message: dict[str, Any]) -> None:
        if self.engine is None:
            raise RunnerError(f"{self.spec.model_name} is an embedding model; it cannot generate")
        self.engine.submit(rid, generate_from_wire(message["req"]))

    def _op_cancel(self, rid: int, message: dict[str, Any]) -> None:
        if self.engine is not None:
            self.engine.cancel(rid)
        self.embedder.cancel(rid)

    def _op_embed(self, rid: int, message: dict[str, Any]) -> None:
        inputs = list(message["inputs"])
        self.embedder.submit(rid, inputs, message["normalize"], message["truncate"])

    def _op_rerank(self, rid: int, message: dict[str, Any]) -> None:
        if not self.spec.embedding_only:
            raise InvalidRequestError(f"{self.spec.model_name} is not a reranker; it generates")
        call = RerankCall(str(message["query"]), tuple(message["documents"]), message["truncate"])
        self.embedder.submit_rerank(rid, call)

    def _op_tokenize(self, rid: int, message: dict[str, Any]) -> None:
        tokens = self.model.tokenize(message["text"], message["add_bos"], message["special"])
        self._result(rid, tokens)

    def _op_status(self, rid: int, message: dict[str, Any]) -> None:
        status = self.engine.status() if self.engine else {"slots": 0, "busy": 0, "queued": 0}
        status["embedding_queued"] = int(self.embedder.busy)
        status["memory_bytes"] = resident_bytes()
        self._result(rid, status)

    def _result(self, rid: int, value: Any) -> None:
        self.out.send({"ev": "result", "id": rid, "value": value})
