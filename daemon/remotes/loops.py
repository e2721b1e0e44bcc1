"""Checks on a remote before it is added: valid names and URLs, a key variable that may hold a
remote's key, no name that would take a local model's requests elsewhere, and no URL that
points back at this daemon (it would send each request to itself for ever)."""

from __future__ import annotations

from urllib.parse import urlsplit

from localllm.daemon.api.remotes import RemoteAddRequest
from localllm.daemon.errors import BadRequestError, ConflictError
from localllm.daemon.remotes.config import RemoteConfig, check_name, check_url
from localllm.daemon.remotes.keys import key_variable_problem
from localllm.daemon.settings import Settings
from localllm.model_registry.errors import InvalidNameError
from localllm.model_registry.names import DEFAULT_HOST, ModelName, parse_name
from localllm.model_registry.store import Store

__all__ = ["check_no_local_clash", "check_not_self", "checked_config"]

_LOOPBACK = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "::"}


def checked_config(request: RemoteAddRequest) -> RemoteConfig:
    name = check_name(request.name)
    urls = tuple(dict.fromkeys(check_url(url) for url in request.urls))
    for alias in request.aliases:
        if not alias or len(alias) > 128 or alias != alias.strip():
            raise BadRequestError(f"invalid alias {alias[:40]!r}", param="aliases")
    variable = request.api_key_env
    if variable is not None and (problem := key_variable_problem(variable)) is not None:
        raise BadRequestError(
            f"api_key_env {variable[:64]!r} {problem}; or pass the key itself as api_key",
            param="api_key_env",
        )
    return RemoteConfig(
        name=name,
        urls=urls,
        kind=request.kind,
        api_key_env=variable,
        aliases=dict(request.aliases),
        timeout_seconds=request.timeout_seconds,
        max_concurrency=request.max_concurrency,
    )


def check_no_local_clash(config: RemoteConfig, store: Store) -> None:
    """A remote's names come first when a request names a model, so a remote named like the
    first part of a local model's name (``team`` for ``team/x``), or an alias that is a local
    model's name, would send the prompts meant for that model to the remote: refused (409)."""
    for entry in store.list_models():
        name = entry.name
        if config.name in _first_parts(name):
            raise ConflictError(
                f"remote name {config.name!r} would hide the local model {name.display!r} "
                "(requests for it would go to the remote); choose another name"
            )
    for alias in config.aliases:
        try:
            local = store.exists(parse_name(alias))
        except InvalidNameError:
            continue  # no local model can have this name
        if local:
            raise ConflictError(
                f"alias {alias[:40]!r} is the name of a local model: requests for it would go "
                "to the remote; choose another alias"
            )


def _first_parts(name: ModelName) -> set[str]:
    """What a request for ``name`` may put before its first '/': the host, and on the default
    host the namespace (``library/qwen``, ``team/x``)."""
    return {name.host, name.namespace} if name.host == DEFAULT_HOST else {name.host}


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
