"""Starting one runner: plan (GPU layers, memory), start the process, report where it runs.

The scheduler decides *whether* and *when* to load; this module only knows *how*. The load
log line always says where the model runs ("100% CPU", "100% GPU", a split) and warns when
GPU layers were planned but the runner came up without a GPU backend.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from daemon.errors import ModelLoadError
from daemon.runners.attention import attention_scores_bytes, flash_attention_setting
from daemon.runners.types import (
    IncompatibleBuildError,
    InvalidRequestError,
    RunnerError,
    RunnerSpec,
)
from daemon.scheduler.context_size import ContextChoice, context_ceiling, default_context
from daemon.scheduler.loaded import LoadTarget, Runner, RunnerFactory
from daemon.scheduler.memory import COMPUTE_MARGIN_BYTES, ModelFootprint, estimate_bytes
from daemon.scheduler.parallel import ParallelChoice, default_parallel
from daemon.scheduler.placement import (
    VRAM_MARGIN,
    Placement,
    choose_gpu_layers,
    describe_placement,
)

__all__ = ["AUTO_GPU_LAYERS", "LoadPlan", "RunnerLoader"]

EMBEDDING_MAX_CONTEXT = 4096  # the sized context of an embedding model, at most
AUTO_GPU_LAYERS = -2  # RunnerSpec.num_gpu_layers before placement: "choose from free VRAM"

log = logging.getLogger("localllm.scheduler")


@dataclass(frozen=True, slots=True)
class LoadPlan:
    spec: RunnerSpec  # with the GPU layers chosen
    placement: Placement
    estimate_bytes: int  # the whole runner: weights + KV cache + compute buffers
    context_reason: str = "num_ctx"  # why the context is as long as it is
    parallel_reason: str = "num_parallel"  # why it has as many slots as it has

    @property
    def ram_bytes(self) -> int:
        """The part of the estimate that lands in system memory."""
        return int(self.estimate_bytes * (1 - self.placement.gpu_fraction))


class RunnerLoader:
    def __init__(
        self,
        factory: RunnerFactory,
        gpu_probe: Callable[[], list[int]],
        log_dir: Path | None = None,
        on_load: Callable[[str, float], None] | None = None,
    ):
        self._factory = factory
        self._gpu_probe = gpu_probe
        self._log_dir = log_dir
        self._on_load = on_load

    async def plan(
        self, target: LoadTarget, spec: RunnerSpec, free_ram: float = 0.0, cap: int = 32768
    ) -> LoadPlan:
        """GPU layers, and the slots and context where the spec leaves them to us
        (``num_parallel``, ``num_ctx`` 0)."""
        auto = spec.num_gpu_layers == AUTO_GPU_LAYERS
        free_vram = await asyncio.to_thread(self._gpu_probe) if auto else []
        parallel = None
        if not spec.num_parallel:
            parallel = _parallel_for(target, spec, free_vram, cap)
            spec = replace(spec, num_parallel=parallel.num_parallel)
        context = None
        if not spec.num_ctx:
            context = _context_for(target, spec, free_ram, free_vram, cap)
            spec = replace(
                spec, num_ctx=context.num_ctx, num_batch=min(spec.num_batch, context.num_ctx)
            )
        n_ctx_total = spec.num_ctx * spec.num_parallel
        requested = None if auto else spec.num_gpu_layers
        kv_type = spec.kv_cache_type
        placement = choose_gpu_layers(target.footprint, n_ctx_total, free_vram, requested, kv_type)
        spec = replace(spec, num_gpu_layers=placement.gpu_layers)
        scores = _attention_scores(target.footprint, spec)
        estimate = estimate_bytes(
            target.footprint, spec.num_ctx, spec.num_parallel, kv_type, scores
        )
        return LoadPlan(
            spec,
            placement,
            estimate,
            context.reason if context else "num_ctx",
            parallel.reason if parallel else "num_parallel",
        )

    async def sizes(
        self, target: LoadTarget, spec: RunnerSpec, free_ram: float, cap: int
    ) -> tuple[ParallelChoice, ContextChoice]:
        """The slots and context :meth:`plan` would pick for a spec that leaves them to us
        (a spec that sets them gets them back, said so)."""
        auto = spec.num_gpu_layers == AUTO_GPU_LAYERS
        free_vram = await asyncio.to_thread(self._gpu_probe) if auto else []
        parallel = ParallelChoice(spec.num_parallel, "num_parallel")
        if not spec.num_parallel:
            parallel = _parallel_for(target, spec, free_vram, cap)
            spec = replace(spec, num_parallel=parallel.num_parallel)
        context = ContextChoice(spec.num_ctx, "num_ctx")
        if not spec.num_ctx:
            context = _context_for(target, spec, free_ram, free_vram, cap)
        return parallel, context

    async def start(self, target: LoadTarget, plan: LoadPlan) -> tuple[Runner, str]:
        """The started runner and where it runs ("100% CPU", ...)."""
        started = time.monotonic()
        try:
            runner = await self._factory(plan.spec, self._log_path(target.name))
        except InvalidRequestError:
            raise  # a 400 that says what was asked wrongly (a draft of another vocabulary)
        except IncompatibleBuildError:
            raise  # no model loads until llama.cpp is rebuilt: its own message says how
        except RunnerError as error:
            raise ModelLoadError(f"failed to load model {target.name!r}: {error}") from None
        seconds = time.monotonic() - started
        info = runner.info
        experts = (info.cpu_expert_layers, info.expert_layers)
        processor = describe_placement(info.gpu_layers, info.total_layers, info.backend, experts)
        _log_load(target.name, plan, processor, info, seconds)
        if self._on_load is not None:
            self._on_load(target.name, seconds)
        return runner, processor

    def _log_path(self, name: str) -> Path | None:
        if self._log_dir is None:
            return None
        self._log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # logs are private
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        return self._log_dir / f"runner-{safe}.log"


def _gpu_room(target: LoadTarget, spec: RunnerSpec, free_vram: list[int]) -> float | None:
    """The usable VRAM of the largest GPU where the layers are left to us and the weights fit
    there; None where the model will run (wholly or partly) on the CPU."""
    if not free_vram or spec.num_gpu_layers != AUTO_GPU_LAYERS:
        return None
    vram = max(free_vram) * (1 - VRAM_MARGIN)
    if vram > target.footprint.weights_bytes + COMPUTE_MARGIN_BYTES:
        return vram
    return None


def _context_cap(target: LoadTarget, cap: int) -> int:
    if target.embedding_only:  # one ubatch holds a whole input: keep it as it always was
        return min(cap, EMBEDDING_MAX_CONTEXT)
    return cap


def _context_for(
    target: LoadTarget, spec: RunnerSpec, free_ram: float, free_vram: list[int], cap: int
) -> ContextChoice:
    """The default context of ``target``: sized to the GPU when its weights fit there (and the
    layers are left to us), else to free RAM."""
    vram = _gpu_room(target, spec, free_vram)
    return default_context(
        target.footprint,
        target.n_ctx_train,
        free_ram if vram is None else vram,
        spec.num_parallel,
        spec.kv_cache_type,
        _context_cap(target, cap),
    )


def _parallel_for(
    target: LoadTarget, spec: RunnerSpec, free_vram: list[int], cap: int
) -> ParallelChoice:
    """The default slots of ``target``: more than 4 only where a GPU holds it whole (an
    embedding model keeps 4), each slot counted with the context it would get anyway."""
    vram = None if target.embedding_only else _gpu_room(target, spec, free_vram)
    if vram is None:
        return default_parallel(target.footprint, 0, None)
    slot_context = spec.num_ctx or context_ceiling(target.n_ctx_train, cap)
    return default_parallel(target.footprint, slot_context, vram, spec.kv_cache_type)


def _attention_scores(footprint: ModelFootprint, spec: RunnerSpec) -> int:
    """The memory the runner keeps for attention scores where it runs without flash
    attention (set so, or ``auto`` decided so: ``daemon.runners.attention``): the model's
    context, and its draft model's (the same cells and batch)."""
    n_batch = max(spec.num_batch, spec.num_parallel)  # as the runner sizes its batch
    total = 0
    for part in (footprint, footprint.draft):
        if part is None:
            continue
        flash = flash_attention_setting(
            spec.flash_attention,
            head_size=part.values_per_head,
            n_head=part.n_head,
            n_ctx=spec.num_ctx,
            n_batch=n_batch,
            kv_cache_type=spec.kv_cache_type,
            on_gpu=spec.num_gpu_layers != 0,
        )
        if flash == "off":
            total += attention_scores_bytes(part.n_head, spec.num_ctx, n_batch)
    return total


def _log_load(name: str, plan: LoadPlan, processor: str, info, seconds: float) -> None:
    placement = plan.placement
    message = (
        f"loaded {name} in {seconds:.2f}s: {processor} (backend {info.backend}, "
        f"{info.gpu_layers}/{info.total_layers} layers on GPU; {placement.reason}), "
        f"ctx {info.n_ctx} ({plan.context_reason}) x {info.n_parallel} parallel "
        f"({plan.parallel_reason}), "
        f"KV cache {plan.spec.kv_cache_type}"
    )
    if placement.gpu_layers > 0 and info.gpu_layers == 0:
        log.warning("%s: GPU layers were planned but the runner has no GPU backend", message)
    else:
        log.info("%s", message)
