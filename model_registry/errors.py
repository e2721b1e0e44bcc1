"""Errors raised by the model registry.

Every failure a caller can act on has its own class, so the daemon can translate it to HTTP in
one table and front ends can say what to do next. Messages never contain absolute paths.

RegistryError
├── InvalidNameError        a model name that does not fit the grammar
├── InvalidDigestError      a digest that is not ``sha256:<64 hex>``
├── InvalidRepoError        a hub repository id that is not ``org/name``
├── ModelNotFoundError      no manifest for that name
├── ModelExistsError        a copy/create target that already exists (when not overwriting)
├── BlobNotFoundError       a manifest refers to a blob the store does not hold
├── DigestMismatchError     content did not hash to the digest it claimed
├── CorruptManifestError    a manifest that is not valid JSON of our schema
├── GGUFError               a file that is not a readable, sane GGUF
├── ModelfileError          a Modelfile line that cannot be parsed (with its line number)
├── InvalidParameterError   a model parameter of the wrong type or outside its range
├── InsufficientSpaceError  not enough free disk for a write
├── NotLinkableError        a file that cannot be linked into the store (a copy is needed)
├── ModelKindError          a folder or model of another kind than asked for (not a
│                           CTranslate2 Whisper model; a transcription model asked to generate)
├── StoreLockTimeout        another process held the store lock for too long
└── PullError               a pull that cannot go on (the store is left as it was)
    ├── UnknownModelError       no catalog entry or hub repository by that name
    ├── QuantNotFoundError      the repository has no file for the asked quantization
    ├── AuthenticationError     the hub refused us (401/403): a token or accepted terms needed
    └── DownloadError           the network failed; pulling again resumes where it stopped
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "BlobNotFoundError",
    "CorruptManifestError",
    "DigestMismatchError",
    "DownloadError",
    "GGUFError",
    "InsufficientSpaceError",
    "InvalidDigestError",
    "InvalidNameError",
    "InvalidParameterError",
    "InvalidRepoError",
    "ModelExistsError",
    "ModelKindError",
    "ModelNotFoundError",
    "ModelfileError",
    "NotLinkableError",
    "PullError",
    "QuantNotFoundError",
    "RegistryError",
    "StoreLockTimeout",
    "UnknownModelError",
]


class RegistryError(Exception):
    """Base of every error the registry raises on purpose."""


class InvalidNameError(RegistryError, ValueError):
    pass


class InvalidDigestError(RegistryError, ValueError):
    pass


class InvalidRepoError(RegistryError, ValueError):
    pass


class ModelNotFoundError(RegistryError, LookupError):
    pass


class ModelExistsError(RegistryError):
    pass


class BlobNotFoundError(RegistryError, LookupError):
    pass


class DigestMismatchError(RegistryError):
    pass


class CorruptManifestError(RegistryError):
    pass


class GGUFError(RegistryError, ValueError):
    pass


class ModelfileError(RegistryError, ValueError):
    def __init__(self, message: str, line: int | None = None):
        self.line = line
        super().__init__(f"Modelfile line {line}: {message}" if line else message)


class InvalidParameterError(RegistryError, ValueError):
    """The message names the parameter and what it accepts; ``name`` is the parameter."""

    def __init__(self, name: str, message: str):
        self.name = name
        super().__init__(message)


class InsufficientSpaceError(RegistryError, OSError):
    def __init__(self, needed: int, available: int, what: str = "this"):
        self.needed = needed
        self.available = available
        super().__init__(
            f"not enough disk space for {what}: {needed:,} bytes needed, "
            f"{available:,} available; free some space (e.g. `localllm prune`) and try again"
        )


class NotLinkableError(RegistryError):
    """A file asked to be added without copying sits where no link or clone can be made."""


class ModelKindError(RegistryError, ValueError):
    """A folder that is not the model it was taken for (the message says what is missing), or
    a model used for what its kind cannot do (a transcription model has no GGUF to load)."""


class StoreLockTimeout(RegistryError, TimeoutError):
    pass


class PullError(RegistryError):
    """Base of the errors that stop a pull; partial downloads are kept unless said otherwise."""


class UnknownModelError(PullError, LookupError):
    pass


class QuantNotFoundError(PullError, LookupError):
    def __init__(self, message: str, available: tuple[str, ...] = ()):
        self.available = available
        super().__init__(message)


class AuthenticationError(PullError, PermissionError):
    pass


class DownloadError(PullError, ConnectionError):
    pass
