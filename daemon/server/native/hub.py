"""``/api/hub/*``: browsing Hugging Face for GGUF models (search, a repository's quants) and
the curated catalog of short names (no network needed)."""

from __future__ import annotations

from dataclasses import asdict

from anyio import to_thread
from fastapi import APIRouter, Query, Request

from localllm.daemon.api.native_catalog import CatalogModel, CatalogResponse
from localllm.daemon.api.native_system import HubFile, HubFilesResponse, HubRepo, HubSearchResponse
from localllm.daemon.scheduler import system_memory
from localllm.daemon.server.app_state import app_part
from localllm.daemon.settings import Settings
from localllm.model_registry.pull.browse import HubBrowser
from localllm.model_registry.pull.catalog import Catalog

__all__ = ["router"]

router = APIRouter()


def _hub(request: Request) -> HubBrowser:
    settings = app_part(request, "settings", Settings)
    return HubBrowser(settings.hf_endpoint, settings.hf_token)


@router.get("/api/hub/search")
async def hub_search(
    request: Request,
    q: str = Query("", max_length=200),
    limit: int = Query(20, ge=1, le=100),
) -> HubSearchResponse:
    found = await to_thread.run_sync(_hub(request).search, q, limit)
    return HubSearchResponse(models=[HubRepo(**asdict(repo)) for repo in found])


@router.get("/api/hub/files")
async def hub_files(request: Request, repo: str = Query(..., max_length=200)) -> HubFilesResponse:
    available = system_memory().available
    listing = await to_thread.run_sync(_hub(request).files, repo, available)
    files = [HubFile(**asdict(file)) for file in listing.files]
    return HubFilesResponse(repo=listing.repo, files=files, projector=listing.projector)


@router.get("/api/hub/catalog")
async def hub_catalog(request: Request) -> CatalogResponse:
    settings = app_part(request, "settings", Settings)
    catalog = await to_thread.run_sync(Catalog.load, settings.catalog_path)
    return CatalogResponse(
        models=[CatalogModel.model_validate(entry.to_json()) for entry in catalog]
    )
