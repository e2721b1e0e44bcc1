"""Whether the daemon runs, its version, and which model store it serves.

Asked without starting it (the doctor reports what is, and every other command starts the
daemon anyway). A daemon older than ``/api/version`` or ``/api/system`` still gets a report:
the version from ``/health`` and the store as unknown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from localllm.app.cli.doctor.report import DaemonState
from localllm.daemon.client import Client, ClientError, DaemonClient, Unauthorized
from localllm.daemon.client.launcher import (
    DaemonStartError,
    connect_url,
    daemon_answers,
    is_loopback,
)
from localllm.daemon.settings import Settings

__all__ = ["daemon_state"]

_TIMEOUT = 10.0
_MISSING = (404, 405)  # the daemon predates the endpoint
_WILDCARDS = ("0.0.0.0", "::", "")  # listening on every address, this one included
T = TypeVar("T")


def daemon_state(settings: Settings) -> DaemonState:
    url = connect_url(settings)
    local = settings.host in _WILDCARDS or is_loopback(settings.host)
    try:
        if not daemon_answers(url):
            return DaemonState(url, running=False, local=local)
    except DaemonStartError as error:
        return DaemonState(url, running=False, local=local, error=str(error))
    client = Client(url, api_key=settings.api_key, timeout=_TIMEOUT)
    try:
        version = _version(client)
        system = _optional(client.system)
    except Unauthorized:
        message = "the daemon wants an API key: set LOCALLLM_API_KEY to the one it uses"
        return DaemonState(url, running=True, local=local, error=message)
    except ClientError as error:
        return DaemonState(url, running=True, local=local, error=f"the daemon failed: {error}")
    finally:
        client.close()
    models_dir = system.models_dir if system is not None else None
    return DaemonState(url, True, local, version, models_dir or None)


def _version(client: DaemonClient) -> str | None:
    version = _optional(client.version)
    if version is None:
        health = _optional(client.health)
        version = health.version if health is not None else None
    return version or None


def _optional(call: Callable[[], T]) -> T | None:
    try:
        return call()
    except ClientError as error:
        if error.status in _MISSING:
            return None
        raise
