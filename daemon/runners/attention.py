"""Flash attention or not, when the setting is ``auto`` and the model runs on the CPU.

llama.cpp's ``auto`` turns flash attention on wherever the backend has it. On a CPU its kernel
walks the cache one cell at a time for each head, which pays for heads of 128 values and more
but costs a lot for small ones: with heads of 64 values (most models under 2B: Llama 3.2 1B,
Qwen2.5 0.5B, SmolLM2, TinyLlama) one decode step at 1,000 cached tokens took 22 ms with it
and 12 ms without (4 sequences: 63 vs 27 ms) on a 2-core Xeon, for prompts read 15% slower
(bench/RESULTS.md). Without it llama.cpp keeps every head's scores for a whole prompt chunk,
``attention_scores_bytes``; so ``auto`` means off only for small heads, with the default f16
cache (a quantized V cache needs flash attention), and while those scores stay small.
The scheduler asks the same question, so its memory estimate counts the scores.

Nor for long prompts: reading a prompt of 25,000 tokens took 1.45-1.5x as long without it
(heads of 32 values), and a context past ``LONG_CONTEXT`` tokens per sequence is there for such
prompts (a coding agent's first turn is 10-40 thousand), so ``auto`` is llama.cpp's there, as
llama-server runs. The choice is per context because llama.cpp fixes it per context: the
cache's V layout follows it, so it cannot change between reading a prompt and decoding.
"""

from __future__ import annotations

from .types import FlashAttention, KvCacheType

__all__ = [
    "LONG_CONTEXT",
    "MOST_SCORE_BYTES",
    "SMALL_HEAD",
    "attention_scores_bytes",
    "flash_attention_setting",
]

SMALL_HEAD = 64  # values per head at or below which the CPU kernel loses
MOST_SCORE_BYTES = 256 << 20  # the most memory ``auto`` spends on scores to leave it off
LONG_CONTEXT = 8192  # tokens per sequence past which a context is for long prompts


def attention_scores_bytes(n_head: int, n_ctx: int, n_batch: int) -> int:
    """Memory for one layer's attention scores of a prompt chunk without flash attention:
    a float per head, chunk token and cached token (llama.cpp reserves it at load)."""
    return 4 * n_head * n_ctx * n_batch


def flash_attention_setting(
    requested: FlashAttention,
    *,
    head_size: int,
    n_head: int,
    n_ctx: int,
    n_batch: int,
    kv_cache_type: KvCacheType,
    on_gpu: bool,
) -> FlashAttention:
    """What to ask llama.cpp for: ``requested``, except ``auto`` becomes ``off`` on a CPU for
    small heads in a context for short prompts (``n_ctx`` is one sequence's context;
    ``n_batch`` the prompt chunk)."""
    if requested != "auto" or on_gpu or kv_cache_type != "f16":
        return requested
    if not 0 < head_size <= SMALL_HEAD or n_ctx > LONG_CONTEXT:
        return requested
    if attention_scores_bytes(n_head, n_ctx, n_batch) > MOST_SCORE_BYTES:
        return requested
    return "off"
