"""Admin routes: changes to where the daemon sends data (remotes) need a caller on this machine
*and* the admin token (``daemon.security.keys``), which the CLI and the desktop app send.

The API key alone is not enough: it is handed to LAN clients and local tools, and a remote is
a way to make the daemon send requests (with a key from its environment, once) to any URL and
read the answers back. The token is compared in constant time; a refusal says what is missing.
"""

from __future__ import annotations

import hmac

from fastapi import Request

from localllm.daemon.errors import ForbiddenError
from localllm.daemon.security import ADMIN_HEADER, is_local_client
from localllm.daemon.server.app_state import app_part

__all__ = ["admin_only"]


def admin_only(request: Request) -> None:
    """A route dependency: refuse (403) unless the caller is local and sends the token."""
    client = request.client.host if request.client else ""
    if not is_local_client(client):
        raise ForbiddenError("remotes can be changed only from the daemon's own machine")
    token = app_part(request, "admin_token", str)
    given = request.headers.get(ADMIN_HEADER, "")
    if not hmac.compare_digest(given.encode(), token.encode()):
        raise ForbiddenError(
            f"changing remotes needs the daemon's admin token in the {ADMIN_HEADER} header: "
            "use `localllm remote add` or the desktop app (they send it), or send the "
            "admin_token file of the daemon's config folder (or LOCALLLM_ADMIN_TOKEN)"
        )
