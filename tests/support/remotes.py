"""Helpers for the remotes tests: a front daemon whose config lives in the test's folder (its
keys in the user-only key file, never the test machine's keyring), and adding remotes to it."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.daemon import Daemon, make_store

__all__ = ["add_remote", "front_daemon"]

NO_KEYRING = "keyring.backends.fail.Keyring"


def front_daemon(root: Path, env: dict[str, str] | None = None) -> Daemon:
    """A daemon with an empty store, its config in ``root / "config"``, checking its remotes
    every second."""
    return Daemon(
        make_store(root / "store", {}),
        root / "logs",
        env={
            "LOCALLLM_CONFIG": str(root / "config"),
            "PYTHON_KEYRING_BACKEND": NO_KEYRING,
            "LOCALLLM_REMOTE_CHECK_INTERVAL": "1",
            **(env or {}),
        },
    )


def add_remote(front: Daemon, name: str, urls: list[str], **fields) -> httpx.Response:
    body = {"name": name, "urls": urls, **fields}
    return httpx.post(front.url + "/api/remotes", json=body, timeout=30)
