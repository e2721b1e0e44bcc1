"""Pulling a Whisper model in CTranslate2 form (``Systran/faster-whisper-base``): a repository
with ``model.bin``, ``config.json``, ``tokenizer.json`` and a vocabulary, and no GGUF.

Every file the model needs is fetched (LFS files as any blob: resumable, checked by sha256;
git files by their git id) and stored as one layer per file under its own name. The small
``config.json`` comes first and is checked before the large ``model.bin`` is downloaded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from localllm.model_registry.errors import ModelKindError, PullError
from localllm.model_registry.store import Layer, Store
from localllm.model_registry.transcription import (
    check_whisper_bin,
    config_from_whisper,
    looks_like_ct2,
    read_model_bin,
    read_whisper_config,
    whisper_files,
)

__all__ = ["check_stored_config", "ct2_config", "ct2_file_names", "is_ct2_repo"]

_T = TypeVar("_T")


def is_ct2_repo(names: Iterable[str]) -> bool:
    """A CTranslate2 model's repository (a GGUF beside it makes it a GGUF repository)."""
    names = list(names)
    return looks_like_ct2(names) and not any(name.lower().endswith(".gguf") for name in names)


def ct2_file_names(repo: str, names: Iterable[str]) -> tuple[str, ...]:
    """The files to fetch (at the repository's top), or a :class:`PullError` naming what a
    Whisper model needs and the repository lacks."""
    try:
        return whisper_files(names, f"hf.co/{repo}")
    except ModelKindError as error:
        raise PullError(str(error)) from None


def check_stored_config(store: Store, layers: Sequence[Layer], repo: str) -> None:
    """Check ``config.json`` once it is in the store (before the large files are fetched)."""
    for layer in layers:
        if layer.file_name == "config.json":
            with store.blobs.path(layer.digest).open("rb") as stream:
                _checked(lambda: read_whisper_config(stream, f"hf.co/{repo}"))


def ct2_config(
    store: Store, layers: Sequence[Layer], source: Mapping[str, object], repo: str
) -> dict[str, object]:
    """The config blob of the pulled model, from its stored ``config.json`` and the header
    of its ``model.bin``."""
    by_name = {layer.file_name: layer for layer in layers}
    where = f"hf.co/{repo}"
    with store.blobs.path(by_name["config.json"].digest).open("rb") as stream:
        whisper = _checked(lambda: read_whisper_config(stream, where))
    with store.blobs.path(by_name["model.bin"].digest).open("rb") as stream:
        weights = _checked(lambda: check_whisper_bin(read_model_bin(stream), where))
    return config_from_whisper(whisper, weights, source)


def _checked(read: Callable[[], _T]) -> _T:
    """What ``read`` returns; a file that is not what a Whisper model needs fails the pull."""
    try:
        return read()
    except ModelKindError as error:
        raise PullError(str(error)) from None
