"""A sampler chain per sequence, and logprobs from the raw logits.

Each sequence owns its chain (its RNG, penalty history and grammar state), so what one request
samples never depends on which other requests share the batch: the same seed gives the same
text at any concurrency. Sampling runs in C. On the host, Python only sees the chosen token,
adjusts the few logits that logit bias and penalties touch (``penalties``), and hands the chain
only the highest logits where that gives the same token (``candidates``). In the graph
(``backend_sampling``), the whole chain, bias and penalties included, runs inside the decode.
"""

from __future__ import annotations

import math
import random
from typing import Any

import llama_cpp as lc
import numpy as np

from ..types import InvalidRequestError, SamplingParams, SamplingSite
from .backend_sampling import host_reason
from .candidates import CandidateSampler
from .json_grammar import schema_grammar
from .model import Model
from .penalties import LogitAdjuster

__all__ = ["SequenceSampler", "token_logprobs"]


class SequenceSampler:
    """Owns one ``llama_sampler`` chain; :meth:`close` frees it.

    ``backend``: the runner samples in the graph where a request allows it; ``on_backend``
    says whether this one does (the engine attaches :attr:`chain` to its sequence)."""

    def __init__(
        self, model: Model, params: SamplingParams, prompt: list[int], backend: bool = False
    ):
        # llama.cpp seeds are 32-bit; any 64-bit seed maps onto one (-1: 0xFFFFFFFF, "random").
        self.seed = params.seed % (1 << 32) if params.seed is not None else random.getrandbits(32)
        self.on_backend = False
        self._model = model
        chain = lc.llama_sampler_chain_init(lc.llama_sampler_chain_default_params())
        self.chain: lc.llama_sampler_p | None = chain  # None once closed
        try:
            self._build(chain, model, params, prompt, backend)
        except BaseException:
            self.close()
            raise

    @property
    def where(self) -> SamplingSite:
        """``backend`` (in the graph) or ``host``, for the request's done frame."""
        return "backend" if self.on_backend else "host"

    def _build(
        self,
        chain: lc.llama_sampler_p,
        model: Model,
        params: SamplingParams,
        prompt: list[int],
        backend: bool,
    ) -> None:
        bias = dict(params.logit_bias)
        if params.ignore_eos:
            bias.update((t, -math.inf) for t in model.eog_tokens())
        for token in bias:
            if not 0 <= token < model.n_vocab:
                raise InvalidRequestError(f"logit_bias names token {token}, outside the vocabulary")
        # A window past the context holds nothing more.
        last_n = model.spec.num_ctx
        if 0 <= params.repeat_last_n < last_n:
            last_n = params.repeat_last_n
        grammar = _grammar_text(params)
        greedy = params.temperature <= 0
        self._narrow = None
        if backend and host_reason(params, len(bias)) is None:
            self.on_backend = True
            self._adjuster = LogitAdjuster(params, {}, 0, ())  # nothing left to adjust
            self._add_bias(model, bias)
            self._add_penalties(model, params, last_n, prompt)
            self._add_choice(params, greedy)
            return
        if CandidateSampler.usable(params.top_k, greedy, grammar is not None, model.n_vocab):
            self._narrow = CandidateSampler(chain, 0 if greedy else params.top_k)
        if self._narrow is None and not LogitAdjuster.penalises(params, last_n):
            # llama.cpp's whole-array path reads the logits itself: a bias alone joins its
            # chain (llama.cpp adds it where the array is in vocabulary order: per token).
            self._add_bias(model, bias)
            bias = {}
        self._adjuster = LogitAdjuster(params, bias, last_n, prompt)
        if grammar is not None:
            sampler = lc.llama_sampler_init_grammar(model.vocab, grammar.encode(), b"root")
            if not sampler:
                raise InvalidRequestError("the grammar is not valid GBNF (see the runner log)")
            self._add(sampler)
        self._add_choice(params, greedy)

    def _add_choice(self, params: SamplingParams, greedy: bool) -> None:
        """The samplers that pick the token: greedy, or top_k ... temperature, the draw."""
        if greedy:
            self._add(lc.llama_sampler_init_greedy())
            return
        if params.top_k > 0:
            self._add(lc.llama_sampler_init_top_k(params.top_k))
        if 0 < params.typical_p < 1:
            self._add(lc.llama_sampler_init_typical(params.typical_p, 1))
        if 0 < params.top_p < 1:
            self._add(lc.llama_sampler_init_top_p(params.top_p, 1))
        if params.min_p > 0:
            self._add(lc.llama_sampler_init_min_p(params.min_p, 1))
        self._add(lc.llama_sampler_init_temp(params.temperature))
        self._add(lc.llama_sampler_init_dist(self.seed))

    def _add(self, sampler: lc.llama_sampler_p) -> None:
        lc.llama_sampler_chain_add(self.chain, sampler)

    def _add_penalties(
        self, model: Model, params: SamplingParams, last_n: int, prompt: list[int]
    ) -> None:
        """llama.cpp's penalties sampler (the graph has it), its window filled from the prompt
        as the host's ``LogitAdjuster`` fills its own."""
        if not LogitAdjuster.penalises(params, last_n):
            return
        sampler = lc.llama_sampler_init_penalties(
            model.n_vocab,
            last_n,
            params.repeat_penalty,
            params.frequency_penalty,
            params.presence_penalty,
        )
        self._add(sampler)  # the chain owns it from here
        for token in prompt[-last_n:]:
            lc.llama_sampler_accept(sampler, token)

    def _add_bias(self, model: Model, bias: dict[int, float]) -> None:
        if bias:
            items = (lc.llama_logit_bias * len(bias))(
                *(lc.llama_logit_bias(token, value) for token, value in bias.items())
            )
            self._add(lc.llama_sampler_init_logit_bias(model.n_vocab, len(bias), items))

    def sample(self, ctx: lc.llama_context_p, row: int) -> int:
        """Sample from the logits of batch row ``row`` and advance this chain's state."""
        adjuster, narrow = self._adjuster, self._narrow
        if not adjuster.active and narrow is None:
            return int(lc.llama_sampler_sample(self.chain, ctx, row))
        logits = self._model.logits(ctx, row)
        undo = adjuster.apply(logits) if adjuster.active else None
        try:
            token = narrow.sample(logits) if narrow is not None else None
            if token is None:
                token = int(lc.llama_sampler_sample(self.chain, ctx, row))
        finally:
            if undo is not None:
                adjuster.restore(logits, undo)
        adjuster.accept(token)
        return token

    def close(self) -> None:
        if self.chain:
            lc.llama_sampler_free(self.chain)
            self.chain = None


