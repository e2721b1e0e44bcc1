"""Refuse requests whose Host header names another site while we listen on loopback.

A web page on ``evil.example`` can make the victim's browser resolve that name to 127.0.0.1
(DNS rebinding, Ollama's CVE-2024-28224) and then talk to us as if same-origin. The browser
still sends ``Host: evil.example``, so on loopback only names that cannot be rebound are
accepted: ``localhost``, ``*.localhost`` (browsers resolve these themselves) and loopback
addresses. Not this machine's name: ``<hostname>`` and ``<hostname>.local`` come from the LAN
(mDNS, the router's DNS), where another device can answer for them. Beyond loopback the check
is off (any name reaches us) and the mandatory API key guards instead.
"""

from __future__ import annotations

import ipaddress

from starlette.types import ASGIApp, Receive, Scope, Send

from localllm.daemon.security.responses import send_error

__all__ = [
    "HostCheckMiddleware",
    "host_name_of",
    "is_local_client",
    "is_local_host_name",
    "is_loopback_address",
]


def is_loopback_address(host: str) -> bool:
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_local_client(address: str) -> bool:
    """Whether a client address is this machine: loopback, including IPv4 loopback seen
    through a dual-stack socket (``::ffff:127.0.0.1``)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def host_name_of(header: str) -> str:
    """The host part of a Host header, lower-cased, without port (IPv6 brackets kept)."""
    header = header.strip().lower().rstrip(".")
    if header.startswith("["):
        return header[: header.find("]") + 1] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def is_local_host_name(name: str) -> bool:
    """A Host name (``host_name_of``) no other machine can answer for."""
    return is_loopback_address(name) or name.endswith(".localhost")


class HostCheckMiddleware:
    def __init__(self, app: ASGIApp, enabled: bool):
        self.app = app
        self.enabled = enabled

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.enabled and scope["type"] == "http":
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if not is_local_host_name(host_name_of(host)):
                await send_error(
                    scope,
                    send,
                    403,
                    "forbidden host: on loopback this server answers only to localhost, "
                    "*.localhost and loopback addresses",
                )
                return
        await self.app(scope, receive, send)
