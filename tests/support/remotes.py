"""Helpers for the remotes tests: a front daemon whose config lives in the test's folder (its
keys in the user-only key file, never the test machine's keyring), and adding and removing
remotes on it, with its admin token as the CLI sends it."""

from __future__ import annotations

from pathlib import Path

import httpx

from localllm.daemon.security.keys import ADMIN_HEADER, AdminTokenStore
from tests.support.daemon import Daemon, make_store

__all__ = ["add_remote", "admin_headers", "front_daemon", "remove_remote"]

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


def admin_headers(token: str | None) -> dict[str, str]:
    return {ADMIN_HEADER: token} if token else {}


def _admin(front: Daemon) -> dict[str, str]:
    return admin_headers(AdminTokenStore(front.config_dir).load())


def add_remote(front: Daemon, name: str, urls: list[str], **fields) -> httpx.Response:
    body = {"name": name, "urls": urls, **fields}
    return httpx.post(front.url + "/api/remotes", json=body, headers=_admin(front), timeout=30)


def remove_remote(front: Daemon, name: str) -> httpx.Response:
    return httpx.delete(f"{front.url}/api/remotes/{name}", headers=_admin(front), timeout=10)
