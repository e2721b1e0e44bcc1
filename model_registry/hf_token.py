"""The Hugging Face token for gated and private repositories: where it is kept and found.

The settings layer calls :func:`load_hf_token` with ``HF_TOKEN`` (if set) and passes the
result to the puller; nothing else looks for a token. A stored token lives in the system
keyring (service ``localllm``, user ``huggingface``), else in ``<config_dir>/hf_token``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from localllm.model_registry.credentials import IN_FILE, IN_KEYRING, KEYRING_SERVICE, Credential

__all__ = [
    "IN_FILE",
    "IN_KEYRING",
    "KEYRING_SERVICE",
    "KEYRING_USER",
    "TOKEN_FILE_NAME",
    "delete_hf_token",
    "load_hf_token",
    "store_hf_token",
]

KEYRING_USER = "huggingface"
TOKEN_FILE_NAME = "hf_token"
_TOKEN = Credential(KEYRING_USER, TOKEN_FILE_NAME)


def load_hf_token(
    env_token: str | None, config_dir: Path | None = None, *, keyring_backend: Any = None
) -> str | None:
    """The token to use: ``env_token`` first, then the keyring, then the token file."""
    if env_token and env_token.strip():
        return env_token.strip()
    return _TOKEN.load(config_dir, keyring_backend=keyring_backend)


def store_hf_token(token: str, config_dir: Path, *, keyring_backend: Any = None) -> str:
    """Keep ``token`` for later pulls; returns where it went, in words for the user."""
    token = token.strip()
    if not token or not token.isascii() or not token.isprintable():
        raise ValueError("that does not look like a Hugging Face token (hf_...)")
    return _TOKEN.store(token, config_dir, keyring_backend=keyring_backend)


def delete_hf_token(config_dir: Path, *, keyring_backend: Any = None) -> bool:
    """Forget the stored token (keyring and file); False if there was none."""
    return _TOKEN.delete(config_dir, keyring_backend=keyring_backend)
