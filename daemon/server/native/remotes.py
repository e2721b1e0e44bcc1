"""``/api/remotes``: list, add and remove remotes (management: behind the same API key, Host
and CORS guards as every route; adding and removing also need a caller on this machine with
the admin token, see ``admin``). Keys go in, never out."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from localllm.daemon.api.remotes import RemoteAddRequest, RemoteInfo, RemoteList
from localllm.daemon.remotes import Remotes
from localllm.daemon.server.admin import admin_only
from localllm.daemon.server.app_state import app_part

__all__ = ["router"]

router = APIRouter()


def _remotes(request: Request) -> Remotes:
    return app_part(request, "remotes", Remotes)


@router.get("/api/remotes")
async def list_remotes(request: Request) -> RemoteList:
    return _remotes(request).list()


@router.post("/api/remotes", dependencies=[Depends(admin_only)])
async def add_remote(body: RemoteAddRequest, request: Request) -> RemoteInfo:
    return await _remotes(request).add(body)


@router.delete("/api/remotes/{name}", dependencies=[Depends(admin_only)])
async def remove_remote(name: str, request: Request) -> JSONResponse:
    await _remotes(request).remove(name)
    return JSONResponse({"status": "success"})
