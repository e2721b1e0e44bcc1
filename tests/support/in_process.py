"""A daemon app served in this process, for tests that run the real ``daemon.client.Client``
against the real app without starting ``python -m localllm.daemon`` (``serve_in_thread``), or that
talk to it through starlette's ``TestClient`` (``app_settings``, ``app_client``).

Uvicorn serves the app on a free 127.0.0.1 port in a thread: a real socket and the server the
shipped daemon runs, through public API only. (httpx's ``ASGITransport`` is async-only, so the
synchronous client cannot take it; starlette's ``TestClient`` would have to lend the client
its private ``_transport``.)
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import uvicorn
from fastapi.testclient import TestClient

from localllm.daemon.server.app import create_app
from localllm.daemon.settings import Settings
from tests.support.daemon import make_store
from tests.support.polling import wait_for

__all__ = ["app_client", "app_settings", "serve_daemon_in_thread", "serve_in_thread"]


def app_settings(root: Path, models: Mapping[str, Path] | None = None, **fields) -> Settings:
    """Settings whose every folder is under ``root`` (never the user's), with a store of
    ``models`` (name -> GGUF), one runner thread and one slot unless ``fields`` say else."""
    fields = {"num_ctx": 512, "num_parallel": 1, "num_threads": 1, **fields}
    return Settings(
        models_dir=make_store(root / "store", models or {}),
        data_dir=root / "data",
        log_dir=root / "logs",
        config_dir=root / "config",
        **fields,
    )


@contextlib.contextmanager
def app_client(app, address: str = "testclient") -> Iterator[TestClient]:
    """``app`` running (its lifespan too) behind a ``TestClient`` whose requests come from
    ``address`` (``127.0.0.1`` for a caller on this machine)."""
    with TestClient(app, base_url="http://localhost", client=(address, 50000)) as client:
        yield client


@contextlib.contextmanager
def serve_in_thread(make_app: Callable[[int], object]) -> Iterator[str]:
    """Serve ``make_app(port)`` until the block ends; yields its base URL. The app is built
    once the port is known, so its settings can tell the truth about where it listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(make_app(port), log_level="warning", lifespan="on")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        try:
            if not wait_for(lambda: server.started or not thread.is_alive(), timeout=60):
                raise RuntimeError("the in-process daemon did not start")
            if not server.started:
                raise RuntimeError("the in-process daemon failed to start (see the log above)")
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            thread.join(30)


@contextlib.contextmanager
def serve_daemon_in_thread(root: Path, store: Path) -> Iterator[str]:
    """The daemon's app on the models in ``store``, its logs, data and config under ``root``."""

    def make_app(port: int):
        folders = {"data_dir": root / "data", "config_dir": root / "config"}
        return create_app(Settings(port=port, models_dir=store, log_dir=root / "logs", **folders))

    with serve_in_thread(make_app) as url:
        yield url
