"""Checks on a remote before it is added: valid names and URLs, and no URL that points back
at this daemon (it would send each request to itself for ever)."""

from __future__ import annotations

from urllib.parse import urlsplit

from daemon.api.remotes import RemoteAddRequest
from daemon.errors import BadRequestError
from daemon.remotes.config import RemoteConfig, check_name, check_url
from daemon.settings import Settings

__all__ = ["check_not_self", "checked_config"]

_LOOPBACK = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "::"}


def checked_config(request: RemoteAddRequest) -> RemoteConfig:
    name = check_name(request.name)
    urls = tuple(dict.fromkeys(check_url(url) for url in request.urls))
    for alias in request.aliases:
        if not alias or len(alias) > 128 or alias != alias.strip():
            raise BadRequestError(f"invalid alias {alias[:40]!r}", param="aliases")
    if request.api_key_env is not None and not request.api_key_env.replace("_", "").isalnum():
        raise BadRequestError("api_key_env must name an environment variable", "api_key_env")
    return RemoteConfig(
        name=name,
        urls=urls,
        kind=request.kind,
        api_key_env=request.api_key_env,
        aliases=dict(request.aliases),
        timeout_seconds=request.timeout_seconds,
        max_concurrency=request.max_concurrency,
    )


def check_not_self(urls: tuple[str, ...], settings: Settings) -> None:
    own = {settings.host.lower()} | (_LOOPBACK if settings.host.lower() in _LOOPBACK else set())
    for url in urls:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = (parts.hostname or "").lower()
        if port == settings.port and (host in own or (host in _LOOPBACK and "0.0.0.0" in own)):
            raise BadRequestError(
                f"{url} is this daemon itself; a remote must be another server", param="urls"
            )
