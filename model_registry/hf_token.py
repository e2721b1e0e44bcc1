"""The Hugging Face token for gated and private repositories: where it is kept and found.

The settings layer calls :func:`load_hf_token` with ``HF_TOKEN`` (if set) and passes the
result to the puller; nothing else looks for a token. A stored token lives in the system
keyring (service ``localllm``, user ``huggingface``); where no keyring works (common on Linux
servers without a desktop session) it goes to ``<config_dir>/hf_token``, readable only by
its owner.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

__all__ = [
    "KEYRING_SERVICE",
    "KEYRING_USER",
    "TOKEN_FILE_NAME",
    "delete_hf_token",
    "load_hf_token",
    "store_hf_token",
]

KEYRING_SERVICE = "localllm"
KEYRING_USER = "huggingface"
TOKEN_FILE_NAME = "hf_token"
IN_KEYRING = "the system keyring"
IN_FILE = "a file only you can read"


def load_hf_token(
    env_token: str | None, config_dir: Path | None = None, *, keyring_backend: Any = None
) -> str | None:
    """The token to use: ``env_token`` first, then the keyring, then the token file."""
    if env_token and env_token.strip():
        return env_token.strip()
    backend = _backend(keyring_backend)
    if backend is not None:
        with contextlib.suppress(Exception):  # a keyring that fails is a keyring we skip
            token = backend.get_password(KEYRING_SERVICE, KEYRING_USER)
            if token and token.strip():
                return token.strip()
    if config_dir is not None:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            token = (Path(config_dir) / TOKEN_FILE_NAME).read_text(encoding="utf-8").strip()
            return token or None
    return None


def store_hf_token(token: str, config_dir: Path, *, keyring_backend: Any = None) -> str:
    """Keep ``token`` for later pulls; returns where it went, in words for the user."""
    token = token.strip()
    if not token or not token.isascii() or not token.isprintable():
        raise ValueError("that does not look like a Hugging Face token (hf_...)")
    backend = _backend(keyring_backend)
    if backend is not None:
        try:
            backend.set_password(KEYRING_SERVICE, KEYRING_USER, token)
        except Exception:  # no usable keyring after all: fall back to the file
            pass
        else:
            (Path(config_dir) / TOKEN_FILE_NAME).unlink(missing_ok=True)
            return IN_KEYRING
    _write_private(Path(config_dir) / TOKEN_FILE_NAME, token)
    return IN_FILE


def delete_hf_token(config_dir: Path, *, keyring_backend: Any = None) -> bool:
    """Forget the stored token (keyring and file); False if there was none."""
    removed = False
    backend = _backend(keyring_backend)
    if backend is not None:
        with contextlib.suppress(Exception):
            if backend.get_password(KEYRING_SERVICE, KEYRING_USER) is not None:
                backend.delete_password(KEYRING_SERVICE, KEYRING_USER)
                removed = True
    path = Path(config_dir) / TOKEN_FILE_NAME
    if path.exists():
        path.unlink()
        removed = True
    return removed


def _backend(explicit: Any) -> Any:
    """The keyring backend to use, or None when the system has no usable one."""
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


def _write_private(path: Path, token: str) -> None:
    """Write the token to a file created with mode 0600 (never readable by others)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    temp.unlink(missing_ok=True)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(token + "\n")
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temp, 0o600)  # in case of an unusual umask or file system
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)
