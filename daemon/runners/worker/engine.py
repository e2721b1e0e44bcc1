"""Continuous batching: many generations share one context and one ``llama_decode`` per step.

Each step puts the next token of every generating sequence into the batch, then fills what is
left of the batch with prompt chunks of the sequences still prefilling, so a long prompt is
spread over several steps and never stalls the streams already running. Requests beyond the
number of slots wait in a FIFO until a slot frees. A step of only the streams' next tokens is
decoded one token at a time instead where that has been measured to be cheaper (``decode_plan``;
never where the whole model runs on a GPU). There, a request's sampler chain runs inside the
decode where its sampling allows (``backend_sampling``).

A prompt with images is fed the same way up to each image, which is then encoded into its
sequence on its own (see ``vision``), holding the other streams for that long.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import llama_cpp as lc

from ..frames import DoneEv, ErrorEv, TokenEv
from ..protocol import FrameWriter
from ..types import (
    ContextOverflowError,
    DoneEvent,
    DoneReason,
    GenerateCall,
    InvalidRequestError,
    RunnerError,
    RunnerSpec,
)
from .backend_sampling import BackendSamplers, use_backend
from .batch import Batch
from .buffers import BufferLedger
from .decode_plan import DecodePlan
from .disk_cache import DiskCache, DiskRead, state_identity
from .host_cache import HostCache
from .infill import infill_tokens
from .model import ContextConfig, Model
from .offload import whole_model_on_gpu
from .sampling import SequenceSampler, token_logprobs
from .slots import Slot, aligned_prefix, common_prefix
from .speculative import Speculation, Speculator, draft_stats
from .text import TextStream
from .vision import ImagePrompt, ImageSpan, Vision, reusable_prefix
from .window import SlidingWindow

__all__ = ["Engine"]


@dataclass(eq=False)
class Job:
    rid: int
    prompt: list[int]  # images are runs of negative placeholder ids (see ``vision``)
    images: dict[int, ImageSpan]  # by start index in ``prompt``
    sampler: SequenceSampler
    text: TextStream
    max_tokens: int | None
    logprobs: int | None
    arrived: float
    visible: frozenset[int] = frozenset()  # special tokens whose text this request keeps
    slot: Slot | None = None
    fed: int = 0  # prompt tokens in the slot's cache
    evaluated: int = 0  # prompt tokens this request decoded itself
    completion: int = 0
    pending: int | None = None  # sampled, not yet decoded
    row: int = -1  # batch row holding this step's logits, -1 if none
    admitted: float = 0.0
    first_token: float = 0.0
    speculation: Speculation | None = None  # its guessing state, once it guessed
    checkpoint_at: list[int] = field(default_factory=list)  # prompt positions (``window``)
    system_end: int = 0  # prompt tokens of its system part (0: unknown)
    disk: DiskRead | None = None  # how its cached prefix was read from disk, if it was
    disk_tokens: int = 0  # and how many of its prompt tokens that gave

    @property
    def held(self) -> Slot:
        """The slot of an admitted job (every job in ``Engine.active`` holds one)."""
        if self.slot is None:
            raise RuntimeError(f"request {self.rid} holds no slot")
        return self.slot


class Engine:
    """The generation slots of one model and the decode loop over them."""

    def __init__(
        self,
        model: Model,
        spec: RunnerSpec,
        threads: int,
        out: FrameWriter,
        vision: Vision | None = None,
        ledger: BufferLedger | None = None,
    ):
        self.model = model
        self.vision = vision
        self.n_ctx = spec.num_ctx
        # a deterministic runner resumes a prompt only where a cold read's batches would start
        self.aligned_only = spec.deterministic
        n_batch = max(spec.num_batch, spec.num_parallel)
        n_seq = spec.num_parallel
        config = ContextConfig(spec.num_ctx * n_seq, n_seq, n_batch, threads, swa_full=False)
        self.ctx = model.new_context(config)
        self.memory = lc.llama_get_memory(self.ctx)
        # checkpoints take RAM beside the host cache's, as much again, shared by the slots
        slot_bytes = spec.host_cache_bytes // n_seq
        self.window = SlidingWindow(
            self.ctx, self.memory, model.n_swa, n_batch, slot_bytes, aligned=self.aligned_only
        )
        identity = state_identity(spec, model.attention, n_batch)
        disk = DiskCache.open(spec, identity, self.ctx, self.memory, self.window, n_batch)
        self.host = HostCache(self.ctx, self.memory, spec.host_cache_bytes, self.window, disk)
        self.batch = Batch(n_batch)
        self._one = Batch(1)  # for decoding the streams' tokens one at a time
        on_gpu = whole_model_on_gpu(spec, model.n_layer)
        self.plan = DecodePlan(batch_is_free=on_gpu)
        self.backend_sampling = use_backend(spec.backend_sampling, on_gpu)
        self.samplers = BackendSamplers(self.ctx)
        if ledger is not None:
            ledger.begin("draft")
        self.speculator = Speculator.open(model, spec, threads, self.memory)
        self.slots = [Slot(i) for i in range(spec.num_parallel)]
        self.waiting: deque[Job] = deque()
        self.active: list[Job] = []
        self._out = out

    @property
    def busy(self) -> bool:
        return bool(self.waiting or self.active)

    def warm_up(self) -> None:
        """One decode so the weights are paged in before the first request is timed."""
        token = lc.llama_vocab_bos(self.model.vocab)
        self.batch.clear()
        self.batch.add(max(token, 0), 0, 0, True)
        self.batch.decode(self.ctx)
        lc.llama_memory_seq_rm(self.memory, 0, -1, -1)

    def close(self) -> None:
        """Before the runner exits: what the free slots hold goes to the disk, written."""
        self.host.save_free(self.slots)
        self.host.disk.flush()

    def submit(self, rid: int, req: GenerateCall) -> None:
        parsed = self._tokenize(req)
        try:
            job = self._job(rid, req, parsed)
        except BaseException:
            parsed.free()
            raise
        if job.max_tokens is not None and job.max_tokens <= 0:
            self._finish(job, "length")
            return
        self.waiting.append(job)

    def _tokenize(self, req: GenerateCall) -> ImagePrompt:
        if req.suffix is not None:
            fim = infill_tokens(self.model, req.prompt, req.suffix, req.add_bos, self.n_ctx)
            return ImagePrompt(fim)
        if not req.images:
            tokens = self.model.tokenize(req.prompt, req.add_bos, special=True, most=self.n_ctx)
            return ImagePrompt(tokens)
        if self.vision is None:
            raise InvalidRequestError(
                f"{self.model.spec.model_name} has no vision projector; it cannot take images"
            )
        return self.vision.tokenize(req.prompt, req.image_marker, req.images, req.add_bos)

    def _job(self, rid: int, req: GenerateCall, parsed: ImagePrompt) -> Job:
        prompt = parsed.tokens
        if not prompt:
            raise InvalidRequestError("the prompt is empty")
        if len(prompt) >= self.n_ctx:
            raise ContextOverflowError(len(prompt), self.n_ctx)
        params = req.params
        return Job(
            rid=rid,
            prompt=prompt,
            images=parsed.images,
            sampler=SequenceSampler(
                self.model, params, [t for t in prompt if t >= 0], self.backend_sampling
            ),
            text=TextStream(params.stop),
            max_tokens=params.max_tokens,
            logprobs=params.logprobs,
            arrived=time.perf_counter(),
            visible=self.model.special_tokens(req.visible_tokens),
            system_end=self._system_end(req, prompt),
        )

    def _system_end(self, req: GenerateCall, prompt: list[int]) -> int:
        """How many of ``prompt``'s tokens its system part takes (``req.system_chars``), for
        a checkpoint there; 0 where checkpoints are never taken."""
        if not (req.system_chars and self.model.n_swa) or req.images:
            return 0
        head = self.model.tokenize(req.prompt[: req.system_chars], req.add_bos, special=True)
        return common_prefix(head, prompt)  # the head's last token may merge into the next

    def cancel(self, rid: int) -> None:
        for job in (*self.waiting, *self.active):
            if job.rid == rid:
                if job.slot is None:
                    self.waiting.remove(job)
                self._finish(job, "cancelled")
                return

    def status(self) -> dict[str, object]:
        return {
            "slots": len(self.slots),
            "busy": len(self.active),
            "queued": len(self.waiting),
            "cached_tokens": [len(s.cached) for s in self.slots],
            "checkpoints": [len(s.checkpoints) for s in self.slots],
            "host_cache": {"entries": len(self.host), "bytes": self.host.bytes},
            "disk_cache": self.host.disk.status(),
            **self.speculator.totals(),
        }

    def step(self) -> None:
        self._admit()
        self._fill_batch()
        if self.batch.n == 0:
            return
        ready = [j for j in self.active if j.row >= 0]
        singles = self.batch.n == len(ready)  # one token per sequence, no prompt chunks
        if singles and self.plan.one_at_a_time(len(ready)):
            self._decode_apart(ready)
            return
        if singles:
            self.plan.timed(len(ready), lambda: self._decode(self.batch), self._wait)
        else:
            self._decode(self.batch)
        for job in ready:
            self.speculator.advance(job, self._advance)

    def _decode_apart(self, ready: list[Job]) -> None:
        """Decode and sample each sequence's token by itself (cheaper on some builds)."""
        batch, one = self.batch, self._one
        for job in ready:
            row = job.row
            token, position = int(batch.tokens[row]), int(batch.positions[row])
            one.clear()
            one.add(token, position, int(batch.seq_ids[row]), True)
            self.plan.timed(1, lambda: self._decode(one), self._wait)
            job.row = 0
            self._advance(job)

    def _decode(self, batch: Batch) -> None:
        rc = batch.decode(self.ctx)
        if rc != 0:
            raise RuntimeError(f"llama_decode failed with status {rc}")

    def _wait(self) -> None:
        """Until the last decode's work is done (on a GPU it runs on after the call)."""
        lc.llama_synchronize(self.ctx)

    def _admit(self) -> None:
        while self.waiting:
            free = [s for s in self.slots if s.job is None]
            if not free:
                return
            job = self.waiting.popleft()
            busy = {s.seq_id for s in self.slots if s.job is not None}
            picked = self.host.pick(free, job.prompt, busy, not job.images)
            slot, last = picked.slot, len(job.prompt) - 1
            shared = reusable_prefix(job.images, min(picked.shared, last), self.vision)
            if self.aligned_only:
                shared = aligned_prefix(shared, slot, self.batch.capacity)
            slot.shift = 0  # what is kept of the cache holds no M-RoPE image (see there)
            common = self.window.cut(slot, shared)
            slot.whole_batches = min(slot.whole_batches, common)
            if picked.disk is not None:
                job.disk, job.disk_tokens = picked.disk, common
            if not job.images:  # a window state taken past an image could not be resumed
                job.checkpoint_at = self.window.plan(
                    len(job.prompt), common, shared, job.system_end
                )
            slot.job, job.slot, job.fed = job, slot, common
            self.samplers.start(slot.seq_id, job.sampler)
            job.admitted = time.perf_counter()
            self.active.append(job)

    def _fill_batch(self) -> None:
        batch = self.batch
        batch.clear()
        for job in self.active:
            job.row = -1
            if job.pending is not None:
                slot = job.held
                job.row = batch.add(job.pending, len(slot.cached) + slot.shift, slot.seq_id, True)
                slot.cached.append(job.pending)
                job.pending = None
        self.speculator.draft(self.active, batch)
        for job in list(self.active):
            if not self._feed_prompt(job):
                return

    def _feed_prompt(self, job: Job) -> bool:
        """Put ``job``'s next prompt tokens into the batch, up to its next image (decoded
        here once the text before it is in); False when the batch is full."""
        queued = False  # this job has tokens in the batch, not yet decoded
        while job.fed < len(job.prompt):
            image = job.images.get(job.fed)
            if image is not None:
                if queued or not self._decode_image(job, image):
                    return True
                continue
            if job.checkpoint_at and job.checkpoint_at[0] == job.fed:
                if queued:  # taken once what is in the batch is decoded: next step
                    return True
                self.window.take(job.held)
                del job.checkpoint_at[0]
            if self.batch.free <= 0:
                return False
            end = min((s for s in job.images if s > job.fed), default=len(job.prompt))
            if job.checkpoint_at:
                end = min(end, job.checkpoint_at[0])
            take = min(end - job.fed, self.batch.free)
            chunk = job.prompt[job.fed : job.fed + take]
            done = job.fed + take == len(job.prompt)
            slot = job.held
            if slot.whole_batches == job.fed and take == self.batch.capacity:
                slot.whole_batches += take  # a whole batch, where a cold read puts one
            row = self.batch.extend(chunk, job.fed + slot.shift, slot.seq_id, done)
            slot.cached.extend(chunk)
            job.fed += take
            job.evaluated += take
            queued = True
            if done:
                job.row = row
        return True

    def _decode_image(self, job: Job, image: ImageSpan) -> bool:
        """Encode one image into ``job``'s sequence; False if that failed (job ended)."""
        slot, vision = job.held, self.vision
        if vision is None:
            raise RuntimeError("an image in the prompt of a runner without a projector")
        position = job.fed + slot.shift
        try:
            after = vision.evaluate(self.ctx, image, position, slot.seq_id, self.batch.capacity)
        except RunnerError as exc:
            self._fail(job, exc)
            return False
        slot.cached.extend(job.prompt[job.fed : job.fed + image.n_tokens])
        slot.shift += (after - position) - image.n_tokens
        job.fed += image.n_tokens
        job.evaluated += image.n_tokens
        return True

    def _advance(self, job: Job) -> None:
        """Sample this step's token for ``job`` and stream it out (or finish the job)."""
        token = job.sampler.sample(self.ctx, job.row)
        if not job.completion:
            job.first_token = time.perf_counter()
        if self.model.is_eog(token):
            self._finish(job, "stop", job.text.flush())
            return
        logprobs = None
        if job.logprobs is not None:
            logprobs = [token_logprobs(self.model, self.ctx, job.row, token, job.logprobs)]
        job.completion += 1
        piece = self.model.token_bytes(token) if token in job.visible else self.model.piece(token)
        text = job.text.push(piece)
        reason: DoneReason | None = "stop" if job.text.stopped else None
        if reason is None and job.max_tokens is not None and job.completion >= job.max_tokens:
            reason = "length"
        if reason is None and len(job.held.cached) >= self.n_ctx:
            reason = "length"  # no room left to decode the token
        if reason == "length":
            text += job.text.flush()
        self._emit_token(job, text, (token,), logprobs)
        if reason:
            self._finish(job, reason)
        else:
            job.pending = token

    def _emit_token(
        self,
        job: Job,
        text: str,
        ids: tuple[int, ...],
        logprobs: list[dict[str, Any]] | None,
    ) -> None:
        self._out.send(TokenEv(job.rid, text, ids, tuple(logprobs or ())))

    def _finish(self, job: Job, reason: DoneReason, tail: str = "") -> None:
        if tail:
            self._emit_token(job, tail, (), None)
        now = time.perf_counter()
        first = job.first_token or now
        done = DoneEvent(
            reason=reason,
            stop_sequence=job.text.matched,
            prompt_tokens=len(job.prompt),
            prompt_evaluated=job.evaluated,
            completion_tokens=job.completion,
            prompt_seconds=(first - job.admitted) if job.admitted else 0.0,
            generation_seconds=now - first,
            first_token_seconds=(first - job.arrived) if job.first_token else 0.0,
            sampling=job.sampler.where,
            prompt_disk_tokens=job.disk_tokens,
            prompt_disk_bytes=job.disk.bytes if job.disk else 0,
            prompt_disk_seconds=job.disk.seconds if job.disk else 0.0,
            **draft_stats(job),
        )
        self._out.send(DoneEv(job.rid, done))
        self._release(job, now)

    def _fail(self, job: Job, error: RunnerError) -> None:
        """End ``job`` with an error; the slot's cache is dropped (it may be half-written)."""
        self._out.send(ErrorEv.of(job.rid, error))
        slot = job.slot
        if slot is not None:
            lc.llama_memory_seq_rm(self.memory, slot.seq_id, -1, -1)
            slot.cached.clear()
            slot.checkpoints.clear()
        self._release(job, time.perf_counter())

    def _release(self, job: Job, now: float) -> None:
        self.samplers.release(job.slot.seq_id if job.slot else None, job.sampler)
        for image in job.images.values():
            image.free()
        if job.slot is not None:
            job.slot.job = None
            job.slot.last_used = now
            self.active.remove(job)
            job.slot = None
