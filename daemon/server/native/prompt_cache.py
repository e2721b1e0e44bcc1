"""Our own routes for the prompt cache on disk (``<data_dir>/prompt-cache``, where runners
keep the KV state of long prompts for a later runner to resume): what it holds, and clearing
it. The folder may hold thousands of files, so both read it in a worker thread. Clearing
needs no care for running runners: one that reads a file just removed misses and decodes."""

from __future__ import annotations

from anyio import to_thread
from fastapi import APIRouter, Request

from localllm.daemon.api.native_models import PromptCacheCleared, PromptCacheResponse
from localllm.daemon.runners import prompt_store
from localllm.daemon.server.app_state import app_part
from localllm.daemon.settings import Settings

__all__ = ["router"]

router = APIRouter()


@router.get("/api/prompt-cache")
async def prompt_cache(request: Request) -> PromptCacheResponse:
    settings = app_part(request, "settings", Settings)
    files, size = await to_thread.run_sync(prompt_store.usage, settings.prompt_cache_dir)
    return PromptCacheResponse(files=files, bytes=size, limit_bytes=settings.prompt_cache_bytes)


@router.delete("/api/prompt-cache")
async def clear_prompt_cache(request: Request) -> PromptCacheCleared:
    settings = app_part(request, "settings", Settings)
    files, freed = await to_thread.run_sync(prompt_store.clear, settings.prompt_cache_dir)
    return PromptCacheCleared(files=files, freed=freed)
