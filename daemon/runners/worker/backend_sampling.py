"""Sampling in llama.cpp's compute graph (its "backend samplers"), where that pays.

Sampled on the host, every step copies each sequence's whole row of logits out of the decode
(128,256 floats a stream on Llama 3) and narrows it in numpy, one sequence after another under
one GIL: at 64 streams on a GPU that is most of a step. A sampler chain attached to a sequence
(``llama_set_sampler``) runs inside the decode instead, next to the logits, and only the chosen
token crosses (``llama_sampler_sample`` reads it and advances the chain's state as usual).

Which backend: where the whole model runs on a GPU (``offload``), the chain runs there. On a
CPU the graph's sampling ops cost far more than the host's narrowing (``candidates``): Gemma 3's
262,144-token rows took about 3 times as long a step (bench/RESULTS.md, "Sampling in the
decode"), so ``auto`` keeps the host path on a CPU; ``on`` forces it (tests, benchmarks).

Which request: one whose chain the vendored llama.cpp can run whole in the graph (top_k, top_p,
min_p, temperature, the seeded draw, greedy, repeat/frequency/presence penalties, a logit bias
on up to 4,096 tokens). A grammar needs every token's text, logprobs need the raw logits,
typical_p has no graph version, and a bias on more tokens (a crude grammar) would send about
as much into every decode as it saves: those sample on the host (:func:`host_reason`). The
choice is per request and reported in its done frame.

A sequence with an attached chain gets one output row per decode (``n_outputs_max_per_seq``
1), so speculative decoding does not guess for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import llama_cpp as lc

from ..types import BackendSampling, SamplingParams

if TYPE_CHECKING:
    from .sampling import SequenceSampler

__all__ = ["MOST_BIASED_TOKENS", "BackendSamplers", "HostReason", "host_reason", "use_backend"]

MOST_BIASED_TOKENS = 4096  # a logit bias on more tokens than this is applied on the host
# What keeps a request's sampling on the host (``host_reason``)
HostReason = Literal["grammar", "logprobs", "typical_p", "logit_bias"]


def use_backend(setting: BackendSampling, whole_model_on_gpu: bool) -> bool:
    """Whether a runner samples in the graph where a request allows it (``setting`` is the
    spec's ``backend_sampling``)."""
    return setting == "on" or (setting == "auto" and whole_model_on_gpu)


def host_reason(params: SamplingParams, biased_tokens: int) -> HostReason | None:
    """Why a request must sample on the host; None when its whole chain can run in the graph."""
    if params.grammar or params.json_schema:
        return "grammar"
    if params.logprobs is not None:
        return "logprobs"
    if 0 < params.typical_p < 1:
        return "typical_p"
    if biased_tokens > MOST_BIASED_TOKENS:
        return "logit_bias"
    return None


class BackendSamplers:
    """The chains attached to a context's sequences.

    Attaching or detaching a chain makes llama.cpp plan its compute graph again on the next
    decode, so a finished request's chain stays attached (and alive) until its slot's next
    request starts: one change per request, not two. An attached chain whose sequence has no
    output in a decode computes nothing (its branch of the graph is skipped)."""

    def __init__(self, ctx: lc.llama_context_p):
        self._ctx = ctx
        self._attached: dict[int, SequenceSampler] = {}

    def start(self, seq_id: int, sampler: SequenceSampler) -> None:
        """``sampler``'s request starts on sequence ``seq_id``: attach its chain if it samples
        in the graph (falling back to the host where llama.cpp refuses it), else detach the
        chain the sequence's last request left."""
        old = self._attached.pop(seq_id, None)
        if sampler.on_backend:
            if lc.llama_set_sampler(self._ctx, seq_id, sampler.chain):
                self._attached[seq_id] = sampler
            else:  # llama.cpp logged why; the same chain samples the raw logits instead
                sampler.on_backend = False
        elif old is not None:
            lc.llama_set_sampler(self._ctx, seq_id, None)
        if old is not None:
            old.close()

    def release(self, seq_id: int | None, sampler: SequenceSampler) -> None:
        """``sampler``'s request ended: an attached chain stays until the sequence's next
        request (see the class); any other is freed now."""
        if seq_id is None or self._attached.get(seq_id) is not sampler:
            sampler.close()

    def attached(self) -> list[int]:
        """The sequence ids with a chain attached (for status and tests)."""
        return sorted(self._attached)
