"""Refuse requests whose Host header names another site while we listen on loopback.

A web page on ``evil.example`` can make the victim's browser resolve that name to 127.0.0.1
(DNS rebinding, Ollama's CVE-2024-28224) and then talk to us as if same-origin. The browser
still sends ``Host: evil.example``, so on loopback only local names are accepted.
"""

from __future__ import annotations

import ipaddress
import socket

from starlette.types import ASGIApp, Receive, Scope, Send

from daemon.security.responses import send_error

__all__ = ["HostCheckMiddleware", "allowed_host_names", "host_name_of", "is_loopback_address"]


def is_loopback_address(host: str) -> bool:
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_host_names() -> frozenset[str]:
    """Local names: localhost, loopback addresses and this machine's own name."""
    names = {"localhost", "127.0.0.1", "::1", "[::1]"}
    hostname = socket.gethostname().lower()
    names |= {hostname, f"{hostname}.local", hostname.split(".")[0]}
    return frozenset(names)


def host_name_of(header: str) -> str:
    """The host part of a Host header, lower-cased, without port (IPv6 brackets kept)."""
    header = header.strip().lower().rstrip(".")
    if header.startswith("["):
        return header[: header.find("]") + 1] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _is_local_name(name: str, allowed: frozenset[str]) -> bool:
    if name in allowed or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


class HostCheckMiddleware:
    def __init__(self, app: ASGIApp, enabled: bool, allowed: frozenset[str] | None = None):
        self.app = app
        self.enabled = enabled
        self.allowed = allowed if allowed is not None else allowed_host_names()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.enabled and scope["type"] == "http":
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if not _is_local_name(host_name_of(host), self.allowed):
                await send_error(
                    send, 403, "forbidden host: this server only answers to localhost names"
                )
                return
        await self.app(scope, receive, send)
