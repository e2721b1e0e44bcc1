"""``POST /api/plan`` (ours): a model's memory plan before it loads, part by part.

For an installed model, or a quant on Hugging Face not downloaded yet (its headers read by
range requests: ``model_registry.pull.hub_headers``, cached per repository, revision and
files), with the options a chat would send; nothing loads. Headers are read in worker threads
(the planner's, the hub reader's). A remote engine's model is refused: that engine plans its
own memory.
"""

from __future__ import annotations

from anyio import to_thread
from fastapi import APIRouter, Request

from localllm.daemon.api.native_plan import (
    PlanDevice,
    PlanPartOut,
    PlanRequest,
    PlanResponse,
    PlanSettingsOut,
)
from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference import Inference
from localllm.daemon.inference.plans import Planned, plan_installed, plan_on_hub
from localllm.daemon.models.pulls import PullManager
from localllm.daemon.remotes import Remotes
from localllm.daemon.scheduler import LoadPlan
from localllm.daemon.scheduler.context_size import size_text
from localllm.daemon.scheduler.memory_plan import LATER_KINDS
from localllm.daemon.server.app_state import app_part
from localllm.model_registry.errors import InvalidRepoError
from localllm.model_registry.pull.hub_headers import HubShapes
from localllm.model_registry.pull.quants import quant_of

__all__ = ["router"]

router = APIRouter()


@router.post("/api/plan")
async def plan(body: PlanRequest, request: Request) -> PlanResponse:
    inference = app_part(request, "inference", Inference)
    _check(body)
    if body.model is not None:
        _refuse_remote(app_part(request, "remotes", Remotes), body.model)
        return _response(await plan_installed(inference, body.model, body.options))
    name = _pull_name(body)
    hub = await to_thread.run_sync(_hub_shapes(request).model, name)
    if body.file is not None and hub.plan.model_files[0].path != body.file:
        raise BadRequestError(
            f"{body.file!r} is not the first file of a quant of hf.co/{hub.plan.repo}; name "
            "the file the quant starts with, or the quant",
            param="file",
        )
    return _response(await plan_on_hub(inference, hub, body.options))


def _check(body: PlanRequest) -> None:
    if (body.model is None) == (body.repo is None):
        raise BadRequestError(
            "name an installed model (model), or a quant on Hugging Face (repo, with file or "
            "quant)",
            param="model",
        )
    if body.repo is not None and (body.file is None) == (body.quant is None):
        raise BadRequestError(
            "with repo, name one of its GGUF files (file) or its quant (quant)", param="file"
        )


def _refuse_remote(remotes: Remotes, model: str) -> None:
    found = remotes.match(model)
    if found is not None:
        raise BadRequestError(
            f"{model!r} is served by remote {found.remote.name!r}, whose engine plans its own "
            "memory; plans are for models that run here",
            param="model",
        )


def _pull_name(body: PlanRequest) -> str:
    """The name a pull of the request's quant takes (``hf.co/org/repo:tag``)."""
    repo = body.repo or ""
    if repo.count("/") != 1:
        raise InvalidRepoError("repo must look like org/name")
    tag = body.quant or quant_of(body.file or "") or ""
    if body.file is not None and not tag:
        stem = body.file.rsplit("/", 1)[-1].removesuffix(".gguf")
        tag = stem.lower()
    return f"hf.co/{repo}:{tag.lower()}"


def _hub_shapes(request: Request) -> HubShapes:
    """The app's reader of hub headers, made on first use (it caches what it read)."""
    state = request.app.state
    if getattr(state, "hub_shapes", None) is None:
        state.hub_shapes = HubShapes(app_part(request, "pulls", PullManager).puller)
    return app_part(request, "hub_shapes", HubShapes)


def _response(planned: Planned) -> PlanResponse:
    load = planned.load
    memory = load.memory
    devices = [
        PlanDevice(
            device=device,
            bytes=memory.total(device),
            later_bytes=memory.total(device, later=True) - memory.total(device),
            free=load.free_on(device),
        )
        for device in memory.devices()
    ]
    return PlanResponse(
        model=planned.name,
        source="hub" if planned.source == "hub" else "store",
        file_size=planned.file_size,
        settings=_settings(planned),
        parts=[
            PlanPartOut(
                kind=p.kind,
                device=p.device,
                bytes=p.bytes,
                text=p.text,
                measured=p.measured,
                later=p.kind in LATER_KINDS,
            )
            for p in memory.parts
        ],
        devices=devices,
        total=memory.load_bytes,
        fits=load.fits,
        fit_reason=_fit_reason(load),
        suggestion="" if load.fits else load.suggestion,
        measured=memory.measured,
        notes=list(memory.notes),
    )


def _settings(planned: Planned) -> PlanSettingsOut:
    load = planned.load
    settings, placement = load.memory.settings, load.placement
    total = placement.total_layers
    layers = settings.gpu_layers
    cpu_moe = settings.cpu_moe_layers
    return PlanSettingsOut(
        context_length=load.spec.num_ctx,
        context_reason=planned.context_reason,
        num_parallel=load.spec.num_parallel,
        parallel_reason=planned.parallel_reason,
        kv_cache_type=settings.kv_type,
        flash_attention=settings.flash_attention,
        gpu_layers=total if layers < 0 else min(layers, total),
        total_layers=total,
        placement_reason=placement.reason,
        cpu_moe_layers=max(0, total - 1) if cpu_moe < 0 else cpu_moe,
    )


def _fit_reason(load: LoadPlan) -> str:
    """The figures the verdict rests on, in words."""
    ram = f"{size_text(load.ram_bytes)} of RAM, {size_text(load.ram_free)} free"
    vram = ""
    if load.vram_bytes:
        vram = f"; {size_text(load.vram_bytes)} on the GPU, {size_text(load.vram_free)} free"
    figures = f"{ram}{vram} (headroom kept, loaded models counted)"
    if load.fits:
        return f"it needs {figures}"
    advice = f"; {load.suggestion}" if load.suggestion else ""
    return f"it needs {figures}{advice}"
