"""Secrets kept for the user (the Hugging Face token, the daemon's API key).

A secret lives in the system keyring (service ``localllm``); where no keyring works (common on
Linux servers without a desktop session) it goes to a file in the config directory that only
its owner can read, and the caller is told which, in words.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["IN_FILE", "IN_KEYRING", "KEYRING_SERVICE", "NO_KEYRING", "Credential"]

KEYRING_SERVICE = "localllm"
IN_KEYRING = "the system keyring"
IN_FILE = "a file only you can read (no system keyring is available)"
NO_KEYRING = False  # pass as ``keyring_backend`` to use the file alone


@dataclass(frozen=True, slots=True)
class Credential:
    """One named secret: its keyring user name and its fallback file name."""

    keyring_user: str
    file_name: str

    def load(self, config_dir: Path | None, *, keyring_backend: Any = None) -> str | None:
        """The stored secret: keyring first, then the file; None if neither has one."""
        backend = _backend(keyring_backend)
        if backend is not None:
            with contextlib.suppress(Exception):  # a keyring that fails is a keyring we skip
                value: str | None = backend.get_password(KEYRING_SERVICE, self.keyring_user)
                if value and value.strip():
                    return value.strip()
        if config_dir is not None:
            with contextlib.suppress(OSError, UnicodeDecodeError):
                value = (Path(config_dir) / self.file_name).read_text(encoding="utf-8").strip()
                return value or None
        return None

    def store(self, value: str, config_dir: Path, *, keyring_backend: Any = None) -> str:
        """Keep ``value``; returns where it went (:data:`IN_KEYRING` or :data:`IN_FILE`)."""
        backend = _backend(keyring_backend)
        if backend is not None:
            try:
                backend.set_password(KEYRING_SERVICE, self.keyring_user, value)
            except Exception:  # no usable keyring after all: fall back to the file
                pass
            else:
                (Path(config_dir) / self.file_name).unlink(missing_ok=True)
                return IN_KEYRING
        _write_private(Path(config_dir) / self.file_name, value)
        return IN_FILE

    def delete(self, config_dir: Path, *, keyring_backend: Any = None) -> bool:
        """Forget the secret (keyring and file); False if there was none."""
        removed = False
        backend = _backend(keyring_backend)
        if backend is not None:
            with contextlib.suppress(Exception):
                if backend.get_password(KEYRING_SERVICE, self.keyring_user) is not None:
                    backend.delete_password(KEYRING_SERVICE, self.keyring_user)
                    removed = True
        path = Path(config_dir) / self.file_name
        if path.exists():
            path.unlink()
            removed = True
        return removed


def _backend(explicit: Any) -> Any:
    """The keyring backend to use, or None when the system has no usable one."""
    if explicit is NO_KEYRING:
        return None
    if explicit is not None:
        return explicit
    try:
        import keyring
        from keyring.backends import fail

        backend = keyring.get_keyring()
    except Exception:
        return None
    if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 1) <= 0:
        return None
    return backend


def _write_private(path: Path, value: str) -> None:
    """Write the secret to a file created with mode 0600 (never readable by others)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    temp.unlink(missing_ok=True)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(value + "\n")
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temp, 0o600)  # in case of an unusual umask or file system
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
