"""Where the API key lives: the system keyring, else a file only the user can read.

On Linux servers ``keyring`` often has no backend; then the key goes to
``<config dir>/api_key`` with mode 0600, and :attr:`ApiKeyStore.location` says so.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

__all__ = ["ApiKeyStore"]

_SERVICE = "localllm"
_USER = "api-key"


def _keyring():
    """The keyring module if it has a usable backend, else None."""
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:
        return None
    if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 1) <= 0:
        return None
    return keyring


class ApiKeyStore:
    def __init__(self, config_dir: Path, use_keyring: bool = True):
        self.file = Path(config_dir) / "api_key"
        self.use_keyring = use_keyring

    @property
    def location(self) -> str:
        if self._backend() is not None and not self.file.exists():
            return "the system keyring"
        return f"{self.file.name} in the config directory, readable only by you"

    def load(self) -> str | None:
        backend = self._backend()
        if backend is not None:
            try:
                value = backend.get_password(_SERVICE, _USER)
            except Exception:
                value = None
            if value:
                return value
        try:
            return self.file.read_text().strip() or None
        except OSError:
            return None

    def create(self) -> str:
        """Return the existing key, or make and save a new one."""
        return self.load() or self._save(secrets.token_urlsafe(32))

    def _save(self, key: str) -> str:
        backend = self._backend()
        if backend is not None:
            try:
                backend.set_password(_SERVICE, _USER, key)
                return key
            except Exception:
                pass
        self.file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as stream:
            stream.write(key + "\n")
        os.chmod(self.file, 0o600)
        return key

    def _backend(self):
        return _keyring() if self.use_keyring else None
