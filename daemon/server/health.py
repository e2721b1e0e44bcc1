"""The daemon's own endpoints: liveness, version, health and metrics."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, Response

from localllm.daemon.api.native_system import HealthResponse
from localllm.daemon.scheduler import Scheduler
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.metrics import CONTENT_TYPE, Metrics
from localllm.daemon.settings import Settings

__all__ = ["router"]

router = APIRouter()


@router.api_route("/", methods=["GET", "HEAD"], response_class=PlainTextResponse)
async def root() -> str:
    return "localllm is running"


@router.get("/health")
async def health(request: Request) -> HealthResponse:
    scheduler = app_part(request, "scheduler", Scheduler)
    return HealthResponse(
        status="ok",
        version=request.app.version,
        models_loaded=len(scheduler.status()),
        requests_in_flight=scheduler.pending,
    )


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    registry = app_part(request, "metrics", Metrics)
    folder = app_part(request, "settings", Settings).prompt_cache_dir
    return Response(await registry.scrape(folder), media_type=CONTENT_TYPE)
