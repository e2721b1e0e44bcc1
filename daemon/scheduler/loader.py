"""Starting one runner: plan (slots, context, GPU layers, memory), start it, say where it runs.

The scheduler decides *whether* and *when* to load; this module only knows *how*. What a load
takes is its memory plan (``planner``: from the model's header, corrected by what llama.cpp
reported for the same model and settings before), and every choice left to the daemon is made
on it: the slots and the context (``parallel``, ``context_size``: sized to the GPUs where the
whole model fits there, else to free RAM), then the GPU layers and a MoE model's experts kept
in RAM (``placement``). Every plan splits its GPU layers over the GPUs found as llama.cpp will
(by their free memory), and each GPU's part is held against that GPU. Where no GPU is found
the plan keeps every part in RAM, whatever the layers asked (a CPU-only build runs them
there). What a load reports is kept for the next plan. The load log line always says where
the model runs ("100% CPU", "100% GPU", a split) and warns when GPU layers were planned but
the runner came up without a GPU backend.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from localllm.daemon.errors import ModelLoadError
from localllm.daemon.runners.types import (
    IncompatibleBuildError,
    InvalidRequestError,
    RunnerError,
    RunnerInfo,
    RunnerSpec,
)
from localllm.daemon.scheduler.context_size import (
    CONTEXT_FLOOR,
    ContextChoice,
    context_ceiling,
    default_context,
)
from localllm.daemon.scheduler.loaded import LoadTarget, Runner, RunnerFactory
from localllm.daemon.scheduler.memory_plan import CPU, MemoryPlan
from localllm.daemon.scheduler.parallel import DEFAULT_PARALLEL, ParallelChoice, default_parallel
from localllm.daemon.scheduler.placement import (
    Placement,
    choose_placement,
    describe_placement,
    fits_gpus,
    gpu_usable,
    usable_vram,
    vram_need,
)
from localllm.daemon.scheduler.planner import MemoryPlanner, TargetShapes
from localllm.daemon.scheduler.refusal import what_fits

__all__ = ["AUTO_CPU_MOE", "AUTO_GPU_LAYERS", "LoadPlan", "RunnerLoader"]

EMBEDDING_MAX_CONTEXT = 4096  # the sized context of an embedding model, at most
AUTO_GPU_LAYERS = -2  # RunnerSpec.num_gpu_layers before placement: "choose from free VRAM"
AUTO_CPU_MOE = -2  # RunnerSpec.num_cpu_moe before placement: "choose, if the model needs it"

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
    ram_free: float = 0.0  # the free RAM it was planned for (after headroom; models loaded
    # then counted as used: a load unloads idle ones first if it must)
    vram_free: int = 0  # every GPU's free VRAM less its margin, together; 0: no GPU found
    suggestion: str = ""  # where it does not fit: what would ("it fits at 8,192 tokens...")
    gpu_free: tuple[int, ...] = ()  # each GPU's free VRAM less its margin (GPU0 first)

    @property
    def estimate_bytes(self) -> int:
        """The whole runner at load, every device: weights, caches, buffers."""
        return self.memory.load_bytes

    @property
    def ram_bytes(self) -> int:
        """The part that lands in system memory (weights mapped from the file included)."""
        return self.memory.ram_bytes

    @property
    def vram_bytes(self) -> int:
        """The part on the GPU (0 where no GPU was found)."""
        return self.memory.vram_bytes

    @property
    def fits(self) -> bool:
        """Whether the RAM part fits ``ram_free`` and each GPU's part that GPU's free VRAM
        (``gpu_free``)."""
        gpus = self.memory.gpu_bytes().items()
        return self.ram_bytes <= self.ram_free and all(
            size <= (self.free_on(gpu) or 0) for gpu, size in gpus
        )

    def free_on(self, device: str) -> int | None:
        """The free memory planned for on ``device`` ("CPU", "GPU1"...); None: no such GPU."""
        if device == CPU:
            return int(self.ram_free)
        index = device.removeprefix("GPU")
        if index.isdigit() and int(index) < len(self.gpu_free):
            return self.gpu_free[int(index)]
        return None


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
        """Slots and context where the spec leaves them to us (``num_parallel``, ``num_ctx``
        0), then GPU layers and experts in RAM (``AUTO_GPU_LAYERS``, ``AUTO_CPU_MOE``: ours to
        choose), and the memory plan of the result."""
        free_vram = list(await asyncio.to_thread(self._gpu_probe))
        shapes = await self.planner.shapes(target)
        spec, parallel, context = self._sizes(target, shapes, spec, free_ram, free_vram, cap)
        layers = None if spec.num_gpu_layers == AUTO_GPU_LAYERS else spec.num_gpu_layers
        cpu_moe = None if spec.num_cpu_moe == AUTO_CPU_MOE else spec.num_cpu_moe
        split = tuple(free_vram)

        def plan_for(gpu_layers: int, moe: int) -> MemoryPlan:
            placed = replace(spec, num_gpu_layers=gpu_layers, num_cpu_moe=moe)
            return self.planner.plan(shapes, placed, split)[0]

        placement = choose_placement(shapes.model, plan_for, free_vram, layers, cpu_moe)
        spec = replace(
            spec, num_gpu_layers=placement.gpu_layers, num_cpu_moe=placement.cpu_moe_layers
        )
        planned = spec if free_vram else replace(spec, num_gpu_layers=0)  # all in RAM
        memory, key = self.planner.plan(shapes, planned, split)
        return LoadPlan(
            spec,
            placement,
            memory,
            context.reason,
            parallel.reason,
            key,
            free_ram,
            usable_vram(free_vram),
            gpu_free=tuple(gpu_usable(free_vram).values()),
        )

    async def sizes(
        self, target: LoadTarget, spec: RunnerSpec, free_ram: float, cap: int
    ) -> tuple[ParallelChoice, ContextChoice]:
        """The slots and context :meth:`plan` would pick for a spec that leaves them to us
        (a spec that sets them gets them back, said so)."""
        free_vram = list(await asyncio.to_thread(self._gpu_probe))
        shapes = await self.planner.shapes(target)
        _, parallel, context = self._sizes(target, shapes, spec, free_ram, free_vram, cap)
        return parallel, context

    async def what_fits(self, target: LoadTarget, plan: LoadPlan, free: float) -> str:
        """What of ``plan`` would fit ``free`` bytes of RAM, in words: a shorter context, or
        fewer slots (the same layers on the GPU)."""
        shapes = await self.planner.shapes(target)
        spec = replace(plan.spec, num_gpu_layers=plan.memory.settings.gpu_layers)
        split = plan.memory.settings.gpu_split

        def need(num_ctx: int, slots: int) -> int:
            sized = replace(_with_context(spec, num_ctx), num_parallel=slots)
            return self.planner.plan(shapes, sized, split)[0].ram_bytes

        return what_fits(need, free, spec.num_ctx, spec.num_parallel)

    def _sizes(
        self,
        target: LoadTarget,
        shapes: TargetShapes,
        spec: RunnerSpec,
        free_ram: float,
        free_vram: list[int],
        cap: int,
    ) -> tuple[RunnerSpec, ParallelChoice, ContextChoice]:
        """The spec with its slots and context decided, and why each."""
        gpus = self._whole_on_gpu(target, shapes, spec, free_vram, cap)
        parallel = ParallelChoice(spec.num_parallel, "num_parallel")
        if not spec.num_parallel:
            parallel = self._parallel_for(target, shapes, spec, free_vram, gpus, cap)
            spec = replace(spec, num_parallel=parallel.num_parallel)
        context = ContextChoice(spec.num_ctx, "num_ctx")
        if not spec.num_ctx:
            context = self._context_for(target, shapes, spec, free_ram, free_vram, gpus, cap)
            spec = _with_context(spec, context.num_ctx)
        return spec, parallel, context

    def _whole_on_gpu(
        self,
        target: LoadTarget,
        shapes: TargetShapes,
        spec: RunnerSpec,
        free_vram: list[int],
        cap: int,
    ) -> dict[str, int] | None:
        """The usable VRAM of each GPU ("GPU0": bytes) where the layers are left to us and
        the whole model fits the GPUs (its context as set, else the shortest a default gives);
        None where it will run (wholly or partly) on the CPU."""
        usable = gpu_usable(free_vram)
        if not any(usable.values()) or spec.num_gpu_layers != AUTO_GPU_LAYERS:
            return None
        ceiling = context_ceiling(target.n_ctx_train, _context_cap(target, cap))
        num_ctx = spec.num_ctx or min(CONTEXT_FLOOR, ceiling)
        slots = spec.num_parallel or DEFAULT_PARALLEL
        whole = self._on_gpu(shapes, spec, free_vram, num_ctx, slots)
        return usable if fits_gpus(whole, free_vram) else None

    def _on_gpu(
        self,
        shapes: TargetShapes,
        spec: RunnerSpec,
        free_vram: list[int],
        num_ctx: int,
        slots: int,
    ) -> MemoryPlan:
        """The plan with every layer on the GPUs at ``num_ctx`` tokens x ``slots``."""
        placed = replace(
            _with_context(spec, num_ctx),
            num_parallel=slots,
            num_gpu_layers=-1,
            num_cpu_moe=_asked_cpu_moe(spec),
        )
        return self.planner.plan(shapes, placed, tuple(free_vram))[0]

    def _parallel_for(
        self,
        target: LoadTarget,
        shapes: TargetShapes,
        spec: RunnerSpec,
        free_vram: list[int],
        gpus: dict[str, int] | None,
        cap: int,
    ) -> ParallelChoice:
        """The default slots of ``target``: more than 4 only where the GPUs hold it whole
        (an embedding model keeps 4), each slot counted with the context it would get
        anyway."""
        if gpus is None or target.embedding_only:
            return default_parallel(None, 0, None)
        slot_context = spec.num_ctx or context_ceiling(target.n_ctx_train, cap)

        def plan_for(slots: int) -> MemoryPlan:
            return self._on_gpu(shapes, spec, free_vram, slot_context, slots)

        return default_parallel(plan_for, slot_context, gpus)

    def _context_for(
        self,
        target: LoadTarget,
        shapes: TargetShapes,
        spec: RunnerSpec,
        free_ram: float,
        free_vram: list[int],
        gpus: dict[str, int] | None,
        cap: int,
    ) -> ContextChoice:
        """The default context of ``target``: sized to the GPUs where they hold the whole
        model (and the layers are left to us; each GPU's part within that GPU: ``vram_need``),
        else to free RAM; what a context needs is the plan's."""
        if gpus is None:

            def need(num_ctx: int) -> int:
                sized = replace(
                    _with_context(spec, num_ctx),
                    num_gpu_layers=0,
                    num_cpu_moe=_asked_cpu_moe(spec),
                )
                return self.planner.plan(shapes, sized)[0].ram_bytes

            limit, where = free_ram, "free"
        else:

            def need(num_ctx: int) -> int:
                plan = self._on_gpu(shapes, spec, free_vram, num_ctx, spec.num_parallel)
                return vram_need(plan, gpus)

            limit = sum(gpus.values())
            where = "free VRAM" if len(gpus) == 1 else f"free VRAM of {len(gpus)} GPUs"
        return default_context(
            need,
            target.n_ctx_train,
            limit,
            spec.num_parallel,
            _context_cap(target, cap),
            where=where,
        )

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

    def _log_path(self, name: str) -> Path | None:
        if self._log_dir is None:
            return None
        self._log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # logs are private
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
        return self._log_dir / f"runner-{safe}.log"


def _context_cap(target: LoadTarget, cap: int) -> int:
    if target.embedding_only:  # one ubatch holds a whole input: keep it as it always was
        return min(cap, EMBEDDING_MAX_CONTEXT)
    return cap


def _with_context(spec: RunnerSpec, num_ctx: int) -> RunnerSpec:
    """``spec`` at ``num_ctx`` tokens a slot (a batch never longer than the context)."""
    return replace(spec, num_ctx=num_ctx, num_batch=min(spec.num_batch, num_ctx))


def _asked_cpu_moe(spec: RunnerSpec) -> int:
    """The layers whose experts stay in RAM as asked (none where it is ours to choose)."""
    return 0 if spec.num_cpu_moe == AUTO_CPU_MOE else spec.num_cpu_moe


def _log_load(name: str, plan: LoadPlan, processor: str, info: RunnerInfo, seconds: float) -> None:
    placement = plan.placement
    message = (
        f"loaded {name} in {seconds:.2f}s: {processor} (backend {info.backend}, "
        f"{info.gpu_layers}/{info.total_layers} layers on GPU; {placement.reason}), "
        f"ctx {info.n_ctx} ({plan.context_reason}) x {info.n_parallel} parallel "
        f"({plan.parallel_reason}), "
        f"KV cache {plan.spec.kv_cache_type}, memory {plan.estimate_bytes / _MIB:,.0f} MiB "
        f"({'measured' if plan.memory.measured else 'planned'}; "
        f"{plan.ram_bytes / _MIB:,.0f} MiB RAM" + _vram_text(plan.memory) + ")"
    )
    if placement.gpu_layers > 0 and info.gpu_layers == 0:
        log.warning("%s: GPU layers were planned but the runner has no GPU backend", message)
    else:
        log.info("%s", message)


def _vram_text(memory: MemoryPlan) -> str:
    """ ", 7,000 MiB VRAM", with several GPUs each one's: "(GPU0 3,500, GPU1 3,500)"."""
    gpus = memory.gpu_bytes()
    if not gpus:
        return ""
    text = f", {memory.vram_bytes / _MIB:,.0f} MiB VRAM"
    if len(gpus) > 1:
        text += " (" + ", ".join(f"{gpu} {size / _MIB:,.0f}" for gpu, size in gpus.items()) + ")"
    return text
