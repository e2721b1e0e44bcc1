"""Pooled embeddings, in a context of their own so they never disturb the generation slots.

For an embedding model this is the runner's only context and uses the model's own pooling;
for a generative model it is created on first use (mean pooling) on the same weights. Each
loop turn embeds one packed batch of inputs, so a long list does not stall running streams.

A reranker (a model whose pooling is llama.cpp's rank: a classification head on the pooled
state) scores query-document pairs the same way: each pair is one sequence of the batch, and
its score is the head's first output, as llama-server reports it. A request's pairs are
counted when it comes (``pairs``: its limit and refusals come before any decode), but each is
made again only when its batch is (tokenizing costs far less than decoding): a request holds
the tokens of one batch at a time, and a cancel (between two steps) drops it at once. Jobs
take turns, a batch each, so a long one does not hold up a short one behind it.
"""

from __future__ import annotations

import base64
import os
import sys
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import llama_cpp as lc
import numpy as np

from ..frames import EmbeddingEv, ResultEv
from ..protocol import FrameWriter
from ..types import ContextOverflowError, InvalidRequestError, RerankCall, RunnerSpec
from .batch import Batch
from .model import ContextConfig, Model
from .pairs import PairFormat

__all__ = ["Embedder"]

_MAX_SEQUENCES = 16  # inputs packed into one decode
# A generative model's embedding context decodes a whole input in one ubatch, and llama.cpp
# sizes its compute buffer for that many rows of logits: a 262k vocabulary at 32k tokens is
# 33 GB. Its inputs stay within the old default context, whatever the chats run at.
_GENERATIVE_MAX_CONTEXT = 4096


@dataclass(eq=False)
class _EmbedJob:
    rid: int
    count: int  # inputs
    make: Callable[[int], list[int]]  # input i's tokens (a rerank pair is made here, late)
    tokens: int  # all inputs' tokens together
    normalize: bool
    scores: list[float] | None = None  # a rerank job's, as they come; None: embeddings
    truncated: list[int] = field(default_factory=list)  # inputs cut to fit the context
    done: int = 0
    waiting: list[int] | None = None  # input ``done``, made but left for the next batch


