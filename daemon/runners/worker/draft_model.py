"""A draft model: a smaller model of the same vocabulary guesses the target's next tokens.

Prompt lookup (``prompt_lookup``) only guesses what was said before; a draft model guesses free
text too. It runs on the CPU in a context of its own (the target's size per sequence, one
sequence per slot) and guesses greedily. The target checks the guesses as it checks any other
(``speculative``), so the text is the target's whatever the draft says: a good draft only makes
it sooner.

The draft's cache follows each slot by its tokens, not by its events: before guessing, the
draft keeps the longest prefix it shares with the tokens the target holds, drops the rest (its
own rejected guesses, a slot reused for another prompt, a cache restored from host memory) and
decodes what it has not seen. So it is always in step with the target's accepted tokens.
"""

from __future__ import annotations

import dataclasses

import llama_cpp as lc

from localllm.model_registry.vocabulary import sampled_ids

from ..types import RunnerSpec
from .batch import Batch
from .model import ContextConfig, LoadError, Model
from .slots import common_prefix

__all__ = ["DraftModel", "VocabularyMismatchError", "open_draft"]


class VocabularyMismatchError(LoadError):
    """The draft model's tokens are not the target's: its guesses would mean other text."""

    invalid_request = True


def open_draft(target: Model, spec: RunnerSpec, threads: int) -> DraftModel | None:
    """The spec's draft model, loaded and checked against ``target``; None when it has none."""
    if not spec.draft_paths:
        return None
    name = spec.draft_name or "the draft model"
    draft_spec = dataclasses.replace(
        spec,
        model_name=name,
        model_paths=spec.draft_paths,
        projector_path=None,
        adapters=(),
        num_gpu_layers=0,
        draft_paths=(),
    )
    model = Model.load(draft_spec)
    try:
        problem = vocabulary_difference(target, model)
        if problem:
            raise VocabularyMismatchError(
                f"draft model {name!r} does not share the vocabulary of {spec.model_name!r} "
                f"({problem}); a draft model must have the same tokens as the model it drafts for"
            )
        return DraftModel(model, spec, threads)
    except BaseException:
        model.close()
        raise


def vocabulary_difference(target: Model, draft: Model) -> str | None:
    """How the two vocabularies differ (token count, BOS/EOS, the text of sampled ids)."""
    if target.n_vocab != draft.n_vocab:
        return f"{draft.n_vocab} tokens, not {target.n_vocab}"
    for what, ask in (("BOS", lc.llama_vocab_bos), ("EOS", lc.llama_vocab_eos)):
        theirs, ours = ask(draft.vocab), ask(target.vocab)
        if theirs != ours:
            return f"{what} token {theirs}, not {ours}"
    for token in sampled_ids(target.n_vocab):
        theirs, ours = draft.token_bytes(token), target.token_bytes(token)
        if theirs != ours:
            return f"token {token} is {theirs!r}, not {ours!r}"
    return None


class DraftModel:
    """The draft's context and, per sequence id, the tokens whose KV it holds."""

    def __init__(self, model: Model, spec: RunnerSpec, threads: int):
        self.model = model
        n_seq = spec.num_parallel
        self.n_batch = max(1, spec.num_batch)
        self.ctx = model.new_context(
            ContextConfig(spec.num_ctx * n_seq, n_seq, self.n_batch, threads)
        )
        self.memory = lc.llama_get_memory(self.ctx)
        self.batch = Batch(self.n_batch)
        self.seen: list[list[int]] = [[] for _ in range(n_seq)]

    def propose(self, seq_id: int, history: list[int], most: int) -> list[int]:
        """Up to ``most`` tokens the draft expects after ``history`` (sequence ``seq_id``'s
        tokens in the target), greedily; it stops early after an end-of-generation token."""
        if most <= 0 or not history:
            return []
        row = self._catch_up(seq_id, history)
        seen = self.seen[seq_id]
        guesses: list[int] = []
        while True:
            token = self._best(row)
            guesses.append(token)
            if len(guesses) >= most or self.model.is_eog(token):
                return guesses
            self.batch.clear()
            row = self.batch.add(token, len(seen), seq_id, True)
            self._decode()
            seen.append(token)

    def _catch_up(self, seq_id: int, history: list[int]) -> int:
        """Make the draft's cache of ``seq_id`` hold ``history``; the batch row of the logits
        after its last token."""
        seen = self.seen[seq_id]
        keep = min(common_prefix(seen, history), len(history) - 1)  # decode at least one
        if keep < len(seen):
            if not lc.llama_memory_seq_rm(self.memory, seq_id, keep, -1):
                lc.llama_memory_seq_rm(self.memory, seq_id, -1, -1)
                keep = 0
            del seen[keep:]
        row = -1
        while len(seen) < len(history):
            chunk = history[len(seen) : len(seen) + self.n_batch]
            self.batch.clear()
            last = len(seen) + len(chunk) == len(history)
            row = self.batch.extend(chunk, len(seen), seq_id, last)
            self._decode()
            seen.extend(chunk)
        return row

    def _best(self, row: int) -> int:
        return int(self.model.logits(self.ctx, row).argmax())

    def _decode(self) -> None:
        rc = self.batch.decode(self.ctx)
        if rc != 0:
            raise RuntimeError(f"llama_decode of the draft model failed with status {rc}")
