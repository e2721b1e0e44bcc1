"""The one HTTP client every front end uses, and the errors it raises.

``daemon.client.launcher`` finds or starts a daemon to talk to.
"""

from daemon.client.client import DEFAULT_BASE_URL, Client
from daemon.client.errors import (
    BadRequest,
    ClientError,
    DaemonUnavailable,
    Forbidden,
    ModelNotFound,
    ServerBusy,
    ServerError,
    Unauthorized,
)

__all__ = [
    "DEFAULT_BASE_URL",
    "BadRequest",
    "Client",
    "ClientError",
    "DaemonUnavailable",
    "Forbidden",
    "ModelNotFound",
    "ServerBusy",
    "ServerError",
    "Unauthorized",
]
