"""What a load would take before it happens: the memory plan of an installed model, or of a
quant on Hugging Face not downloaded yet, with the options a chat would send.

An installed model is resolved and its options merged exactly as a chat's are (the model's
parameters, then the request's, then the settings), and the scheduler plans the load the next
chat would start (``Scheduler.plan``): slots, context, GPU layers and experts in RAM decided
as they would be, against the free memory it would be judged by. Nothing loads.

A quant on the hub has no files here: its shapes come from its headers
(``model_registry.pull.hub_headers``) and go with its target, so the scheduler plans it by the
same rules from the same figures (free RAM with loaded models counted, the GPUs' free memory).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

from localllm.daemon.inference.inference import Inference
from localllm.daemon.inference.options import merge_options, runner_options
from localllm.daemon.inference.resolve import with_draft
from localllm.daemon.scheduler import LoadPlan, LoadTarget, ModelFootprint, TargetShapes
from localllm.model_registry.model_shape import ModelShape
from localllm.model_registry.pull.hub_headers import HubModel

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
    inference: Inference, hub: HubModel, options: Mapping[str, object]
) -> Planned:
    """The plan of a quant on the hub, from its headers, as the scheduler would plan a load of
    it: the same rules, the same free memory and GPUs."""
    merged = merge_options(options)
    wanted = runner_options(merged, inference.settings, hub.model.n_ctx_train or None)
    load = await inference.scheduler.plan(_hub_target(hub), wanted)
    context = _whose(load.context_reason, "num_ctx", options, {}, "CONTEXT_LENGTH")
    parallel = _whose(load.parallel_reason, "num_parallel", options, {}, "NUM_PARALLEL")
    return Planned(hub.name_to_pull, load, context, parallel, hub.size, "hub")


def _hub_target(hub: HubModel) -> LoadTarget:
    """The target a pull of ``hub`` would make, as far as a plan goes: no files here, its
    shapes given (read from the hub's headers), and the summary the scheduler's rules read."""
    shape, name = hub.model, hub.name_to_pull
    return LoadTarget(
        name=name,
        model_paths=(f"{name}#model",),
        footprint=_footprint(shape, hub.size),
        projector_path=f"{name}#projector" if hub.projector is not None else None,
        n_ctx_train=shape.n_ctx_train or None,
        embedding_only=not shape.kv_cache,
        shapes=TargetShapes(shape, projector=hub.projector),
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
