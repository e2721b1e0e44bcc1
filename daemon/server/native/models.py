"""Ollama's model management routes: tags, show, ps, copy, delete (and push, which says why
there is none); and our own store upkeep (prune, verify). Store work that touches the disk
runs in a worker thread."""

from __future__ import annotations

import dataclasses
import time
from datetime import UTC, datetime

from anyio import to_thread
from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import JSONResponse

from localllm.daemon.api.native_models import (
    CopyRequest,
    ModelRequest,
    ModelSummary,
    PromptCacheUseOut,
    PruneResponse,
    RunningModel,
    RunningResponse,
    RunSettingsOut,
    ShowRequest,
    ShowResponse,
    TagsResponse,
    VerifyProblem,
    VerifyResponse,
)
from localllm.daemon.inference import Inference
from localllm.daemon.remotes import Remotes
from localllm.daemon.runners import prompt_store
from localllm.daemon.scheduler import ModelStatus, Scheduler
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.audio_models import (
    audio_model,
    audio_pools,
    audio_rows,
    pool_for,
    runner_key,
)
from localllm.daemon.server.native.describe import (
    details_out,
    iso_time,
    listed_name,
    model_summary,
    show_response,
    transcription_show_response,
    voice_show_response,
)
from localllm.daemon.server.remote_listing import remote_running, remote_show, remote_summaries
from localllm.daemon.settings import Settings
from localllm.model_registry.digests import Digest
from localllm.model_registry.errors import CorruptManifestError, ModelNotFoundError
from localllm.model_registry.names import ModelName, parse_name
from localllm.model_registry.store import ModelEntry, Store, show_model

__all__ = ["router"]

router = APIRouter()

_FOREVER = datetime(2318, 1, 1, tzinfo=UTC)  # how Ollama dates "never unloaded"


def _store(request: Request) -> Store:
    return app_part(request, "store", Store)


@router.get("/api/tags")
async def tags(request: Request) -> TagsResponse:
    store = _store(request)
    local = await to_thread.run_sync(_summaries, store)
    return TagsResponse(models=local + remote_summaries(_remotes(request)))


def _remotes(request: Request) -> Remotes:
    return app_part(request, "remotes", Remotes)


def _summaries(store: Store) -> list[ModelSummary]:
    summaries = []
    for entry in store.list_models():
        try:
            summaries.append(model_summary(store, entry))
        except (OSError, CorruptManifestError):
            continue  # a model broken on disk is for `verify` to report, not for list to fail
    return summaries


@router.post("/api/show")
async def show(body: ShowRequest, request: Request) -> ShowResponse:
    inference = app_part(request, "inference", Inference)
    store = _store(request)
    found = _remotes(request).match(body.model)
    if found is not None:
        return remote_show(body.model, found.remote.name, found.remote_id)
    folder_model = await to_thread.run_sync(_folder_model_show, store, body.model)
    if folder_model is not None:
        return folder_model
    model = inference.resolve(body.model)

    def build() -> ShowResponse:
        details = show_model(store, body.model)
        modified = _entry(store, body.model).modified
        return show_response(store, details, model, modified, body.verbose)

    response = await to_thread.run_sync(build)
    runs = await inference.run_settings(model)
    response.runs_with = RunSettingsOut(**dataclasses.asdict(runs))
    return response


def _folder_model_show(store: Store, text: str) -> ShowResponse | None:
    """The answer for a transcription model or a voice, which inference does not resolve (it
    runs no GGUF); None for any other model, or for none (resolving says how to get it)."""
    try:
        manifest = store.read_manifest(text)
    except ModelNotFoundError:
        return None
    if not manifest.folder_layers:
        return None
    show = transcription_show_response if manifest.is_transcription else voice_show_response
    return show(show_model(store, text), _entry(store, text).modified)


def _entry(store: Store, text: str) -> ModelEntry:
    name = parse_name(text)
    for entry in store.list_models():
        if entry.name == name:
            return entry
    raise ModelNotFoundError(f"model {name.display!r} not found")


@router.get("/api/ps")
async def ps(request: Request) -> RunningResponse:
    scheduler = app_part(request, "scheduler", Scheduler)
    store = _store(request)
    local = [_running(store, status) for status in scheduler.status()]
    kept = [(runner, pool.keep_alive) for pool in audio_pools(request) for runner in pool.loaded()]
    audio = await to_thread.run_sync(audio_rows, store, kept)
    return RunningResponse(models=local + audio + remote_running(_remotes(request)))


