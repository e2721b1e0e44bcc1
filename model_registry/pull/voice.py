"""Pulling a Piper voice: the two files of one folder of a repository that holds many
(``rhasspy/piper-voices``: ``en/en_US/joe/medium/en_US-joe-medium.onnx`` and its
``.onnx.json``), named by a catalog entry's ``path``.

The ``.onnx`` is fetched as any LFS blob (resumable, checked by sha256), the small
``.onnx.json`` by its git blob id, and checked as a voice's before the large file is
downloaded; each is stored as a ``LayerType.VOICE`` layer under its own file name.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from localllm.model_registry.errors import ModelKindError, PullError
from localllm.model_registry.store import Layer, Store
from localllm.model_registry.voice import config_from_voice, read_voice_config, voice_files

__all__ = ["check_stored_voice_config", "voice_config", "voice_file_paths"]

_T = TypeVar("_T")


def voice_file_paths(repo: str, folder: str, paths: Iterable[str]) -> tuple[str, str]:
    """The repository paths of the voice in ``folder`` (its ``.onnx``, then its
    ``.onnx.json``), or a :class:`PullError` that says what the folder lacks."""
    inside = {posixpath.basename(path): path for path in paths if _parent(path) == folder}
    try:
        model, config = voice_files(inside, f"hf.co/{repo}/{folder}".rstrip("/"))
    except ModelKindError as error:
        raise PullError(str(error)) from None
    return inside[model], inside[config]


def check_stored_voice_config(store: Store, layers: Sequence[Layer], repo: str) -> None:
    """Check the ``.onnx.json`` once it is in the store (before the ``.onnx`` is fetched)."""
    for layer in layers:
        if str(layer.file_name).endswith(".onnx.json"):
            with store.blobs.path(layer.digest).open("rb") as stream:
                _checked(lambda: read_voice_config(stream, f"hf.co/{repo}"))


def voice_config(
    store: Store, layers: Sequence[Layer], source: Mapping[str, object], repo: str
) -> dict[str, object]:
    """The config blob of the pulled voice, from its stored ``.onnx.json``."""
    (config,) = [x for x in layers if str(x.file_name).endswith(".onnx.json")]
    with store.blobs.path(config.digest).open("rb") as stream:
        voice = _checked(lambda: read_voice_config(stream, f"hf.co/{repo}"))
    return config_from_voice(voice, source)


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def _checked(read: Callable[[], _T]) -> _T:
    """What ``read`` returns; a file that is not what a voice needs fails the pull."""
    try:
        return read()
    except ModelKindError as error:
        raise PullError(str(error)) from None
