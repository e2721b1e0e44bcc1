"""Models already on this computer, as the Models page shows them (Qt-free).

Each row says where the file came from and what adding it costs: a link takes no space, a
copy takes its size, which the page asks about before copying.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from localllm.app.gui.state.records import PullProgress
from localllm.app.gui.state.units import bytes_text
from localllm.daemon.api.local_models import ImportProgress, LocalModelOut

__all__ = ["FoundModel", "ImportStep", "as_pull_progress", "found_model", "import_step"]

_SOURCES = {
    "huggingface": "Hugging Face cache",
    "lmstudio": "LM Studio",
    "ollama": "Ollama",
    "folder": "your folder",
    "file": "a file",
}


@dataclass(frozen=True, slots=True)
class FoundModel:
    name: str
    source: str
    path: str
    size: int
    quantization: str
    parameter_size: str
    in_store: bool
    linkable: bool

    @property
    def source_text(self) -> str:
        return _SOURCES.get(self.source, self.source)

    @property
    def size_text(self) -> str:
        return bytes_text(self.size)

    @property
    def how_text(self) -> str:
        """What adding it does: "already added", "link: no copy", "copy 4.7 GB"."""
        if self.in_store:
            return "already added"
        return "link: no copy" if self.linkable else f"copy {self.size_text}"

    @property
    def button_text(self) -> str:
        if self.in_store:
            return "Added"
        return "Add" if self.linkable else "Copy…"


@dataclass(frozen=True, slots=True)
class ImportStep:
    text: str  # for the status line
    fraction: float | None  # of the current file, when known
    model: str = ""  # set on the last step: the model's name
    linked: bool = False  # the last step: nothing was copied


def found_model(item: LocalModelOut) -> FoundModel:
    return FoundModel(
        name=item.name,
        source=item.source,
        path=item.path,
        size=item.size,
        quantization=item.quantization,
        parameter_size=item.parameter_size,
        in_store=item.in_store,
        linkable=item.linkable,
    )


def import_step(chunk: ImportProgress) -> ImportStep:
    if chunk.status == "success":
        copied = chunk.copied_bytes or 0
        how = f"{bytes_text(copied)} copied" if copied else "linked, no copy"
        return ImportStep(f"Added {chunk.model} ({how})", 1.0, chunk.model or "", not copied)
    if chunk.status == "added":
        return ImportStep(f"{chunk.placement} {chunk.file}", 1.0)
    fraction = (
        chunk.completed / chunk.total if chunk.total and chunk.completed is not None else None
    )
    return ImportStep(chunk.status, fraction)


def as_pull_progress(name: str) -> Callable[[ImportProgress], PullProgress]:
    """An import's steps as the Downloads page follows a pull: one bar summed over files."""

    def convert(chunk: ImportProgress) -> PullProgress:
        total = chunk.total or 0 if chunk.file else 0  # the first line's total is the sum
        done = total if chunk.status == "added" else chunk.completed or 0
        return PullProgress(name, chunk.status, chunk.file or "", total, done)

    return convert
