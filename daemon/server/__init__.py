"""The HTTP server: a FastAPI app built by ``create_app``."""

from localllm.daemon.server.app import create_app

__all__ = ["create_app"]
