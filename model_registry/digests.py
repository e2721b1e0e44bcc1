"""Content digests: the only way a string becomes part of a blob path.

A digest is accepted in exactly two spellings, ``sha256:<64 lowercase hex>`` (wire form) and
``sha256-<64 lowercase hex>`` (file-name form, since Windows forbids ``:``). Anything else,
upper-case hex included, is rejected before it can reach the file system (CVE-2024-37032).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Protocol

from localllm.model_registry.errors import InvalidDigestError

__all__ = ["Digest", "Readable", "sha256_of_bytes", "sha256_of_file"]

_DIGEST = re.compile(r"sha256[:-]([0-9a-f]{64})")
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Digest:
    """A validated sha256 digest; construct with :meth:`parse` or :meth:`from_hex`."""

    hex: str

    def __post_init__(self) -> None:
        if not isinstance(self.hex, str) or not re.fullmatch(r"[0-9a-f]{64}", self.hex):
            raise InvalidDigestError("a digest must be 64 lowercase hexadecimal characters")

    @classmethod
    def parse(cls, text: object) -> Digest:
        if isinstance(text, Digest):
            return text
        match = _DIGEST.fullmatch(text) if isinstance(text, str) else None
        if match is None:
            shown = repr(text)[:80]
            raise InvalidDigestError(f"invalid digest {shown}: expected sha256:<64 hex digits>")
        return cls(match.group(1))

    @classmethod
    def from_hex(cls, hex_digest: str) -> Digest:
        return cls(hex_digest)

    @property
    def wire(self) -> str:
        """The ``sha256:<hex>`` form used in manifests and APIs."""
        return f"sha256:{self.hex}"

    @property
    def filename(self) -> str:
        """The ``sha256-<hex>`` form used as a blob's file name."""
        return f"sha256-{self.hex}"

    @property
    def short(self) -> str:
        return self.hex[:12]

    def __str__(self) -> str:
        return self.wire


def sha256_of_bytes(data: bytes) -> Digest:
    return Digest(hashlib.sha256(data).hexdigest())


class Readable(Protocol):
    """A binary stream that :func:`sha256_of_file` reads: a file, or one that counts."""

    def read(self, size: int = -1, /) -> bytes: ...


def sha256_of_file(stream: Readable) -> Digest:
    """Hash a file object from its current position to the end, in bounded memory."""
    hasher = hashlib.sha256()
    while chunk := stream.read(_CHUNK):
        hasher.update(chunk)
    return Digest(hasher.hexdigest())