def _grammar_text(params: SamplingParams) -> str | None:
    if params.grammar:
        return params.grammar
    if not params.json_schema:
        return None
    try:
        return schema_grammar(params.json_schema)
    except Exception as exc:  # the converter raises plain exceptions of several kinds
        raise InvalidRequestError(f"cannot turn the JSON schema into a grammar: {exc}") from None


def token_logprobs(
    model: Model, ctx: lc.llama_context_p, row: int, token: int, top_n: int
) -> dict[str, Any]:
    """OpenAI-style logprobs of ``token``: log-softmax of the raw logits, plus the top ``top_n``."""
    logits = model.logits(ctx, row)
    peak = float(logits.max())
    log_total = peak + math.log(float(np.exp(logits - peak).sum()))
    entry = _entry(model, token, float(logits[token]) - log_total)
    top_n = min(top_n, model.n_vocab)
    none = np.empty(0, dtype=np.intp)
    top = np.argpartition(-logits, top_n - 1)[:top_n] if top_n > 0 else none
    ranked = sorted(((float(logits[t]) - log_total, int(t)) for t in top), reverse=True)
    entry["top_logprobs"] = [_entry(model, t, lp) for lp, t in ranked]
    return entry


def _entry(model: Model, token: int, logprob: float) -> dict[str, Any]:
    data = model.token_bytes(token)
    text = data.decode(errors="replace")
    return {"id": token, "token": text, "logprob": logprob, "bytes": list(data)}
