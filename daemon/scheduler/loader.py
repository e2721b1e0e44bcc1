"""Starting one runner: plan (GPU layers, memory), start the process, report where it runs.

The scheduler decides *whether* and *when* to load; this module only knows *how*. What a load
takes is its memory plan (``planner``: from the model's header, corrected by what llama.cpp
reported for the same model and settings before), and what a load reports is kept for the
next plan. The load log line always says where the model runs ("100% CPU", "100% GPU", a
split) and warns when GPU layers were planned but the runner came up without a GPU backend.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from daemon.errors import ModelLoadError
from daemon.runners.types import (
    IncompatibleBuildError,
    InvalidRequestError,
    RunnerError,
    RunnerSpec,
)
from daemon.scheduler.context_size import ContextChoice, context_ceiling, default_context
from daemon.scheduler.loaded import LoadTarget, Runner, RunnerFactory
from daemon.scheduler.memory import COMPUTE_MARGIN_BYTES
from daemon.scheduler.memory_plan import MemoryPlan
from daemon.scheduler.parallel import ParallelChoice, default_parallel
from daemon.scheduler.placement import (
    VRAM_MARGIN,
    Placement,
    choose_gpu_layers,
    describe_placement,
)
from daemon.scheduler.planner import MemoryPlanner, TargetShapes

__all__ = ["AUTO_GPU_LAYERS", "LoadPlan", "RunnerLoader"]

EMBEDDING_MAX_CONTEXT = 4096  # the sized context of an embedding model, at most
AUTO_GPU_LAYERS = -2  # RunnerSpec.num_gpu_layers before placement: "choose from free VRAM"

log = logging.getLogger("localllm.scheduler")
_MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class LoadPlan:
    spec: RunnerSpec  # with the GPU layers chosen
    placement: Placement
    memory: MemoryPlan  # what it takes, part by part and device by device
    context_reason: str = "num_ctx"  # why the context is as long as it is
    parallel_reason: str = "num_parallel"  # why it has as many slots as it has
    measured_key: str = ""  # what llama.cpp's figures for this load are kept under

    @property
    def estimate_bytes(self) -> int:
        """The whole runner at load, every device: weights, caches, buffers."""
        return self.memory.load_bytes

    @property
    def ram_bytes(self) -> int:
        """The part that lands in system memory (weights mapped from the file included)."""
        return self.memory.ram_bytes


class RunnerLoader:
    def __init__(
        self,
        factory: RunnerFactory,
        gpu_probe: Callable[[], list[int]],
        log_dir: Path | None = None,
        on_load: Callable[[str, float], None] | None = None,
        planner: MemoryPlanner | None = None,
    ):
        self._factory = factory
        self._gpu_probe = gpu_probe
        self._log_dir = log_dir
        self._on_load = on_load
        self.planner = planner or MemoryPlanner()

    async def plan(
        self, target: LoadTarget, spec: RunnerSpec, free_ram: float = 0.0, cap: int = 32768
    ) -> LoadPlan:
        """GPU layers, and the slots and context where the spec leaves them to us
        (``num_parallel``, ``num_ctx`` 0)."""
        auto = spec.num_gpu_layers == AUTO_GPU_LAYERS
        free_vram = await asyncio.to_thread(self._gpu_probe) if auto else []
        shapes = await self.planner.shapes(target)
        parallel = None
        if not spec.num_parallel:
            parallel = _parallel_for(target, spec, free_vram, cap)
            spec = replace(spec, num_parallel=parallel.num_parallel)
        context = None
        if not spec.num_ctx:
            context = self._context_for(target, shapes, spec, free_ram, free_vram, cap)
            spec = _with_context(spec, context.num_ctx)
        n_ctx_total = spec.num_ctx * spec.num_parallel
        requested = None if auto else spec.num_gpu_layers
        kv_type = spec.kv_cache_type
        placement = choose_gpu_layers(target.footprint, n_ctx_total, free_vram, requested, kv_type)
        spec = replace(spec, num_gpu_layers=placement.gpu_layers)
        memory, key = self.planner.plan(shapes, spec)
        return LoadPlan(
            spec,
            placement,
            memory,
            context.reason if context else "num_ctx",
            parallel.reason if parallel else "num_parallel",
            key,
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
            shapes = await self.planner.shapes(target)
            context = self._context_for(target, shapes, spec, free_ram, free_vram, cap)
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
        await self.planner.record(plan.measured_key, info.buffers)
        return runner, processor

    def _context_for(
        self,
        target: LoadTarget,
        shapes: TargetShapes,
        spec: RunnerSpec,
        free_ram: float,
        free_vram: list[int],
        cap: int,
    ) -> ContextChoice:
        """The default context of ``target``: sized to the GPU when its weights fit there (and
        the layers are left to us), else to free RAM; what a context needs is the plan's."""
        vram = _gpu_room(target, spec, free_vram)
        layers = 0 if vram is None else -1

        def need(num_ctx: int) -> int:
            sized = replace(_with_context(spec, num_ctx), num_gpu_layers=layers)
            memory, _ = self.planner.plan(shapes, sized)
            return memory.ram_bytes if vram is None else memory.vram_bytes

        return default_context(
            need,
            target.n_ctx_train,
            free_ram if vram is None else vram,
            spec.num_parallel,
            _context_cap(target, cap),
        )

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


def _with_context(spec: RunnerSpec, num_ctx: int) -> RunnerSpec:
    """``spec`` at ``num_ctx`` tokens a slot (a batch never longer than the context)."""
    return replace(spec, num_ctx=num_ctx, num_batch=min(spec.num_batch, num_ctx))


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


def _log_load(name: str, plan: LoadPlan, processor: str, info, seconds: float) -> None:
    placement = plan.placement
    message = (
        f"loaded {name} in {seconds:.2f}s: {processor} (backend {info.backend}, "
        f"{info.gpu_layers}/{info.total_layers} layers on GPU; {placement.reason}), "
        f"ctx {info.n_ctx} ({plan.context_reason}) x {info.n_parallel} parallel "
        f"({plan.parallel_reason}), "
        f"KV cache {plan.spec.kv_cache_type}, memory {plan.estimate_bytes / _MIB:,.0f} MiB "
        f"({'measured' if plan.memory.measured else 'planned'}; "
        f"{plan.ram_bytes / _MIB:,.0f} MiB RAM)"
    )
    if placement.gpu_layers > 0 and info.gpu_layers == 0:
        log.warning("%s: GPU layers were planned but the runner has no GPU backend", message)
    else:
        log.info("%s", message)
