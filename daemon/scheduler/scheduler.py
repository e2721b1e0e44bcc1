"""The scheduler: the one owner of every runner.

Requests ``lease`` a model; the scheduler loads it on first use (one load at a time, while
requests for loaded models keep flowing), counts who holds it so a busy model is never
unloaded, unloads it when its keep-alive runs out, evicts the least recently used idle model
when memory or ``max_loaded_models`` demand it, reloads it when a request needs other runner
options, and drops a crashed runner so the next request starts a fresh one. A bounded count of
waiting and running requests turns overload into an immediate "server busy".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from pathlib import Path

from daemon.errors import InsufficientMemoryError, ServerBusyError
from daemon.runners.types import RunnerSpec
from daemon.scheduler.context_size import ContextChoice
from daemon.scheduler.lease import Lease
from daemon.scheduler.loaded import (
    LoadedModel,
    LoadTarget,
    ModelStatus,
    RunnerFactory,
    RunnerOptions,
)
from daemon.scheduler.loader import AUTO_GPU_LAYERS, RunnerLoader
from daemon.scheduler.memory import MemoryInfo, nvidia_free_vram, system_memory
from daemon.scheduler.parallel import ParallelChoice

__all__ = ["Scheduler", "SchedulerConfig"]

log = logging.getLogger("localllm.scheduler")


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    keep_alive: float = 300.0  # seconds; 0 unloads after each request, negative never
    max_loaded_models: int = 0  # 0: as many as memory allows
    max_queue: int = 512  # requests waiting or running before "server busy"
    headroom: float = 0.20  # fraction of free memory never planned for
    context_cap: int = 32768  # the longest default context (``context_size``)
    log_dir: Path | None = None  # runner logs, one file per model load


class Scheduler:
    def __init__(
        self,
        config: SchedulerConfig,
        runner_factory: RunnerFactory,
        *,
        memory_probe: Callable[[], MemoryInfo] = system_memory,
        gpu_probe: Callable[[], list[int]] = nvidia_free_vram,
        clock: Callable[[], float] = time.monotonic,
        on_load: Callable[[str, float], None] | None = None,
    ):
        self.config = config
        self._loader = RunnerLoader(runner_factory, gpu_probe, config.log_dir, on_load)
        self._memory_probe = memory_probe
        self._clock = clock
        self._models: dict[str, LoadedModel] = {}
        self._loading: dict[str, asyncio.Task[LoadedModel]] = {}
        self._load_lock = asyncio.Lock()
        self._changed = asyncio.Condition()
        self._wake = asyncio.Event()
        self._claims: dict[str, int] = {}  # requests waiting on a load: not evictable yet
        self._pending = 0
        self._background: set[asyncio.Task] = set()

    # -- requests ---------------------------------------------------------------------------
    @property
    def pending(self) -> int:
        """Requests waiting for or holding a model."""
        return self._pending

    @contextlib.asynccontextmanager
    async def lease(
        self, target: LoadTarget, options: RunnerOptions, keep_alive: float | None = None
    ) -> AsyncIterator[Lease]:
        lease = await self.acquire(target, options, keep_alive)
        try:
            yield lease
        finally:
            lease.release()

    async def acquire(
        self, target: LoadTarget, options: RunnerOptions, keep_alive: float | None = None
    ) -> Lease:
        """Hold ``target`` loaded with ``options`` and one of its slots until released."""
        if self._pending >= self.config.max_queue:
            raise ServerBusyError(self.config.max_queue)
        self._pending += 1
        try:
            model = await self._get(target, self._spec(target, options))
        except BaseException:
            self._pending -= 1
            raise
        model.keep_alive = self.config.keep_alive if keep_alive is None else keep_alive
        try:
            await model.slots.acquire()
        except BaseException:
            self._finish(model, crashed=False)
            raise
        model.busy += 1
        return Lease(model, self._release)

    def _release(self, model: LoadedModel, crashed: bool) -> None:
        model.busy -= 1
        model.slots.release()
        self._finish(model, crashed)

    def _finish(self, model: LoadedModel, crashed: bool) -> None:
        """A request let go of ``model``: drop the count, then expire, unload or forget it."""
        self._pending -= 1
        model.refs -= 1
        model.last_used = self._clock()
        dead = crashed or not model.runner.alive
        if dead and self._forget(model, "its runner stopped"):
            self._spawn(model.runner.stop())
        if model.refs > 0:
            return
        model.idle.set()
        if model.keep_alive == 0 or model.stale:
            self._spawn(self._unload_if_idle(model, "keep_alive reached"))
        else:
            model.expires_at = self._expiry(model)
            self._wake.set()
        self._spawn(self._notify())

    def _expiry(self, model: LoadedModel) -> float | None:
        return None if model.keep_alive < 0 else model.last_used + model.keep_alive

    async def sizes(
        self, target: LoadTarget, options: RunnerOptions
    ) -> tuple[ParallelChoice, ContextChoice]:
        """The slots and context ``target`` runs (or would run) with ``options``, and why."""
        spec = self._spec(target, options)
        loaded = self._models.get(target.name)
        if loaded is not None and loaded.usable and _same(loaded, spec):
            return (
                ParallelChoice(loaded.spec.num_parallel, f"loaded: {loaded.parallel_reason}"),
                ContextChoice(loaded.spec.num_ctx, f"loaded: {loaded.context_reason}"),
            )
        free = await self._free_memory()
        return await self._loader.sizes(target, spec, free, self.config.context_cap)

    # -- loading ----------------------------------------------------------------------------
    def _spec(self, target: LoadTarget, options: RunnerOptions) -> RunnerSpec:
        return RunnerSpec(
            model_name=target.name,
            model_paths=target.model_paths,
            projector_path=target.projector_path,
            adapters=target.adapters,
            num_ctx=options.num_ctx,
            num_parallel=options.num_parallel,
            num_gpu_layers=AUTO_GPU_LAYERS if options.num_gpu is None else options.num_gpu,
            num_threads=options.num_threads,
            num_batch=options.num_batch,
            num_draft=options.num_draft,
            draft_name=target.draft_name,
            draft_paths=target.draft_paths,
            embedding_only=target.embedding_only,
            kv_cache_type=options.kv_cache_type,
            flash_attention=options.flash_attention,
            backend_sampling=options.backend_sampling,
            host_cache_bytes=options.host_cache_bytes,
        )

    async def _get(self, target: LoadTarget, spec: RunnerSpec) -> LoadedModel:
        """The loaded model for ``spec`` with one more reference, loading it if need be."""
        while True:
            model = self._ready(target.name, spec)
            if model is not None:
                return model
            task = self._loading.get(target.name)
            if task is None or task.done():
                task = asyncio.get_running_loop().create_task(self._load(target, spec))
                self._loading[target.name] = task
            self._claims[target.name] = self._claims.get(target.name, 0) + 1
            try:
                await asyncio.shield(task)
            finally:
                self._claims[target.name] -= 1

    def _ready(self, name: str, spec: RunnerSpec) -> LoadedModel | None:
        model = self._models.get(name)
        if model is None or not model.usable or not _same(model, spec):
            return None
        model.refs += 1
        model.idle.clear()
        model.expires_at = None
        return model

    async def _load(self, target: LoadTarget, spec: RunnerSpec) -> LoadedModel:
        try:
            async with self._load_lock:
                return await self._load_locked(target, spec)
        finally:
            self._loading.pop(target.name, None)

    async def _load_locked(self, target: LoadTarget, spec: RunnerSpec) -> LoadedModel:
        current = self._models.get(target.name)
        if current is not None and current.usable and _same(current, spec):
            return current
        if current is not None:
            await self._retire(current)
        plan = await self._loader.plan(
            target, spec, await self._free_memory(), self.config.context_cap
        )
        await self._make_room(target.name, plan.ram_bytes)
        runner, processor = await self._loader.start(target, plan)
        model = LoadedModel(
            target.name,
            plan.spec,
            runner,
            processor,
            plan.estimate_bytes,
            self.config.keep_alive,
            self._clock(),
            requested=spec,
            context_reason=plan.context_reason,
            parallel_reason=plan.parallel_reason,
        )
        model.expires_at = self._expiry(model)  # waiters claim it at once; else it expires
        self._models[target.name] = model
        self._wake.set()
        return model

    # -- making room ------------------------------------------------------------------------
    async def _make_room(self, name: str, needed: int) -> None:
        """Evict idle models, least recently used first, until ``needed`` fits."""
        while True:
            free = await self._free_memory()
            too_many = 0 < self.config.max_loaded_models <= len(self._models)
            if not too_many and needed <= free:
                return
            victim = self._least_recently_used_idle()
            if victim is not None:
                await self._unload(victim, "to make room")
                continue
            if not self._models:
                raise InsufficientMemoryError(name, needed, int(free))
            async with self._changed:
                await self._changed.wait()

    async def _free_memory(self) -> float:
        """Free memory we may plan for, after headroom; loaded models count as used."""
        info = await asyncio.to_thread(self._memory_probe)
        loaded = sum(m.estimate_bytes for m in self._models.values())
        free = min(info.available, info.total - loaded)
        return max(0.0, free * (1 - self.config.headroom))

    def _least_recently_used_idle(self) -> LoadedModel | None:
        idle = [m for m in self._models.values() if m.refs == 0 and not self._claims.get(m.name)]
        return min(idle, key=lambda m: m.last_used, default=None)

    async def _retire(self, model: LoadedModel) -> None:
        """Reload path: stop new requests, let running ones finish, then unload."""
        model.stale = True
        await model.idle.wait()
        await self._unload(model, "runner options changed")

    # -- unloading --------------------------------------------------------------------------
    async def _unload_if_idle(self, model: LoadedModel, why: str) -> None:
        if model.refs == 0 and self._models.get(model.name) is model:
            await self._unload(model, why)

    async def _unload(self, model: LoadedModel, why: str) -> None:
        self._forget(model, why)
        try:
            await model.runner.stop()
        except Exception:  # a runner that is already gone cannot fail to stop
            log.exception("stopping the runner of %s failed", model.name)
        await self._notify()

    def _forget(self, model: LoadedModel, why: str) -> bool:
        if self._models.get(model.name) is not model:
            return False
        del self._models[model.name]
        log.info("unloaded %s: %s", model.name, why)
        return True

    async def unload(self, name: str) -> bool:
        """Unload ``name`` now if it is idle, else as soon as its requests finish."""
        model = self._models.get(name)
        if model is None:
            return False
        model.keep_alive = 0
        if model.refs == 0:
            await self._unload(model, "unload requested")
        return True

    async def reap(self) -> None:
        """Unload every idle model whose keep-alive has run out."""
        now = self._clock()
        for model in list(self._models.values()):
            if not model.runner.alive and model.refs == 0:
                await self._unload(model, "its runner stopped")
            elif model.refs == 0 and model.expires_at is not None and model.expires_at <= now:
                await self._unload(model, "keep_alive expired")

    async def run(self, max_sleep: float = 5.0) -> None:
        """Background loop: reap expired models when the next one is due."""
        while True:
            self._wake.clear()
            await self.reap()
            due = [m.expires_at for m in self._models.values() if m.expires_at is not None]
            delay = max_sleep if not due else min(max_sleep, max(0.01, min(due) - self._clock()))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    async def shutdown(self) -> None:
        for task in list(self._loading.values()):
            task.cancel()
        for model in list(self._models.values()):
            await self._unload(model, "shutting down")
        for task in list(self._background):
            task.cancel()

    # -- status -----------------------------------------------------------------------------
    def status(self) -> list[ModelStatus]:
        now = self._clock()
        return [model.status(now) for model in self._models.values()]

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _spawn(self, coroutine) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def _same(model: LoadedModel, wanted: RunnerSpec) -> bool:
    """Equal for reuse: the same request as the one that loaded it (placement may have changed
    its GPU layers, e.g. ``num_gpu: -1`` on a CPU build), or an automatic GPU choice that
    matches whatever was placed. Comparing with the placed spec alone would reload forever."""
    if model.requested == wanted:
        return True
    if wanted.num_gpu_layers == AUTO_GPU_LAYERS:
        wanted = replace(wanted, num_gpu_layers=model.spec.num_gpu_layers)
    return model.spec == wanted
