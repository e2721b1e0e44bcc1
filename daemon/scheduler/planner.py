"""The memory plan of a load target and runner spec: shapes read, figures measured, applied.

The loader asks this for every plan it makes (the default context's bisection makes a few):
the shapes of the model and its extras (draft, projector, adapters) come from their headers,
read once each in a worker thread (``shapes``); the spec becomes plan settings as the runner
will run it (``memory_plan.plan_settings``, with this CPU's repacked types); and where
llama.cpp has loaded the same model with the same settings before, its figures replace the
plan's (``measured``). A file that cannot be read is planned from the store's summary
(``memory.footprint_shape``). After a load, :meth:`MemoryPlanner.record` keeps what the runner
reported, off the event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from pathlib import Path

from localllm.daemon.runners.types import LlamaBuffer, RunnerSpec
from localllm.daemon.scheduler.loaded import LoadTarget, TargetShapes
from localllm.daemon.scheduler.measured import MeasuredBuffers, corrected, plan_key
from localllm.daemon.scheduler.memory import footprint_shape
from localllm.daemon.scheduler.memory_plan import MemoryPlan, plan_memory, plan_settings
from localllm.daemon.scheduler.repack import repacked_types
from localllm.daemon.scheduler.shapes import ModelShapes

__all__ = ["MemoryPlanner", "TargetShapes"]

log = logging.getLogger("localllm.scheduler")


class MemoryPlanner:
    def __init__(
        self,
        measured_file: Path | None = None,
        shapes: ModelShapes | None = None,
        repack_types: frozenset[str] | None = None,
    ):
        self._measured = MeasuredBuffers(measured_file)
        self._shapes = shapes or ModelShapes()
        self._repack = repack_types
        self._ready = False  # the measured figures' file read, this CPU's repacking known

    async def shapes(self, target: LoadTarget) -> TargetShapes:
        """Read (once) the headers of everything ``target`` loads (unless it came with them);
        the measured figures' file too, the first time."""
        if not self._ready:
            self._repack = await asyncio.to_thread(self._prepare)
            self._ready = True
        if target.shapes is not None:
            return target.shapes
        model = await self._shapes.get(target.model_paths)
        if model is None:
            model = footprint_shape(target.footprint)
        draft = await self._shapes.get(target.draft_paths) if target.draft_paths else None
        if draft is None and target.draft_paths and target.footprint.draft is not None:
            draft = footprint_shape(target.footprint.draft)
        projector = None
        if target.projector_path:
            projector = await self._shapes.get((target.projector_path,))
        loras = []
        for adapter in target.adapters:
            shape = await self._shapes.get((adapter.path,))
            if shape is not None:
                loras.append(shape)
        return TargetShapes(model, draft, projector, tuple(loras))

    def _prepare(self) -> frozenset[str]:
        self._measured.lookup("")  # reads the file
        return repacked_types() if self._repack is None else self._repack

    def plan(
        self, shapes: TargetShapes, spec: RunnerSpec, gpu_split: tuple[int, ...] = ()
    ) -> tuple[MemoryPlan, str]:
        """The plan of a runner started with ``spec`` (its context, slots and GPU layers
        decided), its GPU layers split by ``gpu_split`` (each GPU's free bytes, as llama.cpp
        splits them), corrected by measured figures where there are some; and the key the
        figures of this load are kept under."""
        settings = plan_settings(
            spec,
            shapes.model,
            repack_types=self._repack or frozenset(),
            projector=shapes.projector,
            draft=shapes.draft,
            loras=shapes.loras,
            gpu_split=gpu_split,
        )
        plan = plan_memory(shapes.model, settings)
        key = plan_key(shapes.model, settings)
        found = self._measured.lookup(key)
        return (corrected(plan, found) if found else plan), key

    async def record(self, key: str, buffers: Iterable[LlamaBuffer]) -> None:
        """Keep what a load reported (the file is written in a worker thread). A failure only
        costs the next plan its correction: the load it follows stands."""
        buffers = tuple(buffers)
        if not key or not buffers:
            return
        try:
            await asyncio.to_thread(self._measured.record, key, buffers)
        except Exception:
            log.exception("keeping the measured memory figures failed")
