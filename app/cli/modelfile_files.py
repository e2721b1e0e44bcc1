"""The local files a Modelfile names, sent to the daemon as blobs before ``create``.

The daemon never opens a path a client names (that is how Ollama's ``/api/create`` leaked
which files exist). Instead the CLI finds the files ``FROM`` and ``ADAPTER`` point at,
relative to the Modelfile's folder, hashes each one while streaming it, uploads the blobs the
daemon does not have yet, and passes ``{reference as written: digest}`` to ``create``.

Before anything is hashed or sent, every ``ADAPTER`` file is checked to be a LoRA adapter GGUF
for the base model's architecture (the daemon checks again), so a stray file such as a private
key is refused here and never leaves the machine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from localllm.app.cli.errors import CliError
from localllm.app.cli.progress import ProgressBoard
from localllm.daemon.api import ProgressResponse
from localllm.daemon.client import DaemonClient
from localllm.model_registry.adapters import model_architecture, read_lora_adapter, shown_name
from localllm.model_registry.modelfile import Modelfile, from_is_path, parse_modelfile

__all__ = [
    "ReferencedFile",
    "check_adapters",
    "referenced_files",
    "sha256_file",
    "upload_referenced",
]

_CHUNK = 1 << 20


@dataclass(frozen=True)
class ReferencedFile:
    reference: str  # exactly as written after FROM or ADAPTER
    path: Path
    instruction: str = "FROM"  # or "ADAPTER"
    outside: bool = False  # the file (symlinks followed) is not under the Modelfile's folder

    @property
    def size(self) -> int:
        return self.path.stat().st_size

    @property
    def name(self) -> str:
        return shown_name(self.reference)


def referenced_files(modelfile_text: str, base_dir: Path) -> list[ReferencedFile]:
    """Each distinct file the Modelfile names, resolved against ``base_dir``."""
    modelfile = _parse(modelfile_text)
    found: dict[str, ReferencedFile] = {}
    named = [("FROM", modelfile.from_)] + [("ADAPTER", a.reference) for a in modelfile.adapters]
    named += [("DRAFT", modelfile.draft)] if modelfile.draft else []
    for instruction, reference in named:
        if reference in found or not from_is_path(reference):
            continue
        path = _resolve(reference, base_dir)
        if path.is_dir():
            raise CliError(f"{reference} is a folder; point {instruction} at a .gguf file in it")
        if not path.is_file():
            raise CliError(f"{reference} does not exist (paths are relative to the Modelfile)")
        outside = not path.resolve().is_relative_to(base_dir.resolve())
        found[reference] = ReferencedFile(reference, path, instruction, outside)
    return list(found.values())


def check_adapters(
    modelfile_text: str,
    files: list[ReferencedFile],
    architecture_of: Callable[[str], str | None],
) -> None:
    """Refuse, before any upload, an ``ADAPTER`` file that is not a LoRA adapter GGUF for the
    base model; ``architecture_of(name)`` asks the daemon about a ``FROM`` model in the store."""
    modelfile = _parse(modelfile_text)
    adapters = [file for file in files if file.instruction == "ADAPTER"]
    if not adapters:
        return
    architecture = _base_architecture(modelfile, files, architecture_of)
    for file in adapters:
        try:
            read_lora_adapter(file.path, architecture, file.name)
        except ValueError as error:  # a GGUFError
            raise CliError(f"ADAPTER {error}") from None


def _base_architecture(
    modelfile: Modelfile,
    files: list[ReferencedFile],
    architecture_of: Callable[[str], str | None],
) -> str | None:
    """The FROM model's architecture, or None when it cannot be told here (the daemon will)."""
    base = next((f for f in files if f.reference == modelfile.from_), None)
    return architecture_of(modelfile.from_) if base is None else model_architecture(base.path)


def _parse(modelfile_text: str) -> Modelfile:
    try:
        return parse_modelfile(modelfile_text)
    except ValueError as error:
        raise CliError(str(error)) from None


def _resolve(reference: str, base_dir: Path) -> Path:
    path = Path(reference.replace("\\", "/") if "\\" in reference else reference).expanduser()
    return path if path.is_absolute() else (base_dir / path).resolve()


def sha256_file(path: Path, on_progress: Callable[[int], None] | None = None) -> str:
    """``sha256:<hex>`` of the file, read in chunks (a 40 GB model never sits in memory)."""
    digest = hashlib.sha256()
    done = 0
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if on_progress is not None:
                on_progress(done)
    return f"sha256:{digest.hexdigest()}"


def upload_referenced(
    client: DaemonClient, files: list[ReferencedFile], board: ProgressBoard
) -> dict[str, str]:
    """Hash and, where the daemon lacks it, upload each file; returns ``{reference: digest}``."""
    digests: dict[str, str] = {}
    for file in files:
        size, name = file.size, file.path.name
        hashed = _reporter(board, f"hashing {name}", size)
        hashed(0)
        digest = sha256_file(file.path, hashed)
        if not client.blob_exists(digest):
            copied = _reporter(board, f"copying {name}", size)
            copied(0)
            client.upload_blob(file.path, digest, on_progress=copied)
            copied(size)
        digests[file.reference] = digest
    return digests


def _reporter(board: ProgressBoard, status: str, total: int) -> Callable[..., None]:
    """A progress callback for one step; extra arguments (an upload's total) are ignored."""

    def report(done: int, *_: object) -> None:
        board.update(ProgressResponse(status=status, total=total, completed=done))

    return report
