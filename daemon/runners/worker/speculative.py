"""Speculative decoding: guess a sequence's next tokens, check them all in one decode.

A decode of one token mostly waits on reading the weights; a decode of a few more tokens of the
same sequence reads them once, so it costs little more. So where the next tokens can be guessed
(``prompt_lookup``; or a smaller model of the same vocabulary, ``draft_model``), the guesses go
into the step's batch after the sequence's own token, each with its logits. The sequence's
sampler chain then samples row after row, exactly as it would one step at a time (same chain,
same RNG draws, same penalties): while what it samples is the guess, the guess's KV is already
in place and the next row is valid too. At the first difference the rest is dropped from the KV
cache. What is sampled is therefore what plain decoding samples (greedy or not, with the same
seed), only sooner.

The text is the same to the token where llama.cpp's logits for a token do not depend on how
many tokens its decode holds (Q8_0 on CPU: tests/test_runner_speculative.py). With K-quants
on a multi-threaded CPU they differ slightly (other kernels from 4 rows on; attention split
differently over threads for one row than for several), exactly as they already do between one
stream and several: a near tie can then go the other way and the texts part from there on.

Guessing costs a longer decode when the guess is wrong (on CPU a decode of 2 rows can cost
twice one), so a sequence's first guess is one token, and it guesses further only while its
guesses hold; after wholly wrong guesses it pauses, longer each time (up to 256 steps). On text
that never repeats, starting at 8 tokens cost 3% of every token (bench/RESULTS.md); this costs
nothing measurable. Nothing is drafted while more than a few sequences decode together (their
batch already reads the weights once), nor for a sequence whose sampler chain runs inside the
decode (``backend_sampling``: llama.cpp samples one row per sequence there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import llama_cpp as lc

from ..types import DEFAULT_DRAFT, RunnerSpec
from .draft_model import DraftModel, open_draft
from .prompt_lookup import NgramIndex

if TYPE_CHECKING:
    from .batch import Batch
    from .engine import Job
    from .model import Model
    from .slots import Slot

__all__ = ["Speculator", "draft_stats"]

MAX_STREAMS = 2  # no guessing while more sequences than this generate (not yet tuned)
_MAX_PAUSE = 256  # steps without guessing after a run of wholly wrong guesses, at most


@dataclass(eq=False)
class Speculation:
    """One sequence's guessing: where its guesses come from, how far to guess, its counts."""

    source: NgramIndex | _DraftFollower  # anything with ``propose(most) -> tokens``
    limit: int = 1  # tokens to guess next: one at first, doubling while the guesses hold
    drafts: list[int] = field(default_factory=list)  # in this step's batch, after the token
    rows: list[int] = field(default_factory=list)  # their batch rows
    pause: int = 0  # steps left without guessing
    misses: int = 0  # wholly wrong guesses in a row
    proposed: int = 0
    accepted: int = 0

    def adapt(self, proposed: int, accepted: int, most: int) -> None:
        """Guess further after a step whose guesses all held; less far, or pause, after misses."""
        if accepted == proposed:
            self.limit = min(most, self.limit * 2)
            self.misses = 0
            return
        self.limit = max(1, accepted + 1)
        if accepted:
            self.misses = 0
        else:
            self.misses += 1
            self.pause = min(_MAX_PAUSE, 1 << self.misses)


class Speculator:
    """Puts guesses into a step's batch and checks them after its decode."""

    def __init__(
        self,
        memory: lc.llama_memory_t,
        n_ctx: int,
        most: int = DEFAULT_DRAFT,
        draft: DraftModel | None = None,
    ):
        self.memory = memory
        self.n_ctx = n_ctx
        self.most = max(0, most)
        self.draft_model = draft  # guesses for text sequences when set; else prompt lookup
        self.proposed = 0  # over the runner's life, for its status
        self.accepted = 0

    @classmethod
    def open(
        cls, model: Model, spec: RunnerSpec, threads: int, memory: lc.llama_memory_t
    ) -> Speculator:
        """The engine's speculator, with the spec's draft model loaded (if it names one)."""
        return cls(memory, spec.num_ctx, spec.num_draft, open_draft(model, spec, threads))

    def _source(self, job: Job) -> NgramIndex | _DraftFollower:
        """A draft model guesses for a sequence of text; one with images uses prompt lookup
        (the draft cannot see them)."""
        if self.draft_model is not None and not job.images:
            return _DraftFollower(self.draft_model, job.held)
        return NgramIndex(job.held.cached)

    def draft(self, active: list[Job], batch: Batch) -> None:
        """Add guesses after the token of each generating job in ``batch`` (jobs whose
        ``row`` is set and whose token is the last of ``slot.cached``)."""
        generating = [job for job in active if job.row >= 0]
        if not self.most or len(generating) > MAX_STREAMS:
            return
        for job in generating:
            if job.sampler.on_backend:
                continue  # one output row per sequence and decode (``backend_sampling``)
            state = job.speculation
            if state is None:
                state = job.speculation = Speculation(self._source(job))
            slot = job.held
            room = min(state.limit, self.n_ctx - len(slot.cached), batch.free)
            if job.max_tokens is not None:
                room = min(room, job.max_tokens - job.completion - 1)
            if state.pause > 0:
                state.pause -= 1
                continue
            guess = state.source.propose(room)
            guess = guess[: next((i for i, t in enumerate(guess) if t < 0), len(guess))]
            start = len(slot.cached) + slot.shift
            state.drafts = guess
            state.rows = [batch.add(t, start + i, slot.seq_id, True) for i, t in enumerate(guess)]

    def totals(self) -> dict[str, int]:
        return {"draft_tokens": self.proposed, "draft_accepted": self.accepted}

    def advance(self, job: Job, advance: Callable[[Job], None]) -> None:
        """Sample ``job``'s rows in order with ``advance`` (the engine's sample-and-emit step)
        while the guesses hold; just its one row when it guessed nothing this step."""
        state = job.speculation
        if state is None or not state.drafts:
            advance(job)
            return
        drafts, rows = state.drafts, state.rows
        state.drafts, state.rows = [], []
        slot = job.held
        accepted = 0
        state.proposed += len(drafts)  # counted first: the job may end (and report) in this step
        for guess, row in zip(drafts, rows, strict=True):
            advance(job)
            if job.pending != guess:  # finished, or sampled something else
                break
            slot.cached.append(guess)  # decoded with this step: its KV is in place
            job.pending = None
            job.row = row
            accepted += 1
            state.accepted += 1
        else:
            advance(job)  # the row after the last guess: one more token for free
        lc.llama_memory_seq_rm(self.memory, slot.seq_id, len(slot.cached) + slot.shift, -1)
        state.adapt(len(drafts), accepted, self.most)
        self.proposed += len(drafts)
        self.accepted += accepted


@dataclass(eq=False)
class _DraftFollower:
    """The draft model's guesses for one slot's sequence."""

    draft: DraftModel
    slot: Slot

    def propose(self, most: int) -> list[int]:
        return self.draft.propose(self.slot.seq_id, self.slot.cached, most)


def draft_stats(job: Job) -> dict[str, int]:
    """The counts a finished job reports (zeros when it never guessed)."""
    state = job.speculation
    if state is None:
        return {"draft_tokens": 0, "draft_accepted": 0}
    return {"draft_tokens": state.proposed, "draft_accepted": state.accepted}
