"""Where the API key lives: the system keyring, else a file only the user can read; and the
admin token, in a file only the user can read.

On Linux servers ``keyring`` often has no backend; then the key goes to
``<config dir>/api_key`` with mode 0600, and :attr:`ApiKeyStore.location` says so.

The admin token (``<config dir>/admin_token``, 0600, made by the daemon when it starts) is what
changes to where data goes (remotes) need besides a loopback address: the CLI and the desktop
app, run by the same user, read it and send it as ``X-Localllm-Admin``; a program that holds
only the API key (a LAN client, a local tool it was given to) does not have it. Never in the
keyring: reading it must not ask to unlock one.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from localllm.model_registry.credentials import IN_FILE, IN_KEYRING, NO_KEYRING, Credential

__all__ = ["ADMIN_HEADER", "AdminTokenStore", "ApiKeyStore"]

_API_KEY = Credential("api-key", "api_key")
_ADMIN_TOKEN = Credential("admin-token", "admin_token")
ADMIN_HEADER = "X-Localllm-Admin"


class ApiKeyStore:
    def __init__(self, config_dir: Path, use_keyring: bool = True):
        self.config_dir = Path(config_dir)
        self.file = self.config_dir / _API_KEY.file_name
        self._backend = None if use_keyring else NO_KEYRING
        self._location: str | None = None

    @property
    def location(self) -> str:
        """Where the key is kept, in words (after :meth:`create`, exactly where it went)."""
        if self._location is None:
            return IN_FILE if self.file.exists() else IN_KEYRING
        return self._location

    def load(self) -> str | None:
        return _API_KEY.load(self.config_dir, keyring_backend=self._backend)

    def create(self) -> str:
        """Return the existing key, or make and save a new one."""
        existing = self.load()
        if existing:
            return existing
        key = secrets.token_urlsafe(32)
        self._location = _API_KEY.store(key, self.config_dir, keyring_backend=self._backend)
        return key


class AdminTokenStore:
    """``<config dir>/admin_token``: made once by the daemon, read by the CLI and the app."""

    def __init__(self, config_dir: Path):
        self.config_dir = Path(config_dir)

    def load(self) -> str | None:
        return _ADMIN_TOKEN.load(self.config_dir, keyring_backend=NO_KEYRING)

    def create(self) -> str:
        """Return the existing token, or make and save a new one."""
        existing = self.load()
        if existing:
            return existing
        token = secrets.token_urlsafe(32)
        _ADMIN_TOKEN.store(token, self.config_dir, keyring_backend=NO_KEYRING)
        return token
