"""The scheduler: the one owner of every runner.

Requests ``lease`` a model; the scheduler loads it on first use (one load at a time, while
requests for loaded models keep flowing), counts who holds it so a busy model is never
unloaded, unloads it when its keep-alive runs out, evicts the least recently used idle model
when memory or ``max_loaded_models`` demand it, reloads it when a request needs other runner
options, and drops a crashed runner so the next request starts a fresh one. A bounded count of
waiting and running requests turns overload into an immediate "server busy".

A load that needs room no idle model gives drains the least recently used busy ones: they
take no new requests (those wait for their model's next load, behind this one) and are
unloaded as their running requests finish. So a request that needs an eviction is served in
turn, as in Ollama's first-in-first-out queue, however busy the model it evicts; a wait that
could never end (no evictions could make room) is refused at once, saying why.

A load whose memory plan cannot fit, even once every other model is unloaded (or whose GPU
layers, asked for, cannot fit the GPU), is refused before its runner starts, with the plan's
figures and what would fit (``refusal``); the option ``load_anyway`` skips that refusal (the
idle models are still unloaded first) and the load log says so. Loaded models count against
free RAM with their plan's RAM part: what a GPU holds is the GPU's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import replace
from functools import partial
from typing import Any

from localllm.daemon.errors import EvictionBlockedError, InsufficientMemoryError, ServerBusyError
from localllm.daemon.runners.types import RunnerSpec
from localllm.daemon.scheduler.config import SchedulerConfig
from localllm.daemon.scheduler.context_size import ContextChoice
from localllm.daemon.scheduler.lease import Claim, Lease
from localllm.daemon.scheduler.loaded import (
    LoadedModel,
    LoadTarget,
    ModelStatus,
    RunnerFactory,
    RunnerOptions,
)
from localllm.daemon.scheduler.loader import LoadPlan, RunnerLoader
from localllm.daemon.scheduler.memory import MemoryInfo, nvidia_free_vram, system_memory
from localllm.daemon.scheduler.parallel import ParallelChoice
from localllm.daemon.scheduler.peers import Peers
from localllm.daemon.scheduler.planner import MemoryPlanner
from localllm.daemon.scheduler.refusal import (
    layers_that_fit,
    ram_refusal,
    refuse,
    refuse_gpu_layers,
)
from localllm.daemon.scheduler.reuse import runner_spec, suits
from localllm.daemon.scheduler.room import Room, last_used

__all__ = ["Scheduler"]

log = logging.getLogger("localllm.scheduler")


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
        planner = MemoryPlanner(config.memory_file)
        self._loader = RunnerLoader(runner_factory, gpu_probe, config.log_dir, on_load, planner)
        self._memory_probe = memory_probe
        self._clock = clock
        self._models: dict[str, LoadedModel] = {}
        self._loading: dict[str, asyncio.Task[LoadedModel]] = {}
        self._load_lock = asyncio.Lock()
        self._changed = asyncio.Condition()
        self._wake = asyncio.Event()
        # per load: who waits for it
        self._claims: dict[asyncio.Task[LoadedModel], list[Claim]] = {}
        self._pending = 0
        self._background: set[asyncio.Task[None]] = set()
        self.peers = Peers()  # runners of other kinds, which may let go to make room

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
        holder = asyncio.current_task()
        try:
            model = await self._get(target, runner_spec(target, options), options.load_anyway)
        except BaseException:
            self._pending -= 1
            raise
        model.keep_alive = self.config.keep_alive if keep_alive is None else keep_alive
        try:
            await model.slots.acquire()
        except BaseException:
            self._finish(model, holder, crashed=False)
            raise
        model.busy += 1
        return Lease(model, partial(self._release, holder=holder))

    def _release(
        self, model: LoadedModel, crashed: bool, holder: asyncio.Task[object] | None
    ) -> None:
        model.busy -= 1
        model.slots.release()
        self._finish(model, holder, crashed)

    def _finish(
        self, model: LoadedModel, holder: asyncio.Task[object] | None, crashed: bool
    ) -> None:
        self._pending -= 1
        self._let_go(model, holder, crashed)

    def _let_go(
        self, model: LoadedModel, holder: asyncio.Task[object] | None, crashed: bool
    ) -> None:
        """A request let go of ``model``: drop the count, then expire, unload or forget it."""
        model.let_go(holder)
        model.last_used = self._clock()
        dead = crashed or not model.runner.alive
        if dead and self._forget(model, "its runner stopped"):
            self._spawn(self._unload(model, "its runner stopped"))  # stop it, tell who waits
        if model.refs > 0:
            return
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
        spec = runner_spec(target, options)
        loaded = self._models.get(target.name)
        if loaded is not None and loaded.usable and suits(loaded, spec):
            return (
                ParallelChoice(loaded.spec.num_parallel, f"loaded: {loaded.parallel_reason}"),
                ContextChoice(loaded.spec.num_ctx, f"loaded: {loaded.context_reason}"),
            )
        free = await self._free_memory()
        return await self._loader.sizes(target, spec, free, self.config.context_cap)

    async def plan(self, target: LoadTarget, options: RunnerOptions) -> LoadPlan:
        """What a load of ``target`` with ``options`` would run with and take (``.memory``:
        its memory plan, part by part), as the next load would plan it now; where it does not
        fit the memory free now, ``.suggestion`` says what would."""
        spec = runner_spec(target, options)
        free = await self._free_memory()
        plan = await self._loader.plan(target, spec, free, self.config.context_cap)
        if plan.fits:
            return plan
        if plan.placement.fitting_layers is not None:  # GPU layers asked for that do not fit
            return replace(plan, suggestion=layers_that_fit(plan.placement))
        return replace(plan, suggestion=await self._loader.what_fits(target, plan, free))

    # -- loading ----------------------------------------------------------------------------
    async def _get(
        self, target: LoadTarget, spec: RunnerSpec, load_anyway: bool = False
    ) -> LoadedModel:
        """The loaded model for ``spec`` with one more reference, loading it if need be
        (``load_anyway``: even where its plan does not fit). A model that is draining or
        stale takes no new request: it waits for the next load."""
        while True:
            model = self._ready(target.name, spec)
            if model is not None:
                return model
            task = self._loading.get(target.name)
            if task is None or task.done():
                loading = self._load(target, spec, load_anyway)
                task = asyncio.get_running_loop().create_task(loading)
                self._loading[target.name] = task
            model = await self._wait_for(task, spec)
            if model is not None and model.runner.alive:
                return model
            if model is not None:  # its runner died before this request woke
                self._let_go(model, asyncio.current_task(), crashed=False)

    def _ready(self, name: str, spec: RunnerSpec) -> LoadedModel | None:
        model = self._models.get(name)
        if model is None or not model.usable or not suits(model, spec):
            return None
        model.take(asyncio.current_task())
        return model

    async def _wait_for(
        self, task: asyncio.Task[LoadedModel], spec: RunnerSpec
    ) -> LoadedModel | None:
        """Wait for a load; the model it handed this request, if it suits ``spec``."""
        claim = Claim(spec)
        waiting = self._claims.setdefault(task, [])
        waiting.append(claim)
        self._spawn(self._notify())  # a request that holds a model may now block a drain
        try:
            await asyncio.shield(task)
        except BaseException:
            if claim.model is not None:  # handed over, then cancelled before it woke
                self._let_go(claim.model, claim.holder, crashed=False)
            raise
        finally:
            if claim in waiting:
                waiting.remove(claim)
            if not waiting and self._claims.get(task) is waiting:
                del self._claims[task]
        return claim.model

    async def _load(self, target: LoadTarget, spec: RunnerSpec, load_anyway: bool) -> LoadedModel:
        task = asyncio.current_task()
        assert task is not None  # it runs as the load's task, which ``_claims`` is keyed by
        try:
            async with self._load_lock:
                model = await self._load_locked(target, spec, load_anyway)
                self._hand_over(model, self._claims.pop(task, []))
                return model
        finally:
            self._loading.pop(target.name, None)
            self._claims.pop(task, None)

    def _hand_over(self, model: LoadedModel, claims: list[Claim]) -> None:
        """Give each waiting request that ``model`` suits its reference now, before the next
        load runs: they were first, so nothing evicts or drains it before they wake."""
        for claim in claims:
            if suits(model, claim.spec):
                model.take(claim.holder)
                claim.model = model

    async def _load_locked(
        self, target: LoadTarget, spec: RunnerSpec, load_anyway: bool
    ) -> LoadedModel:
        current = self._models.get(target.name)
        if current is not None and current.usable and suits(current, spec):
            return current
        if current is not None:
            await self._retire(current)
        plan = await self._loader.plan(
            target, spec, await self._free_memory(), self.config.context_cap
        )
        refuse_gpu_layers(target.name, plan.memory, plan.vram_free, plan.placement, load_anyway)
        await self._make_room(target, plan, load_anyway)
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
            memory=plan.memory,
        )
        model.expires_at = self._expiry(model)  # waiters claim it at once; else it expires
        self._models[target.name] = model
        self._wake.set()
        return model

    # -- making room ------------------------------------------------------------------------
    async def free_up(self, name: str, needed: int) -> None:
        """Room for ``needed`` bytes a peer's runner (``name``) is about to take, made as for a
        load, but busy models are not waited for and nothing is refused (``peers``)."""
        async with self._load_lock:
            while not (room := await self._room()).fits(needed, count=False):
                if not await self._let_one_go(room, f"to make room for {name}"):
                    return

    async def _let_one_go(self, room: Room, why: str) -> bool:
        """Stop a peer's idle runner (it starts again in seconds), else unload the least
        recently used idle model; False when nothing is idle."""
        if await self.peers.release_one():
            return True
        if victim := min((m for m in room.loaded if m.refs == 0), key=last_used, default=None):
            await self._unload(victim, why)
        return victim is not None

    async def _make_room(self, target: LoadTarget, plan: LoadPlan, load_anyway: bool) -> None:
        """Evict idle models, least recently used first, until the plan's RAM part fits;
        where none is idle, drain the least recently used busy ones and evict them as they
        empty. A plan that could not fit even with every model unloaded is refused (with
        ``load_anyway``, loaded once the idle models are unloaded)."""
        name = target.name
        warned = False
        try:
            while True:
                room = await self._room()
                everything = room.loaded
                needed = plan.ram_bytes
                if not room.fits(needed, everything, count=False):
                    if not (load_anyway and warned):
                        refuse(name, await self._ram_refusal(target, plan, room), load_anyway)
                        warned = True
                    idle = [m for m in everything if m.refs == 0]
                    needed = min(needed, int(room.free(idle)))  # what evicting gives
                if room.fits(needed):
                    return
                if await self._let_one_go(room, "to make room"):
                    continue
                drained = room.to_drain(name, needed, self._blocked)
                for model in self._models.values():
                    model.draining = model in drained
                await self._next_change()
        finally:
            for model in self._models.values():
                model.draining = False

    async def _ram_refusal(
        self, target: LoadTarget, plan: LoadPlan, room: Room
    ) -> InsufficientMemoryError:
        """The refusal of ``plan``, with what would fit once every model is unloaded."""
        best = room.free(room.loaded)
        fits = await self._loader.what_fits(target, plan, best)
        headroom = self.config.headroom
        return ram_refusal(target.name, plan.memory, best, len(room.loaded), fits, headroom)

    def _blocked(self, model: LoadedModel) -> bool:
        """Whether a request holding ``model`` waits for a load itself: loads run one at a
        time, so it waits behind the load that waits for ``model``, and never lets go."""
        waiting = {claim.holder for claims in self._claims.values() for claim in claims}
        return any(holder in waiting for holder in model.holders)

    async def _room(self) -> Room:
        """Memory and model slots now, as ``room`` counts them."""
        info = await asyncio.to_thread(self._memory_probe)
        config = self.config
        return Room(info, tuple(self._models.values()), config.headroom, config.max_loaded_models)

    async def _free_memory(self) -> float:
        """Free memory we may plan for, after headroom; loaded models count as used."""
        return (await self._room()).free()

    async def _retire(self, model: LoadedModel) -> None:
        """Reload path: stop new requests, let running ones finish, then unload."""
        model.stale = True
        while model.refs > 0:
            if self._blocked(model):
                model.stale = False
                room = "it runs with other options" if model.runner.alive else "its runner stopped"
                raise EvictionBlockedError(model.name, [model.name], room)
            await self._next_change()
        await self._unload(model, "runner options changed")

    async def _next_change(self) -> None:
        """Until a model is let go of or unloaded, or a request starts waiting for a load."""
        async with self._changed:
            await self._changed.wait()

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
        for background in list(self._background):
            background.cancel()

    # -- status -----------------------------------------------------------------------------
    def status(self) -> list[ModelStatus]:
        return [model.status(self._clock()) for model in self._models.values()]

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
