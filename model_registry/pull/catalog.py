"""The curated catalog: short names (``qwen:7b``) for popular Hugging Face GGUF models, for
Whisper speech-to-text models in CTranslate2 form (``whisper:base``), and for Piper voices
(``voice:joe``: a folder of ``rhasspy/piper-voices``, named by the entry's ``path``).

Short names are what people type; each entry maps one (plus aliases) onto a repository and a
quant, with what the desktop app shows before a download (kind, what the model can do beyond
plain chat, parameter size, approximate bytes). The built-in list ships as
``model_registry/catalog.json``; a caller may pass another file (the daemon passes
``LOCALLLM_CATALOG``), which replaces it.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal, cast, get_args

from localllm.model_registry.errors import PullError, RegistryError, UnknownModelError
from localllm.model_registry.names import ModelName, parse_name

__all__ = ["CAPABILITIES", "KINDS", "Catalog", "CatalogEntry", "CatalogKind"]

CatalogKind = Literal["chat", "embedding", "vision", "rerank", "transcription", "speech"]
KINDS: tuple[CatalogKind, ...] = get_args(CatalogKind)
# what a model can do beyond plain chat, in the words of ``show``'s capabilities
CAPABILITIES = ("vision", "tools", "thinking", "embedding", "rerank", "transcription", "speech")
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*")
_FOLDER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*(?:/[A-Za-z0-9][A-Za-z0-9_.-]*)*")
_HF_HINT = "or pull any GGUF model from Hugging Face as hf.co/<org>/<repo>[:quant]"


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    name: str
    repo: str
    quant: str
    kind: CatalogKind
    parameter_size: str
    size: int
    description: str
    aliases: tuple[str, ...] = ()
    capabilities: tuple[str, ...] = ()
    path: str = ""  # the folder of the repository that holds the model ("": its top)

    @property
    def hf_name(self) -> ModelName:
        """The ``hf.co/<repo>:<quant>`` name this entry stands for."""
        return parse_name(f"hf.co/{self.repo}:{self.quant}")

    @property
    def names(self) -> tuple[ModelName, ...]:
        return tuple(parse_name(text) for text in (self.name, *self.aliases))

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "aliases": list(self.aliases),
            "repo": self.repo,
            "quant": self.quant,
            "kind": self.kind,
            "capabilities": list(self.capabilities),
            "parameter_size": self.parameter_size,
            "size": self.size,
            "description": self.description,
            "path": self.path,
        }


class Catalog:
    """An immutable set of entries, looked up by any of their names."""

    def __init__(self, entries: list[CatalogEntry], source: str = "the built-in catalog"):
        self._entries = tuple(entries)
        self._by_name: dict[ModelName, CatalogEntry] = {}
        for entry in self._entries:
            for name in entry.names:
                if name in self._by_name:
                    raise PullError(f"{source}: {name.display!r} is listed twice")
                self._by_name[name] = entry

    @classmethod
    def load(cls, path: Path | None = None) -> Catalog:
        """The catalog at ``path``, or the built-in one when ``path`` is None."""
        if path is None:
            raw = resources.files("localllm.model_registry").joinpath("catalog.json").read_bytes()
            return cls.from_json(raw, "the built-in catalog")
        source = f"catalog file {Path(path).name!r}"
        try:
            raw = Path(path).read_bytes()
        except OSError as error:
            raise PullError(f"cannot read {source}: {error.strerror}") from None
        return cls.from_json(raw, source)

    @classmethod
    def from_json(cls, raw: bytes, source: str = "catalog") -> Catalog:
        try:
            document = json.loads(raw)
            models = document["models"]
            return cls([_entry(item) for item in models], source)
        except (ValueError, KeyError, TypeError, RegistryError) as error:
            raise PullError(f"{source} is invalid: {error}") from None

    def __iter__(self) -> Iterator[CatalogEntry]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, name: ModelName | str) -> CatalogEntry | None:
        return self._by_name.get(name if isinstance(name, ModelName) else parse_name(name))

    def lookup(self, name: ModelName | str) -> CatalogEntry:
        """The entry for a short name; :class:`UnknownModelError` suggests close names."""
        name = name if isinstance(name, ModelName) else parse_name(name)
        entry = self._by_name.get(name)
        if entry is not None:
            return entry
        raise UnknownModelError(f"unknown model {name.display!r}; {self._suggest(name)}")

    def _suggest(self, name: ModelName) -> str:
        known = [known.display for known in self._by_name]
        close = difflib.get_close_matches(name.display, known, n=4, cutoff=0.5)
        same_model = [text for text in known if text.split(":")[0] == name.model]
        suggestions = list(dict.fromkeys([*close, *same_model]))[:5]
        if not suggestions:
            return f"see `localllm catalog` for the short names, {_HF_HINT}"
        return f"did you mean {', '.join(suggestions)}? ({_HF_HINT})"


def _entry(item: dict[str, object]) -> CatalogEntry:
    entry = CatalogEntry(
        name=_text(item, "name"),
        repo=_text(item, "repo"),
        quant=_text(item, "quant"),
        kind=cast(CatalogKind, _text(item, "kind")),  # checked below
        parameter_size=_text(item, "parameter_size"),
        size=int(cast("int | float | str", item.get("size", 0))),
        description=_text(item, "description"),
        aliases=tuple(str(alias) for alias in _items(item, "aliases")),
        capabilities=tuple(str(c) for c in _items(item, "capabilities")),
        path=str(item.get("path") or ""),
    )
    if not _REPO.fullmatch(entry.repo):
        raise ValueError(f"{entry.name}: repo must be <org>/<name>, not {entry.repo!r}")
    if entry.path and (not _FOLDER.fullmatch(entry.path) or ".." in entry.path.split("/")):
        raise ValueError(f"{entry.name}: path must be a folder like en/en_US/joe/medium")
    if entry.kind not in KINDS:
        raise ValueError(f"{entry.name}: kind must be one of {', '.join(KINDS)}")
    unknown = sorted(set(entry.capabilities) - set(CAPABILITIES))
    if unknown:
        raise ValueError(
            f"{entry.name}: capabilities are among {', '.join(CAPABILITIES)}, not {unknown[0]!r}"
        )
    if any(not name.is_catalog for name in entry.names):
        raise ValueError(f"{entry.name}: catalog names are short names like qwen:7b")
    entry.hf_name  # noqa: B018 - validates the quant as a tag
    return entry


def _items(item: dict[str, object], key: str) -> Iterable[object]:
    """A list field of a catalog entry (an empty one when it is left out)."""
    return cast("Iterable[object]", item.get(key, ()))


def _text(item: dict[str, object], key: str) -> str:
    value = item[key]
    if not isinstance(value, str) or not value:
        raise ValueError(f"{key} must be a non-empty string")
    return value
