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
from collections.abc import Callable
from typing import Any, TypeAlias

from ..frames import (
    CancelOp,
    EmbedOp,
    ErrorEv,
    GenerateOp,
    ProtocolError,
    Request,
    RerankOp,
    ResultEv,
    ShutdownOp,
    StatusOp,
    TokenizeOp,
    decode_request,
)
from ..protocol import FrameReader, FrameWriter
from ..types import InvalidRequestError, RerankCall, RunnerError, RunnerSpec
from .buffers import BufferLedger
from .embedder import Embedder
from .engine import Engine
from .model import Model
from .system import resident_bytes
from .vision import Vision

__all__ = ["Worker", "start_reader"]

_EOF = None
# What the reader thread hands the loop: requests, then ``_EOF``; a ProtocolError to raise.
Inbox: TypeAlias = queue.SimpleQueue[Request | ProtocolError | None]
_ORPHAN_GRACE_SECONDS = 30.0  # after stdin closes, how long the loop gets to exit by itself
_GATHER_SECONDS = 0.005  # after a request wakes an idle engine: the wait for another one
_GATHER_MOST_SECONDS = 0.02  # and for all of them together


def start_reader(reader: FrameReader) -> Inbox:
    """Read requests on a daemon thread into a queue; ``None`` in the queue means stdin
    closed, a :class:`ProtocolError` that the daemon sent what is no request (the loop raises
    it: a bug to see in the runner's log, not a frame to guess the meaning of)."""
    inbox: Inbox = queue.SimpleQueue()

    def pump() -> None:
        try:
            while (message := reader.read()) is not None:
                inbox.put(decode_request(message))
        except ProtocolError as exc:
            inbox.put(exc)
        finally:
            inbox.put(_EOF)
        time.sleep(_ORPHAN_GRACE_SECONDS)
        os._exit(3)  # the main loop is stuck: do not outlive the daemon

    threading.Thread(target=pump, name="stdin-reader", daemon=True).start()
    return inbox


class Worker:
    """Dispatches the protocol's requests to the generation engine and the embedder."""

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
        self._handlers: dict[type, Callable[[Any], None]] = {
            GenerateOp: self._generate,
            CancelOp: self._cancel,
            EmbedOp: self._embed,
            RerankOp: self._rerank,
            TokenizeOp: self._tokenize,
            StatusOp: self._status,
        }

    def warm_up(self) -> None:
        if self.engine is not None:
            self.engine.warm_up()

    def run(self, inbox: Inbox) -> None:
        """Serve until stdin closes or the daemon says to stop; then what the slots hold
        goes to the prompt cache on disk."""
        self._serve(inbox)
        if self.engine is not None:
            self.engine.close()

    def _serve(self, inbox: Inbox) -> None:
        while True:
            idle = not (self.embedder.busy or (self.engine and self.engine.busy))
            if not self._drain(inbox, block=idle):
                return
            if idle and self.engine is not None and not self._gather(self.engine, inbox):
                return
            if self.engine is not None and self.engine.busy:
                self.engine.step()
            if self.embedder.busy:
                self.embedder.step()
            self.out.flush()
            if self.engine is not None and not self.engine.busy:
                self.engine.host.save_free(self.engine.slots)

    def _drain(self, inbox: Inbox, block: bool) -> bool:
        """Handle every waiting message; False when it is time to exit."""
        try:
            message = inbox.get(block=block)
        except queue.Empty:
            return True
        while True:
            if (request := _request_in(message)) is None:
                return False
            self._handle(request)
            try:
                message = inbox.get_nowait()
            except queue.Empty:
                self.out.flush()
                return True

    def _gather(self, engine: Engine, inbox: Inbox) -> bool:
        """While the requests that woke ``engine`` leave slots free, take the ones that
        follow within ``_GATHER_SECONDS`` of each other; False when it is time to exit."""
        deadline = time.monotonic() + _GATHER_MOST_SECONDS
        while engine.waiting and not engine.active and len(engine.waiting) < len(engine.slots):
            wait = min(_GATHER_SECONDS, deadline - time.monotonic())
            if wait <= 0:
                return True
            try:
                message = inbox.get(timeout=wait)
            except queue.Empty:
                return True
            if (request := _request_in(message)) is None:
                return False
            self._handle(request)
        return True

    def _handle(self, request: Request) -> None:
        handler = self._handlers.get(type(request))
        rid = getattr(request, "id", 0)
        try:
            if handler is None:  # a spec after the first frame
                raise RunnerError(f"unexpected {request.TAG!r} request")
            handler(request)
        except RunnerError as exc:
            self.out.send(ErrorEv.of(rid, exc))

    def _generate(self, request: GenerateOp) -> None:
        if self.engine is None:
            raise RunnerError(f"{self.spec.model_name} is an embedding model; it cannot generate")
        self.engine.submit(request.id, request.req)

    def _cancel(self, request: CancelOp) -> None:
        if self.engine is not None:
            self.engine.cancel(request.id)
        self.embedder.cancel(request.id)

    def _embed(self, request: EmbedOp) -> None:
        inputs = list(request.inputs)
        self.embedder.submit(request.id, inputs, request.normalize, request.truncate)

    def _rerank(self, request: RerankOp) -> None:
        if not self.spec.embedding_only:
            raise InvalidRequestError(f"{self.spec.model_name} is not a reranker; it generates")
        call = RerankCall(request.query, request.documents, request.truncate)
        self.embedder.submit_rerank(request.id, call)

    def _tokenize(self, request: TokenizeOp) -> None:
        tokens = self.model.tokenize(request.text, request.add_bos, request.special)
        self.out.send(ResultEv(request.id, tokens))

    def _status(self, request: StatusOp) -> None:
        status = self.engine.status() if self.engine else {"slots": 0, "busy": 0, "queued": 0}
        status["embedding_queued"] = int(self.embedder.busy)
        status["memory_bytes"] = resident_bytes()
        self.out.send(ResultEv(request.id, status))


def _request_in(message: Request | ProtocolError | None) -> Request | None:
    """The request to handle in ``message`` (from ``start_reader``'s queue); None when it
    ends the loop. Raises the error."""
    if isinstance(message, ProtocolError):
        raise message
    if message is _EOF or isinstance(message, ShutdownOp):
        return None
    return message
