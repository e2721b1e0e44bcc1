"""The names a model's files keep inside the store: plain file names, never paths.

A transcription model (Whisper in CTranslate2 form) is a folder of files that its runner
finds by name, so each of its layers keeps the file's name. That name later becomes a path
under the store (:meth:`Store.model_folder`), so it is checked like a digest: one of the
names such models use, or a short plain name that no file system reads as anything else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from localllm.model_registry.errors import CorruptManifestError

__all__ = ["KNOWN_FILE_NAMES", "check_file_name", "check_unique_file_names"]

#: The files of a CTranslate2 Whisper model (what faster-whisper downloads).
KNOWN_FILE_NAMES = frozenset(
    {
        "model.bin",
        "config.json",
        "tokenizer.json",
        "vocabulary.txt",
        "vocabulary.json",
        "preprocessor_config.json",
    }
)
# Starts and ends with a letter or digit (never ".", "..", a hidden or temp name, or a name
# Windows trims), at most 128 characters, no separators of any platform.
_SAFE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9])?")
_WINDOWS_DEVICES = re.compile(r"(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?", re.IGNORECASE)


def check_file_name(name: object) -> str:
    """``name`` when it is a plain file name a model folder may hold; else
    :class:`CorruptManifestError` (a manifest that names it is not to be trusted)."""
    if not isinstance(name, str):
        raise CorruptManifestError("a model file's name is missing")
    if name in KNOWN_FILE_NAMES:
        return name
    if not _SAFE.fullmatch(name) or _WINDOWS_DEVICES.fullmatch(name):
        raise CorruptManifestError(f"a model file's name is not a plain file name: {name[:80]!r}")
    return name


def check_unique_file_names(names: Iterable[str]) -> None:
    """No two files of one folder share a name, also where case is ignored (macOS, Windows)."""
    seen: set[str] = set()
    for name in names:
        if name.lower() in seen:
            raise CorruptManifestError(f"a model names the file {name!r} twice")
        seen.add(name.lower())
