"""The remotes file: ``remotes.json`` in the config directory, one entry per remote.

It holds names, URLs and settings, never a key (keys live in the keyring or the user-only key
files of ``keys``). Written atomically (temp file + ``os.replace``) with mode 0600.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from localllm.daemon.api.remotes import RemoteKind
from localllm.daemon.errors import BadRequestError

__all__ = ["RemoteConfig", "RemotesFile", "check_name", "check_url"]

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
_FILE = "remotes.json"


@dataclass(frozen=True, slots=True)
class RemoteConfig:
    name: str
    urls: tuple[str, ...]
    kind: RemoteKind = "openai"  # the API the engine speaks
    api_key_env: str | None = None
    has_stored_key: bool = False  # a key is in the keyring (or the key file)
    aliases: dict[str, str] = field(default_factory=dict)  # alias -> the remote's model id
    timeout_seconds: float = 600.0
    max_concurrency: int = 16

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RemoteConfig:  # JSON from the remotes file
        return cls(**{**data, "urls": tuple(data["urls"]), "aliases": dict(data["aliases"])})


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise BadRequestError(
            f"invalid remote name {name[:40]!r}: use 1 to 32 lowercase letters, digits, "
            "'-' and '_', starting with a letter or digit",
            param="name",
        )
    return name


def check_url(url: str) -> str:
    """An http(s) base URL without credentials, query or fragment; returned without a
    trailing slash (and without a trailing ``/v1``, which the daemon adds itself)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise BadRequestError(f"invalid remote URL {url[:80]!r}", param="urls") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadRequestError(
            f"invalid remote URL {url[:80]!r}: use http:// or https:// and a host", "urls"
        )
    if parts.username or parts.password:
        raise BadRequestError(
            "a remote URL must not hold credentials; pass the key with api_key or "
            "api_key_env instead",
            param="urls",
        )
    if parts.query or parts.fragment:
        raise BadRequestError("a remote URL takes no query or fragment", param="urls")
    del port  # read only to validate it
    path = parts.path.rstrip("/").removesuffix("/v1")
    return f"{parts.scheme}://{parts.netloc}{path}"


class RemotesFile:
    """Load and save the remotes list; a missing file is an empty list."""

    def __init__(self, config_dir: Path):
        self.path = Path(config_dir) / _FILE

    def load(self) -> list[RemoteConfig]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        return [RemoteConfig.from_json(entry) for entry in data.get("remotes", [])]

    def save(self, remotes: list[RemoteConfig]) -> None:
        text = json.dumps({"remotes": [asdict(r) for r in remotes]}, indent=2)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temp = self.path.with_name(f".{_FILE}.tmp-{os.getpid()}")
        temp.unlink(missing_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as stream:
                stream.write(text + "\n")
                stream.flush()
                os.fsync(stream.fileno())
            os.chmod(temp, 0o600)
            os.replace(temp, self.path)
        finally:
            temp.unlink(missing_ok=True)
