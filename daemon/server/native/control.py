"""Our own endpoints for the program that manages the daemon: how it is served, and stop it.

``GET /api/server`` says where the daemon listens and whether it is open to the network, so the
desktop app's Server page shows the truth rather than its own guess. ``POST /api/shutdown`` is
how the app restarts the daemon with other settings (its "serve on the local network" switch):
only a program on this machine may ask (the client address must be loopback), never a web page
(a request carrying ``Origin`` is refused, even from an allowed origin), and with the API key
when one is configured (the key middleware sees to that). The stop is the same graceful one as
``kill -TERM``: requests in flight finish, running pulls pause, runners stop.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from localllm.daemon.api.native_system import ServerResponse
from localllm.daemon.security import is_local_client, is_loopback_address
from localllm.daemon.server.app_state import app_part
from localllm.daemon.settings import Settings

__all__ = ["router", "stop_server"]

router = APIRouter()

_STOP_DELAY = 0.05  # seconds: the answer goes out before the server starts closing


@router.get("/api/server")
async def server(request: Request) -> ServerResponse:
    settings = app_part(request, "settings", Settings)
    return ServerResponse(
        host=settings.host,
        port=settings.port,
        lan=not is_loopback_address(settings.host),
        api_key_set=bool(settings.api_key),
    )


@router.post("/api/shutdown")
async def shutdown(request: Request) -> JSONResponse:
    client = request.client.host if request.client else ""
    if not is_local_client(client):
        return _refused("only a program on the daemon's own machine may stop it")
    if "origin" in request.headers:
        return _refused("a web page may not stop the daemon")
    stop: Callable[[], None] = getattr(request.app.state, "stop_server", stop_server)
    asyncio.get_running_loop().call_later(_STOP_DELAY, stop)
    return JSONResponse({"status": "stopping"})


def stop_server() -> None:
    """Ask uvicorn to exit the way SIGTERM does: through its own handler when it installed
    one (no signal is sent, so this works on Windows too), else by raising SIGTERM."""
    handler = signal.getsignal(signal.SIGTERM)
    if callable(handler):
        handler(signal.SIGTERM, None)
    else:
        signal.raise_signal(signal.SIGTERM)


def _refused(message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=403)