def _running(store: Store, status: ModelStatus) -> RunningModel:
    name = parse_name(status.name)
    try:
        manifest = store.read_manifest(name)
        digest, details = manifest.model_id.hex, details_out(store.read_config(manifest))
    except (ModelNotFoundError, CorruptManifestError, OSError):  # deleted while loaded
        digest, details = "", details_out({})
    flash_attention = status.info.flash_attention or status.spec.flash_attention
    return RunningModel(
        name=listed_name(name),
        model=listed_name(name),
        size=max(status.info.memory_bytes, status.estimate_bytes),
        digest=digest,
        details=details,
        expires_at=_expires_at(status.expires_in),
        size_vram=status.info.vram_bytes,
        context_length=status.info.n_ctx,
        processor=status.processor,
        active_requests=status.active,
        kv_cache_type=status.spec.kv_cache_type,
        flash_attention=flash_attention,
        num_parallel=status.info.n_parallel,
        deterministic=status.spec.deterministic,
        parallel_reason=status.parallel_reason,
        context_reason=status.context_reason,
        expert_layers=status.info.expert_layers,
        cpu_expert_layers=status.info.cpu_expert_layers,
        prompt_cache=PromptCacheUseOut(**dataclasses.asdict(status.prompt_cache)),
    )


def _expires_at(seconds: float | None) -> str:
    if seconds is None:
        return _FOREVER.isoformat().replace("+00:00", "Z")
    return iso_time(time.time() + seconds)


@router.delete("/api/delete")
async def delete(body: ModelRequest, request: Request) -> JSONResponse:
    inference = app_part(request, "inference", Inference)
    _remotes(request).refuse_local_work(body.model, "delete")
    name = parse_name(body.model)
    store = _store(request)
    if not store.exists(name):
        raise ModelNotFoundError(f"model {name.display!r} not found")
    if (audio := await to_thread.run_sync(audio_model, store, body.model)) is not None:
        await pool_for(request, audio.kind).unload(runner_key(name))  # not inference's
    else:
        await inference.unload(name.display)
    await to_thread.run_sync(store.remove, name)
    return JSONResponse({"status": "success"})


@router.post("/api/copy")
async def copy(body: CopyRequest, request: Request) -> JSONResponse:
    for model in (body.source, body.destination):
        _remotes(request).refuse_local_work(model, "copy")
    source, destination = parse_name(body.source), parse_name(body.destination)
    await to_thread.run_sync(_store(request).copy, source, destination)
    return JSONResponse({"status": "success"})


@router.post("/api/push")
async def push() -> None:
    """Ollama's push uploads to ollama.com; models here come from Hugging Face, so an Ollama
    user's push gets a reason, not a bare 404."""
    raise HTTPException(
        501,
        "localllm cannot push models: there is no registry to push to. Share the model's GGUF "
        "file instead, or upload it to Hugging Face, where `localllm pull hf.co/USER/REPO` "
        "finds it",
    )


@router.post("/api/prune")
async def prune(request: Request) -> PruneResponse:
    """Unused blobs, and the whole prompt cache on disk (it is only ever a speed-up)."""
    report = await to_thread.run_sync(_store(request).prune)
    removed = [digest.wire for digest in report.deleted_blobs]
    folder = app_part(request, "settings", Settings).prompt_cache_dir
    files, freed = await to_thread.run_sync(prompt_store.clear, folder)
    return PruneResponse(
        removed=removed,
        freed=report.freed_bytes,
        skipped_reason=report.skipped_reason,
        prompt_cache_files=files,
        prompt_cache_freed=freed,
    )


@router.post("/api/verify")
async def verify(request: Request) -> VerifyResponse:
    report = await to_thread.run_sync(_store(request).verify)

    def problems(found: dict[Digest, tuple[ModelName, ...]]) -> list[VerifyProblem]:
        return [
            VerifyProblem(digest=digest.wire, models=[listed_name(n) for n in names])
            for digest, names in found.items()
        ]

    return VerifyResponse(
        ok=report.ok,
        checked=report.checked,
        corrupt=problems(report.corrupt),
        missing=problems(report.missing),
        unreadable_manifests=[listed_name(n) for n in report.unreadable_manifests],
    )
