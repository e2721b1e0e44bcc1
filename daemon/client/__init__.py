"""The one HTTP client every front end uses, its interface, and the errors it raises.

``Client`` answers with ``daemon.api`` models; front ends annotate against ``DaemonClient``
(the protocol it satisfies). ``daemon.client.launcher`` finds or starts a daemon to talk to.
"""

from localllm.daemon.client.client import DEFAULT_BASE_URL, Client
from localllm.daemon.client.errors import (
    BadRequest,
    ClientError,
    Conflict,
    DaemonTimeout,
    DaemonUnavailable,
    Forbidden,
    ModelNotFound,
    RemoteNotFound,
    ServerBusy,
    ServerError,
    Unauthorized,
)
from localllm.daemon.client.protocol import DaemonClient

__all__ = [
    "DEFAULT_BASE_URL",
    "BadRequest",
    "Client",
    "ClientError",
    "Conflict",
    "DaemonClient",
    "DaemonTimeout",
    "DaemonUnavailable",
    "Forbidden",
    "ModelNotFound",
    "RemoteNotFound",
    "ServerBusy",
    "ServerError",
    "Unauthorized",
]
