"""Logit bias and repeat/frequency/presence penalties, applied to the tokens they touch only.

llama.cpp's penalties sampler looks every candidate up in its counts, the whole vocabulary
each token (262,144 lookups on Gemma 3) to change at most ``repeat_last_n`` of them; with
Ollama's default ``repeat_penalty`` of 1.1 that was a tenth of a small model's time per
token. Here the raw logits of the tokens seen (and the biased ones) are changed in place
before the sampler chain reads them, with llama.cpp's arithmetic and order (bias, then
penalties), and put back afterwards so logprobs still see the model's own logits.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Mapping

import numpy as np

from ..types import SamplingParams

__all__ = ["LogitAdjuster"]


class LogitAdjuster:
    def __init__(
        self,
        params: SamplingParams,
        bias: Mapping[int, float],
        last_n: int,
        history: Iterable[int],
    ):
        self._bias_ids = np.fromiter(bias.keys(), dtype=np.int64, count=len(bias))
        self._bias = np.fromiter(bias.values(), dtype=np.float32, count=len(bias))
        self._repeat = params.repeat_penalty
        self._frequency = params.frequency_penalty
        self._presence = params.presence_penalty
        penalised = self.penalises(params, last_n)
        self._window: deque[int] | None = deque(maxlen=last_n) if penalised else None
        self._counts: Counter[int] = Counter()
        for token in list(history)[-last_n:] if penalised else ():
            self.accept(token)

    @staticmethod
    def penalises(params: SamplingParams, last_n: int) -> bool:
        """Whether ``params`` change any logit for the tokens seen (bias aside)."""
        return last_n > 0 and (
            params.repeat_penalty != 1.0
            or params.frequency_penalty != 0.0
            or params.presence_penalty != 0.0
        )

    @property
    def active(self) -> bool:
        return bool(len(self._bias_ids)) or self._window is not None

    def accept(self, token: int) -> None:
        """``token`` was sampled (or is part of the prompt): it now counts as seen."""
        window = self._window
        if window is None:
            return
        if len(window) == window.maxlen:
            oldest = window[0]
            self._counts[oldest] -= 1
            if not self._counts[oldest]:
                del self._counts[oldest]
        window.append(token)
        self._counts[token] += 1

    def apply(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Adjust ``logits`` in place; returns what :meth:`restore` needs to undo it."""
        ids = self._bias_ids
        if self._counts:
            ids = np.union1d(ids, np.fromiter(self._counts, dtype=np.int64))
        saved = logits[ids].copy()
        if len(self._bias_ids):
            logits[self._bias_ids] += self._bias
        if self._counts:
            seen = np.fromiter(self._counts.keys(), dtype=np.int64, count=len(self._counts))
            counts = np.fromiter(self._counts.values(), dtype=np.float32, count=len(seen))
            values = logits[seen]
            values = np.where(values <= 0, values * self._repeat, values / self._repeat)
            values -= counts * self._frequency + (counts > 0) * self._presence
            logits[seen] = values
        return ids, saved

    @staticmethod
    def restore(logits: np.ndarray, undo: tuple[np.ndarray, np.ndarray]) -> None:
        ids, saved = undo
        logits[ids] = saved
