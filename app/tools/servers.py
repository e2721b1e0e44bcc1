"""An MCP server as the user configured it: a command to start (stdio) or an HTTP URL.

Checked when made, so a bad entry is refused with a message saying what is wrong and what is
allowed, rather than failing later on the event loop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlparse

__all__ = ["ServerConfig", "ServerConfigError"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.-]{0,39}$")
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ServerConfigError(ValueError):
    """A server entry the user must fix (the message says how)."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """``command`` (+ ``args``, ``env``, ``cwd``) for a stdio server, or ``url`` for one
    reached over streamable HTTP. ``env`` may hold tokens: the config file keeps it apart."""

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = ""
    url: str = ""
    enabled: bool = True

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ServerConfigError(
                "a server name is 1-40 letters, digits, spaces, '.', '_' or '-', "
                "starting with a letter or digit"
            )
        if bool(self.command.strip()) == bool(self.url.strip()):
            raise ServerConfigError(f"{self.name}: give either a command or a URL, not both")
        if self.url and urlparse(self.url).scheme not in ("http", "https"):
            raise ServerConfigError(f"{self.name}: the URL must start with http:// or https://")
        bad = [key for key in self.env if not _ENV_KEY.match(key)]
        if bad:
            raise ServerConfigError(
                f"{self.name}: {bad[0]!r} is not an environment variable name "
                "(letters, digits and '_', not starting with a digit)"
            )

    @property
    def kind(self) -> str:
        return "http" if self.url else "stdio"

    @property
    def where(self) -> str:
        """What to show for it: the URL, or the command line."""
        return self.url or " ".join((self.command, *self.args))

    def to_json(self, *, with_env: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "enabled": self.enabled}
        if self.url:
            data["url"] = self.url
        else:
            data.update(command=self.command, args=list(self.args), cwd=self.cwd)
            data["env_keys"] = sorted(self.env)
            if with_env:
                data["env"] = dict(self.env)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], env: dict[str, str] | None = None) -> ServerConfig:
        return cls(
            name=str(data["name"]),
            command=str(data.get("command") or ""),
            args=tuple(str(a) for a in data.get("args") or ()),
            env=dict(env if env is not None else data.get("env") or {}),
            cwd=str(data.get("cwd") or ""),
            url=str(data.get("url") or ""),
            enabled=bool(data.get("enabled", True)),
        )

    def with_enabled(self, enabled: bool) -> ServerConfig:
        return replace(self, enabled=enabled)
