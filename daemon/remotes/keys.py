"""A remote's API key: the keyring (else a user-only file), or a variable of the daemon's
environment that the remote names. Never in the remotes file, never in a response."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from model_registry.credentials import Credential

__all__ = ["RemoteKeys"]


def _credential(name: str) -> Credential:
    return Credential(f"remote-{name}", f"remote-{name}.key")


class RemoteKeys:
    def __init__(self, config_dir: Path, environment: Mapping[str, str], use_keyring: bool = True):
        self._config_dir = Path(config_dir)
        self._environment = environment
        self._backend = None if use_keyring else False

    def store(self, name: str, key: str) -> None:
        _credential(name).store(key, self._config_dir, keyring_backend=self._backend)

    def forget(self, name: str) -> None:
        _credential(name).delete(self._config_dir, keyring_backend=self._backend)

    def key(self, name: str, env: str | None) -> str | None:
        """The key to send to remote ``name``: its variable's value first, then the stored one."""
        if env and self._environment.get(env):
            return self._environment[env]
        return _credential(name).load(self._config_dir, keyring_backend=self._backend)
