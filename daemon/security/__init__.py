"""Safe-by-default HTTP guards: Host check (DNS rebinding), CORS allowlist, API key, body size,
stalled bodies.

Each guard is a small pure-ASGI middleware so it sees every request, streaming ones included,
before any route runs.
"""

from localllm.daemon.security.api_key import ApiKeyMiddleware
from localllm.daemon.security.body_limit import BodyLimitMiddleware
from localllm.daemon.security.body_timeout import BodyTimeoutMiddleware
from localllm.daemon.security.cors import CorsMiddleware, OriginPolicy
from localllm.daemon.security.host_check import (
    HostCheckMiddleware,
    is_local_client,
    is_loopback_address,
)
from localllm.daemon.security.keys import ADMIN_HEADER, AdminTokenStore, ApiKeyStore

__all__ = [
    "ADMIN_HEADER",
    "AdminTokenStore",
    "ApiKeyMiddleware",
    "ApiKeyStore",
    "BodyLimitMiddleware",
    "BodyTimeoutMiddleware",
    "CorsMiddleware",
    "HostCheckMiddleware",
    "OriginPolicy",
    "is_local_client",
    "is_loopback_address",
]
