"""What a load would take before it happens: the memory plan of an installed model, or of a
quant on Hugging Face not downloaded yet, with the options a chat would send.

An installed model is resolved and its options merged exactly as a chat's are (the model's
parameters, then the request's, then the settings), and the scheduler plans the load the next
chat would start (``Scheduler.plan``): slots, context, GPU layers and experts in RAM decided
as they would be, against the free memory it would be judged by. Nothing loads.

A quant on the hub has no files here: its shapes come from its headers
(``model_registry.pull.hub_headers``) and the loader's own planning runs on them, so its
slots, context and placement are chosen by the same rules from the same figures; the free RAM
is the scheduler's (loaded models counted, headroom kept), from a plan of the same target.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from daemon.inference.inference import Inference
from daemon.inference.options import merge_options, runner_options
from daemon.inference.resolve import with_draft
from daemon.runners.types import RunnerSpec
from daemon.scheduler import LoadPlan, LoadTarget, ModelFootprint, RunnerOptions
from daemon.scheduler.loader import AUTO_CPU_MOE, AUTO_GPU_LAYERS, RunnerLoader
from daemon.scheduler.memory import nvidia_free_vram
from daemon.scheduler.planner import MemoryPlanner
from daemon.scheduler.shapes import ModelShapes
from model_registry.model_shape import ModelShape
from model_registry.pull.hub_headers import HubModel

__all__ = ["Planned", "plan_installed", "plan_on_hub"]


@dataclass(frozen=True, slots=True)
class Planned:
    """A load's plan, with its reasons said in the user's terms (who set what)."""

    name: str
    load: LoadPlan
    context_reason: str
    parallel_reason: str
    file_size: int
    source: str = "store"  # or "hub": a quant not downloaded yet


async def plan_installed(inference: Inference, name: str, options: Mapping[str, object]) -> Planned:
    """The plan of installed model ``name`` with a request's ``options`` (its own parameters
    under them, the settings filling the rest); ``ModelNotFoundError`` where it is not here."""
    model = await asyncio.to_thread(inference.resolve, name)
    merged = merge_options(model.params, options)
    target = with_draft(inference.store, model.target, merged.get("draft"))
    wanted = runner_options(merged, inference.settings, model.context_length)
    load = await inference.scheduler.plan(target, wanted)
    context = _whose(load.context_reason, "num_ctx", options, model.params, "CONTEXT_LENGTH")
    parallel = _whose(load.parallel_reason, "num_parallel", options, model.params, "NUM_PARALLEL")
    return Planned(model.name, load, context, parallel, target.footprint.weights_bytes)


def _whose(
    reason: str,
    option: str,
    request: Mapping[str, object],
    params: Mapping[str, object],
    setting: str,
) -> str:
    """A choice the daemon did not make (``reason`` is the option's name): who set it."""
    if reason != option:
        return reason
    if request.get(option) is not None:
        return f"the request's {option}"
    if params.get(option) is not None:
        return f"the model's {option} parameter"
    return f"LOCALLLM_{setting}"


async def plan_on_hub(
    inference: Inference,
    hub: HubModel,
    options: Mapping[str, object],
    gpu_probe: Callable[[], list[int]] = nvidia_free_vram,
) -> Planned:
    """The plan of a quant on the hub, from its headers, as a load of it would be planned
    (``gpu_probe``: the scheduler's, which finds the GPUs' free memory)."""
    scheduler = inference.scheduler
    merged = merge_options(options)
    wanted = runner_options(merged, inference.settings, hub.model.n_ctx_train or None)
    target = _hub_target(hub)
    free = (await scheduler.plan(target, wanted)).ram_free  # the RAM loads are judged by
    shapes = {target.model_paths: hub.model, (target.projector_path,): hub.projector}
    loader = RunnerLoader(_no_runner, gpu_probe, planner=MemoryPlanner(shapes=_Given(shapes)))
    load = await loader.plan(target, _spec(target, wanted), free, scheduler.config.context_cap)
    if not load.fits and load.vram_bytes <= load.vram_free:
        load = replace(load, suggestion=await loader.what_fits(target, load, free))
    context = _whose(load.context_reason, "num_ctx", options, {}, "CONTEXT_LENGTH")
    parallel = _whose(load.parallel_reason, "num_parallel", options, {}, "NUM_PARALLEL")
    return Planned(hub.name_to_pull, load, context, parallel, hub.size, "hub")


def _hub_target(hub: HubModel) -> LoadTarget:
    """The target a pull of ``hub`` would make, as far as a plan goes: no files here (its
    shapes are given: ``_Given``), and the summary the scheduler's rules read."""
    shape, name = hub.model, hub.name_to_pull
    return LoadTarget(
        name=name,
        model_paths=(f"{name}#model",),
        footprint=_footprint(shape, hub.size),
        projector_path=f"{name}#projector" if hub.projector is not None else None,
        n_ctx_train=shape.n_ctx_train or None,
        embedding_only=not shape.kv_cache,
    )


def _footprint(shape: ModelShape, size: int) -> ModelFootprint:
    first = next((h for h in shape.n_head if h), 0)
    return ModelFootprint(
        weights_bytes=size,
        n_layer=shape.n_layer,
        n_embd=shape.n_embd,
        n_head=first,
        n_head_kv=next((h for h in shape.n_head_kv if h), first),
        head_size=shape.head_k,
    )


def _spec(target: LoadTarget, options: RunnerOptions) -> RunnerSpec:
    """The spec a load of ``target`` starts from, its choices left to the loader (as the
    scheduler makes it for a load)."""
    return RunnerSpec(
        model_name=target.name,
        model_paths=target.model_paths,
        num_ctx=options.num_ctx,
        num_parallel=options.num_parallel,
        num_gpu_layers=AUTO_GPU_LAYERS if options.num_gpu is None else options.num_gpu,
        num_cpu_moe=AUTO_CPU_MOE if options.num_cpu_moe is None else options.num_cpu_moe,
        num_threads=options.num_threads,
        num_batch=options.num_batch,
        embedding_only=target.embedding_only,
        kv_cache_type=options.kv_cache_type,
        flash_attention=options.flash_attention,
        backend_sampling=options.backend_sampling,
        host_cache_bytes=options.host_cache_bytes,
    )


class _Given(ModelShapes):
    """Shapes read already (from the hub's headers) in place of files to read."""

    def __init__(self, shapes: Mapping[tuple[str | None, ...], ModelShape | None]):
        super().__init__()
        self._given = dict(shapes)

    async def get(self, paths: Sequence[str]) -> ModelShape | None:
        return self._given.get(tuple(paths))


async def _no_runner(spec: RunnerSpec, log_path) -> None:
    raise RuntimeError("a plan starts no runner")
