"""Model names: ``[host/][namespace/]model[:tag]``.

Parsing happens in three steps, as in Ollama: split the text into parts, validate each part
against its own charset and length, then fill in defaults. Validation is what keeps a name from
ever naming a path outside the store, so every part is plain ASCII, starts with a letter, digit
or ``_``, is never ``.``/``..``, never ends in ``.`` and is never a Windows device name.

Names are case-insensitive: the canonical form is lower-case, so a model cannot exist twice on
a case-insensitive file system (macOS, Windows).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from localllm.model_registry.errors import InvalidNameError

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_NAMESPACE",
    "DEFAULT_TAG",
    "HUGGING_FACE_HOST",
    "ModelName",
    "parse_name",
]

DEFAULT_HOST = "localllm"
DEFAULT_NAMESPACE = "library"
DEFAULT_TAG = "latest"
HUGGING_FACE_HOST = "hf.co"
_HOST_ALIASES = {"huggingface.co": HUGGING_FACE_HOST, "www.huggingface.co": HUGGING_FACE_HOST}

_PART_RULES: dict[str, tuple[re.Pattern[str], int]] = {
    "host": (re.compile(r"[a-z0-9_][a-z0-9_.-]*"), 253),
    "namespace": (re.compile(r"[a-z0-9_][a-z0-9_.-]*"), 96),
    "model": (re.compile(r"[a-z0-9_][a-z0-9_.-]*"), 96),
    "tag": (re.compile(r"[a-z0-9_][a-z0-9_.-]*"), 128),
}
_WINDOWS_RESERVED = re.compile(r"(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)")


@dataclass(frozen=True, slots=True, order=True)
class ModelName:
    """A validated, fully qualified model name. Build one with :func:`parse_name`."""

    host: str
    namespace: str
    model: str
    tag: str

    def __post_init__(self) -> None:
        for part in ("host", "namespace", "model", "tag"):
            _validate_part(part, getattr(self, part))

    @property
    def is_hugging_face(self) -> bool:
        return self.host == HUGGING_FACE_HOST

    @property
    def is_catalog(self) -> bool:
        """A bare short name (``qwen:7b``) that the curated catalog resolves."""
        return self.host == DEFAULT_HOST and self.namespace == DEFAULT_NAMESPACE

    @property
    def path_parts(self) -> tuple[str, str, str, str]:
        """The four validated path components of this name's manifest."""
        return (self.host, self.namespace, self.model, self.tag)

    @property
    def full(self) -> str:
        return f"{self.host}/{self.namespace}/{self.model}:{self.tag}"

    @property
    def display(self) -> str:
        """The shortest form that parses back to this name (default parts dropped)."""
        text = self.model
        if self.namespace != DEFAULT_NAMESPACE or self.host != DEFAULT_HOST:
            text = f"{self.namespace}/{text}"
        if self.host != DEFAULT_HOST:
            text = f"{self.host}/{text}"
        if self.tag != DEFAULT_TAG:
            text = f"{text}:{self.tag}"
        return text

    def __str__(self) -> str:
        return self.display


def parse_name(text: object) -> ModelName:
    """Parse, validate and complete a user-supplied model name."""
    if not isinstance(text, str):
        raise InvalidNameError("a model name must be a string")
    if len(text) > 600:
        raise InvalidNameError("model name is too long")
    if not text.isascii() or not text.isprintable():
        raise InvalidNameError(
            f"invalid model name {text!r}: only ASCII letters, digits, '_', '.', '-', "
            "'/' and ':' are allowed"
        )
    host, namespace, model, tag = _split(text.strip().lower())
    return ModelName(
        host=_HOST_ALIASES.get(host, host) if host else DEFAULT_HOST,
        namespace=namespace or DEFAULT_NAMESPACE,
        model=model,
        tag=tag or DEFAULT_TAG,
    )


def _split(text: str) -> tuple[str | None, str | None, str, str | None]:
    if not text:
        raise InvalidNameError("model name is empty")
    path, sep, tag = text.rpartition(":") if ":" in text.rsplit("/", 1)[-1] else (text, "", "")
    if sep and not tag:
        raise InvalidNameError(f"invalid model name {text!r}: empty tag after ':'")
    parts = path.split("/")
    if len(parts) > 3:
        raise InvalidNameError(
            f"invalid model name {text!r}: expected [host/][namespace/]model[:tag]"
        )
    if any(part == "" for part in parts):
        raise InvalidNameError(f"invalid model name {text!r}: empty part")
    host = parts[0] if len(parts) == 3 else None
    namespace = parts[-2] if len(parts) >= 2 else None
    if host is None and namespace in _HOST_ALIASES.values() | _HOST_ALIASES.keys():
        raise InvalidNameError(
            f"invalid model name {text!r}: Hugging Face models are named hf.co/<org>/<repo>[:quant]"
        )
    return host, namespace, parts[-1], (tag or None)


def _validate_part(kind: str, value: str) -> None:
    pattern, max_length = _PART_RULES[kind]
    if not isinstance(value, str) or not value:
        raise InvalidNameError(f"model name {kind} is empty")
    if len(value) > max_length:
        raise InvalidNameError(f"model name {kind} is longer than {max_length} characters")
    if not pattern.fullmatch(value):
        raise InvalidNameError(
            f"invalid model name {kind} {value!r}: it must start with a letter, digit or '_' "
            "and contain only letters, digits, '_', '.' and '-'"
        )
    if value.endswith(".") or ".." in value:
        raise InvalidNameError(f"invalid model name {kind} {value!r}: misplaced '.'")
    if _WINDOWS_RESERVED.fullmatch(value.split(".", 1)[0]):
        raise InvalidNameError(f"invalid model name {kind} {value!r}: reserved device name")
