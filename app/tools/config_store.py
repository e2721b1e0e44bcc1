"""The MCP servers the user added, kept in ``mcp_servers.json`` (mode 0600) in the app's
config folder, with each stdio server's environment (often tokens) in the system keyring,
or in a 0600 file beside it where no keyring works (``model_registry.credentials``).

Allowed tools ("always allow") are kept here too, by server and tool name and a fingerprint of
what the approval was for: everything that decides what runs (the server's command, arguments,
environment and folder, or its URL) and the tool's input schema. A renamed or removed server
forgets them, and so does a server any of whose launch definition changes (an added
``NODE_OPTIONS=--require ...`` runs other code under the same command line), or a tool whose
schema does: the next call asks again. The fingerprint is a digest: the environment's values
(tokens) are not in this file. A file that cannot be read is set aside, never overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from localllm.app.tools.catalog import ToolSpec
from localllm.app.tools.servers import ServerConfig
from localllm.model_registry.credentials import Credential

__all__ = ["FILE_NAME", "McpSettings", "McpSettingsStore", "approval_key"]

FILE_NAME = "mcp_servers.json"
_VERSION = 1
Approval = tuple[str, str, str]  # server name, tool name, fingerprint


def approval_key(server: ServerConfig, tool: ToolSpec) -> Approval:
    """What an "always allow" is for: this tool of this server, as the server is started (its
    command line, environment, folder or URL) and as the tool takes its arguments (its
    schema)."""
    what = {
        "command": server.command,
        "args": list(server.args),
        "env": dict(server.env),  # sort_keys: the order it was typed in does not count
        "cwd": server.cwd,
        "url": server.url,
        "schema": tool.schema,
    }
    text = json.dumps(what, sort_keys=True, ensure_ascii=False, default=str)
    return server.name, tool.name, hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class McpSettings:
    servers: tuple[ServerConfig, ...] = ()
    allowed: frozenset[Approval] = field(default_factory=frozenset)  # see approval_key
    # ask models to call a tool first in every answer (the daemon's grammar makes them): for
    # small models that do not call tools on their own
    require_call: bool = False

    def server(self, name: str) -> ServerConfig | None:
        return next((s for s in self.servers if s.name == name), None)

    def enabled(self) -> tuple[ServerConfig, ...]:
        return tuple(s for s in self.servers if s.enabled)

    def is_allowed(self, server: ServerConfig, tool: ToolSpec) -> bool:
        return approval_key(server, tool) in self.allowed

    def allowing(self, server: ServerConfig, tool: ToolSpec) -> McpSettings:
        return replace(self, allowed=self.allowed | {approval_key(server, tool)})

    def with_servers(self, servers: Iterable[ServerConfig]) -> McpSettings:
        servers = tuple(servers)
        names = {s.name for s in servers}
        if len(names) != len(servers):
            raise ValueError("two servers cannot have the same name")
        allowed = frozenset(a for a in self.allowed if a[0] in names)
        return replace(self, servers=servers, allowed=allowed)


def _secret(name: str) -> Credential:
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return Credential(f"mcp-server-env:{name}", f"mcp-env-{digest}")


class McpSettingsStore:
    def __init__(self, config_dir: Path, *, keyring_backend: Any = None):
        self.config_dir = Path(config_dir)
        self.path = self.config_dir / FILE_NAME
        self._keyring = keyring_backend

    def load(self) -> McpSettings:
        try:
            document = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return McpSettings()
        except ValueError:
            return self._set_aside()
        try:
            servers = tuple(self._server(item) for item in document["servers"])
            entries = [a for a in document.get("allowed", ()) if len(a) == 3]  # older: ask again
            allowed = frozenset((str(a[0]), str(a[1]), str(a[2])) for a in entries)
        except (KeyError, TypeError, ValueError, IndexError):
            return self._set_aside()
        return McpSettings(servers, allowed, bool(document.get("require_call", False)))

    def save(self, settings: McpSettings) -> None:
        before = self._names()
        for server in settings.servers:
            if server.env:
                _secret(server.name).store(
                    json.dumps(server.env), self.config_dir, keyring_backend=self._keyring
                )
            else:
                _secret(server.name).delete(self.config_dir, keyring_backend=self._keyring)
        for gone in before - {s.name for s in settings.servers}:
            _secret(gone).delete(self.config_dir, keyring_backend=self._keyring)
        document = {
            "version": _VERSION,
            "servers": [s.to_json() for s in settings.servers],
            "allowed": sorted(list(a) for a in settings.allowed),
            "require_call": settings.require_call,
        }
        self._write(json.dumps(document, indent=2, ensure_ascii=False))

    def _server(self, item: dict[str, Any]) -> ServerConfig:
        env: dict[str, str] = {}
        if item.get("env_keys"):
            stored = _secret(str(item["name"])).load(self.config_dir, keyring_backend=self._keyring)
            env = json.loads(stored) if stored else {}
        return ServerConfig.from_json(item, env)

    def _names(self) -> set[str]:
        try:
            document = json.loads(self.path.read_bytes())
            return {str(item["name"]) for item in document["servers"]}
        except (OSError, ValueError, KeyError, TypeError):
            return set()

    def _write(self, text: str) -> None:
        self.config_dir.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        temporary.unlink(missing_ok=True)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.chmod(temporary, 0o600)
        os.replace(temporary, self.path)

    def _set_aside(self) -> McpSettings:
        os.replace(self.path, self.path.with_name(self.path.name + ".unreadable"))
        return McpSettings()
