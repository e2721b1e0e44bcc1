"""Servers from a pasted ``mcp.json``: the ``{"mcpServers": {name: {...}}}`` file Claude
Desktop, Cursor, LM Studio and others share (``command``, ``args``, ``env``, ``cwd`` for a
program; ``url`` for a server already running). Qt-free; what is wrong is said in one sentence.
A key becomes a server's name with what a name cannot hold replaced by ``-``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from localllm.app.tools.servers import ServerConfig, ServerConfigError

__all__ = ["McpJsonError", "servers_from_mcp_json"]

_MAX_TEXT = 1_000_000  # characters: a pasted configuration, never a whole file system
_NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9 ._-]+")


class McpJsonError(ValueError):
    """What is wrong with the pasted text, and what to do."""


def _name(key: str) -> str:
    cleaned = _NOT_IN_NAMES.sub("-", key).strip(" .-_")[:40]
    return cleaned or "server"


def _strings(value: Any, what: str, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise McpJsonError(f"{name}: {what} must be a list of strings.")
    return tuple(value)


def _one(key: str, entry: Any) -> ServerConfig:
    name = _name(key)
    if not isinstance(entry, dict):
        raise McpJsonError(f"{name}: each server is an object with a command or a url.")
    env = entry.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise McpJsonError(f"{name}: env must map names to strings.")
    try:
        return ServerConfig(
            name,
            command=str(entry.get("command") or ""),
            args=_strings(entry.get("args"), "args", name),
            env={str(k): v for k, v in env.items()},
            cwd=str(entry.get("cwd") or ""),
            url=str(entry.get("url") or entry.get("serverUrl") or ""),
            enabled=not entry.get("disabled", False),
        )
    except ServerConfigError as error:
        raise McpJsonError(f"{error}.") from error


def servers_from_mcp_json(text: str) -> list[ServerConfig]:
    if len(text) > _MAX_TEXT:
        raise McpJsonError("That is too long for an mcp.json; paste the file's contents only.")
    try:
        data = json.loads(text)
    except ValueError as error:
        raise McpJsonError(
            f"That is not JSON (line {getattr(error, 'lineno', '?')}): paste the whole file."
        ) from error
    servers = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(servers, dict) or not servers:
        raise McpJsonError('No servers found: an mcp.json has {"mcpServers": {"name": {...}}}.')
    found = [_one(key, entry) for key, entry in servers.items()]
    _refuse_clashes(list(servers), found)
    return found


def _refuse_clashes(keys: list[str], found: list[ServerConfig]) -> None:
    """Two keys a name cannot tell apart (``a/b`` and ``a-b`` are both ``a-b``): refused
    rather than renamed, so the user decides which server is which."""
    first: dict[str, str] = {}
    for key, server in zip(keys, found, strict=True):
        if server.name in first:
            raise McpJsonError(
                f"{first[server.name]!r} and {key!r} would both be named {server.name!r} "
                "(a name keeps letters, digits, spaces, '.', '_' and '-'): rename one of them."
            )
        first[server.name] = key
