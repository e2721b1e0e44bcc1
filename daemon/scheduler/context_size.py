"""The default context: as long as the model was trained for, as free memory allows.

When neither the request, the Modelfile nor the daemon's settings give ``num_ctx``, a model
runs with the largest context (per slot) that its training covers, that stays under a cap, and
whose whole load fits the free memory as the memory plan counts it (``memory_plan``: weights,
every slot's cache, the compute buffer...); never less than a floor (or the trained context, if
that is smaller). llama-server does the same from its ``--ctx-size 0`` (the trained context)
and ``--fit`` (what memory holds). A pure function: what a context needs is a function given
to it and free memory is an input, so the rule is tested without a machine of that size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "CONTEXT_FLOOR",
    "CONTEXT_STEP",
    "ContextChoice",
    "context_ceiling",
    "default_context",
    "largest_fitting",
    "size_text",
]

CONTEXT_FLOOR = 2048  # tokens: below this a chat with a system prompt barely starts
CONTEXT_STEP = 256  # contexts are whole multiples of this (llama.cpp pads to 256 anyway)
_GIB, _MIB = 1 << 30, 1 << 20


@dataclass(frozen=True, slots=True)
class ContextChoice:
    num_ctx: int  # tokens per slot
    reason: str  # why this length, in words for `show` and the load log


def context_ceiling(n_ctx_train: int | None, cap: int) -> int:
    """The most context a slot gets by default: the trained context, at most ``cap``."""
    return min(cap, n_ctx_train) if n_ctx_train else cap


def default_context(
    need: Callable[[int], int],
    n_ctx_train: int | None,
    free_bytes: float,
    num_parallel: int,
    cap: int = 32768,
    floor: int = CONTEXT_FLOOR,
    where: str = "free",
) -> ContextChoice:
    """The context per slot for a model that sets none (see the module's docstring).
    ``need(num_ctx)``: the bytes the load takes at ``num_ctx`` tokens a slot where memory is
    short (the plan's, for that device: ``where`` says which, "free" RAM or "free VRAM"); it
    grows with ``num_ctx``, so the largest context that fits is found by bisection over
    multiples of ``CONTEXT_STEP``."""
    trained = n_ctx_train or 0
    ceiling = context_ceiling(n_ctx_train, cap)
    floor = min(floor, ceiling)
    free = f"{size_text(free_bytes)} {where}"
    if need(ceiling) <= free_bytes:
        if trained and trained <= cap:
            return ContextChoice(ceiling, f"the model's trained context ({free})")
        return ContextChoice(ceiling, f"the default cap of {cap:,} tokens ({free})")
    fits = largest_fitting(need, free_bytes, floor, ceiling)
    if fits is None or fits <= floor:
        return ContextChoice(floor, f"the floor of {floor:,} tokens: {free} holds no more")
    slots = f"{num_parallel} slot{'s' if num_parallel != 1 else ''}"
    return ContextChoice(fits, f"the largest context that fits: {fits:,} tokens ({slots}, {free})")


def largest_fitting(
    need: Callable[[int], int], free_bytes: float, low: int, high: int, step: int = CONTEXT_STEP
) -> int | None:
    """The largest multiple of ``step`` in [``low``, ``high``] whose ``need`` fits
    ``free_bytes`` (``need`` grows with its argument: a bisection, a few calls); None where
    not even ``low`` (rounded up to a step) fits."""
    first, last = -(-max(0, low) // step), high // step  # in steps
    if first > last or need(first * step) > free_bytes:
        return None
    while first < last:  # need(first) fits, need(last + 1) does not
        middle = (first + last + 1) // 2
        if need(middle * step) <= free_bytes:
            first = middle
        else:
            last = middle - 1
    return first * step


def size_text(n: float) -> str:
    """Bytes in words: GiB to a tenth; under a tenth of a GiB, MiB; under one, KiB."""
    if n >= _GIB // 10:
        return f"{n / _GIB:.1f} GiB"
    return f"{n / _MIB:,.0f} MiB" if n >= _MIB else f"{n / 1024:,.0f} KiB"