class Embedder:
    def __init__(self, model: Model, spec: RunnerSpec, threads: int, out: FrameWriter):
        self.model = model
        self._native = spec.embedding_only
        self.n_ctx = spec.num_ctx if self._native else min(spec.num_ctx, _GENERATIVE_MAX_CONTEXT)
        self._threads = threads
        self._out = out
        self._ctx: lc.llama_context_p | None = None  # both made by :meth:`open`
        self._batch: Batch | None = None
        self._jobs: deque[_EmbedJob] = deque()
        self._pairs: PairFormat | None = None
        self.ranks = False  # the context pools with a classification head (a reranker)
        self._width = model.n_embd_out  # floats a pooled sequence gives

    @property
    def busy(self) -> bool:
        return bool(self._jobs)

    def open(self) -> None:
        """Create the context now (embedding models load it before reporting ready)."""
        if self._ctx is not None:
            return
        pooling = lc.LLAMA_POOLING_TYPE_UNSPECIFIED if self._native else lc.LLAMA_POOLING_TYPE_MEAN
        # A unified cache: with one cache per sequence llama.cpp splits a batch of inputs into
        # equal-length parts, and a longer input is pooled over its last part only.
        config = ContextConfig(
            self.n_ctx, _MAX_SEQUENCES, self.n_ctx, self._threads, True, pooling, unified_kv=True
        )
        ctx = self.model.new_context(config)
        if lc.llama_pooling_type(ctx) == lc.LLAMA_POOLING_TYPE_NONE:
            lc.llama_free(ctx)
            ctx = self.model.new_context(replace(config, pooling=lc.LLAMA_POOLING_TYPE_MEAN))
        self._ctx = ctx
        self._batch = Batch(self.n_ctx)
        self.ranks = lc.llama_pooling_type(ctx) == lc.LLAMA_POOLING_TYPE_RANK
        if self.ranks:
            self._width = lc.llama_model_n_cls_out(self.model.handle)

    def submit(self, rid: int, inputs: list[str], normalize: bool, truncate: bool) -> None:
        self.open()
        if self.ranks:
            raise InvalidRequestError(
                f"{self.model.spec.model_name} is a reranker; it scores documents, it cannot embed"
            )
        tokenized = []
        for text in inputs:
            if truncate:  # only the start counts: never tokenize more than it
                text = self.model.head(text, self.n_ctx)
            most = None if truncate else self.n_ctx
            tokens = self.model.tokenize(text, add_bos=True, special=True, most=most)
            if len(tokens) > self.n_ctx:
                if not truncate:
                    raise ContextOverflowError(len(tokens), self.n_ctx)
                tokens = tokens[: self.n_ctx]
            if not tokens:
                raise InvalidRequestError("cannot embed an empty input")
            tokenized.append(tokens)
        total = sum(len(tokens) for tokens in tokenized)
        self._enqueue(_EmbedJob(rid, len(tokenized), tokenized.__getitem__, total, normalize))

    def submit_rerank(self, rid: int, call: RerankCall) -> None:
        """Queue the query-document pairs of ``call``; a model that is no reranker is refused."""
        self.open()
        if not self.ranks:
            raise InvalidRequestError(
                f"{self.model.spec.model_name} is not a reranker (its GGUF has no rank pooling)"
            )
        if self._pairs is None:
            self._pairs = PairFormat(self.model, self.n_ctx)
        pairs = self._pairs.query(call.query)
        documents, truncate = call.documents, call.truncate
        measured = pairs.measure(documents, truncate)

        def make(index: int) -> list[int]:
            return pairs.pair(documents[index], truncate).tokens

        count = len(documents)
        self._enqueue(_EmbedJob(rid, count, make, measured.tokens, False, [], measured.truncated))

    def _enqueue(self, job: _EmbedJob) -> None:
        if not job.count:
            self._finish(job)
        else:
            self._jobs.append(job)

    def cancel(self, rid: int) -> None:
        for job in self._jobs:
            if job.rid == rid:
                _log(f"request {rid} cancelled after {job.done} of {job.count} inputs")
        self._jobs = deque(j for j in self._jobs if j.rid != rid)

    def step(self) -> None:
        """Embed (or score) the next batch of the first job, then let the next job go."""
        job = self._jobs[0]
        ctx, batch, first = self._ctx, self._batch, job.done
        if ctx is None or batch is None:
            raise RuntimeError("the embedding context was never opened")
        batch.clear()
        lc.llama_memory_clear(lc.llama_get_memory(ctx), True)
        while job.done < job.count and job.done - first < _MAX_SEQUENCES:
            tokens = job.waiting if job.waiting is not None else job.make(job.done)
            job.waiting = None
            if len(tokens) > batch.free:
                job.waiting = tokens
                break
            batch.extend(tokens, 0, job.done - first, True)
            batch.logits[batch.n - len(tokens) : batch.n] = 1
            job.done += 1
        run = batch.encode if self.model.encoder_only else batch.decode
        rc = run(ctx)
        if rc != 0:
            raise RuntimeError(f"embedding decode failed with status {rc}")
        for index in range(first, job.done):
            vector = self._read(index - first, job.normalize)
            if job.scores is not None:
                job.scores.append(float(vector[0]))
            else:
                self._emit(job, index, vector)
        if job.done == job.count:
            self._jobs.popleft()
            self._finish(job)
        else:
            self._jobs.rotate(-1)

    def _read(self, seq: int, normalize: bool) -> np.ndarray:
        pointer = lc.llama_get_embeddings_seq(self._ctx, seq)
        if not pointer:
            raise RuntimeError("llama.cpp returned no pooled embedding")
        vector = np.ctypeslib.as_array(pointer, shape=(self._width,)).copy()
        if normalize:
            norm = float(np.linalg.norm(vector))
            if norm > 0:
                vector /= norm
        return vector

    def _emit(self, job: _EmbedJob, index: int, vector: np.ndarray) -> None:
        data = base64.b64encode(vector.astype("<f4").tobytes()).decode()
        self._out.send(EmbeddingEv(job.rid, index, data))

    def _finish(self, job: _EmbedJob) -> None:
        value: dict[str, object] = {"count": job.count, "prompt_tokens": job.tokens}
        if job.scores is not None:
            value |= {"scores": job.scores, "truncated": job.truncated}
        self._out.send(ResultEv(job.rid, value))


def _log(text: str) -> None:
    print(f"runner[{os.getpid()}]: {text}", file=sys.stderr, flush=True)
