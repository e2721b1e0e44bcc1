"""Our own native endpoints for front ends: the version, the machine, the daemon's log (its
paths redacted)."""

from __future__ import annotations

import os
from pathlib import Path

from anyio import to_thread
from fastapi import APIRouter, Query, Request

from localllm.daemon.api.native_system import (
    GpuInfo,
    LogsResponse,
    SystemResponse,
    VersionResponse,
)
from localllm.daemon.runners.build_probe import BuildProbe
from localllm.daemon.scheduler import Scheduler
from localllm.daemon.scheduler.system_report import system_report
from localllm.daemon.security import is_loopback_address
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.log_file import LOG_NAME
from localllm.daemon.server.redaction import PathRedactor
from localllm.daemon.settings import Settings

__all__ = ["LOG_NAME", "router"]

router = APIRouter()

_TAIL_BYTES = 4 << 20  # read at most this much of the log's end


@router.get("/api/version")
async def version(request: Request) -> VersionResponse:
    return VersionResponse(version=request.app.version)


@router.get("/api/system")
async def system(request: Request) -> SystemResponse:
    scheduler = app_part(request, "scheduler", Scheduler)
    settings = app_part(request, "settings", Settings)
    build = await app_part(request, "build", BuildProbe).report()
    report = await to_thread.run_sync(system_report, scheduler.status(), build.get("backend"))
    return SystemResponse(
        ram_total=report.ram_total,
        ram_available=report.ram_available,
        cpu_count=report.cpu_count,
        gpus=[
            GpuInfo(name=g.name, vram_total=g.vram_total, vram_free=g.vram_free)
            for g in report.gpus
        ],
        backend=report.backend,
        models_dir=str(settings.models_dir) if _local(request) else None,
        build_advice=report.build_advice,
    )


def _local(request: Request) -> bool:
    """A client on this machine (``localllm doctor`` compares stores); never a remote one."""
    return request.client is not None and is_loopback_address(request.client.host)


@router.get("/api/logs")
async def logs(request: Request, lines: int = Query(200, ge=1, le=10_000)) -> LogsResponse:
    """The log's end, paths redacted for every client: a local proxy (``tailscale serve``,
    nginx) makes remote clients look local, and the file keeps the whole paths anyway."""
    settings = app_part(request, "settings", Settings)
    redact = app_part(request, "redactor", PathRedactor)
    text = await to_thread.run_sync(tail, settings.log_dir / LOG_NAME, lines)
    return LogsResponse(text=await to_thread.run_sync(redact, text))


def tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of ``path``; empty when the daemon has no log file."""
    try:
        with path.open("rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            stream.seek(max(0, size - _TAIL_BYTES))
            data = stream.read()
    except OSError:
        return ""
    return "\n".join(data.decode(errors="replace").splitlines()[-lines:])
