"""A load whose plan does not fit, refused before any runner starts: its figures, what fits.

A runner that allocates more than the machine has is killed by the kernel's OOM killer (or
takes the desktop down with it), so a load whose memory plan (``memory_plan``) does not fit is
refused instead: its RAM part where free RAM cannot hold it even once every other model is
unloaded, its GPU part where the user asked for GPU layers the GPU cannot hold (layers left to
the daemon are placed to fit: ``placement``). The refusal (507, ``InsufficientMemoryError``)
names the plan's parts on that memory and what would fit, found from the plan by bisection (a
few plans each): the longest context a slot with these slots, the most slots with this
context, or the most GPU layers. With several GPUs the refusal names the GPU whose part does
not fit, and its figures. The option ``load_anyway`` skips the refusal, never the
eviction of idle models, for those who know better: the plan is an estimate.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from localllm.daemon.errors import InsufficientMemoryError
from localllm.daemon.scheduler.context_size import CONTEXT_STEP, largest_fitting, size_text
from localllm.daemon.scheduler.memory_plan import CPU, MemoryPlan
from localllm.daemon.scheduler.placement import Placement, gpu_usable

__all__ = [
    "layers_that_fit",
    "parts_text",
    "ram_refusal",
    "refuse",
    "refuse_gpu_layers",
    "vram_refusal",
    "what_fits",
]

log = logging.getLogger("localllm.scheduler")  # the scheduler's log, where a refusal is told

# the plan's kinds as a refusal names them, in this order
_GROUPS = (
    ("weights", ("weights", "experts")),
    ("KV cache", ("kv", "window kv", "recurrent")),
    ("compute", ("compute",)),
    ("logits", ("output",)),
    ("projector", ("projector",)),
    ("draft model", ("draft",)),
    ("LoRA", ("lora",)),
)


def parts_text(plan: MemoryPlan, vram: bool = False, device: str | None = None) -> str:
    """The plan's parts in RAM (``vram``: on the GPUs; ``device``: on that one), in words:
    "weights 4.1 GiB, KV cache 4.0 GiB for 4 x 32,768 tokens, compute 1.2 GiB"."""
    settings = plan.settings

    def counted(part_device: str) -> bool:
        return part_device == device if device else (part_device != CPU) == vram

    texts = []
    for name, kinds in _GROUPS:
        size = sum(p.bytes for p in plan.parts if p.kind in kinds and counted(p.device))
        if not size:
            continue
        text = f"{name} {size_text(size)}"
        if name == "KV cache":
            text += f" for {settings.slots} x {settings.ctx_per_slot:,} tokens"
        texts.append(text)
    return ", ".join(texts)


def what_fits(need: Callable[[int, int], int], free: float, num_ctx: int, slots: int) -> str:
    """What would fit ``free`` bytes, in words: "it fits at 8,192 tokens a slot (num_ctx
    8192), or 1 slot of 32,768 tokens (num_parallel 1)". ``need(num_ctx, slots)``: the bytes
    the load takes there (it grows with both)."""
    shorter = largest_fitting(lambda ctx: need(ctx, slots), free, CONTEXT_STEP, num_ctx - 1)
    fewer = None
    if slots > 1:
        fewer = largest_fitting(lambda n: need(num_ctx, n), free, 1, slots - 1, 1)
    shorter_text = f"at {shorter:,} tokens a slot (num_ctx {shorter})" if shorter else ""
    fewer_text = ""
    if fewer:
        fewer_text = f"with {_slots(fewer)} of {num_ctx:,} tokens (num_parallel {fewer})"
    if shorter and fewer:
        return f"it fits {shorter_text}, or {fewer_text}"
    if shorter or fewer:
        return f"it fits {shorter_text or fewer_text}"
    return f"not even 1 slot of {CONTEXT_STEP} tokens fits"


def _slots(n: int) -> str:
    return f"{n} slot{'s' if n != 1 else ''}"


def ram_refusal(
    name: str, plan: MemoryPlan, free: float, loaded: int, fits: str, headroom: float
) -> InsufficientMemoryError:
    """The refusal of a load whose RAM part does not fit ``free`` (with ``loaded`` models
    counted as unloaded)."""
    return InsufficientMemoryError(
        name,
        plan.ram_bytes,
        int(free),
        loaded,
        memory="RAM",
        parts=parts_text(plan),
        fits=fits,
        headroom=headroom,
    )


def vram_refusal(
    name: str, plan: MemoryPlan, usable: int, placement: Placement
) -> InsufficientMemoryError:
    """The refusal of GPU layers asked for that the GPU cannot hold; what would fit is
    ``placement.fitting_layers``. With several GPUs: the first whose part overflows it, with
    its own part and free VRAM (``usable``: theirs together)."""
    layers = f"{placement.gpu_layers}/{placement.total_layers} layers"
    on_gpu = f"{layers} on the GPU: {parts_text(plan, vram=True)}"
    needed = plan.vram_bytes
    gpus = gpu_usable(plan.settings.gpu_split)
    parts = plan.gpu_bytes()
    over = next((gpu for gpu, size in parts.items() if size > gpus.get(gpu, 0)), None)
    if len(gpus) > 1 and over is not None:
        on_gpu = f"{layers} on {len(gpus)} GPUs, on {over}: {parts_text(plan, device=over)}"
        needed, usable = parts[over], gpus.get(over, 0)
    fits = layers_that_fit(placement)
    return InsufficientMemoryError(name, needed, usable, memory="VRAM", parts=on_gpu, fits=fits)


def layers_that_fit(placement: Placement) -> str:
    """The most GPU layers that would fit, in words ("32/49 layers fit (num_gpu 32)")."""
    fitting, total = placement.fitting_layers or 0, placement.total_layers
    if fitting:
        return f"{fitting}/{total} layers fit (num_gpu {fitting})"
    return "no layer fits (num_gpu 0 runs it on the CPU)"


def refuse_gpu_layers(
    name: str, plan: MemoryPlan, usable: int, placement: Placement, load_anyway: bool
) -> None:
    """Refuse GPU layers asked for that the GPU cannot hold (``load_anyway``: say so and
    load them all the same); layers left to the scheduler are placed to fit."""
    if placement.fitting_layers is not None:
        refuse(name, vram_refusal(name, plan, usable, placement), load_anyway)


def refuse(name: str, refusal: InsufficientMemoryError, load_anyway: bool) -> None:
    """Raise ``refusal`` (and log it), or with ``load_anyway`` log that the load goes on."""
    if not load_anyway:
        log.warning("not loading %s: %s", name, refusal)
        raise refusal
    figures = (
        f"its plan needs {size_text(refusal.needed)} of {refusal.memory} and "
        f"{size_text(refusal.available)} is free"
    )
    log.warning("loading %s anyway (load_anyway), though %s", name, figures)
