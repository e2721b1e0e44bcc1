"""Walking a folder the user named for ``.gguf`` files, within fixed bounds.

Directory symlinks are never followed. A file symlink is followed only when the caller's
``allow`` accepts where it leads (Hugging Face's snapshot links into its own blobs; a link that
stays inside the scanned root); one that leads anywhere else is skipped. The walk stops at a
depth, a number of entries and a deadline, and says when it stopped early.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Budget", "ScanLimits", "inside", "walk_ggufs"]

AllowLink = Callable[[Path], bool]  # is this resolved target acceptable?


@dataclass(frozen=True, slots=True)
class ScanLimits:
    max_depth: int = 8
    max_entries: int = 50_000  # directory entries looked at, over all roots
    max_files: int = 1_000  # .gguf files read, over all roots
    seconds: float = 15.0


@dataclass(slots=True)
class Budget:
    """What is left of :class:`ScanLimits` while one scan runs."""

    limits: ScanLimits = field(default_factory=ScanLimits)
    entries: int = 0
    files: int = 0
    started: float = field(default_factory=time.monotonic)
    truncated: bool = False

    def spend_entry(self) -> bool:
        self.entries += 1
        over = self.entries > self.limits.max_entries
        over = over or time.monotonic() - self.started > self.limits.seconds
        self.truncated = self.truncated or over
        return not over

    def spend_file(self) -> bool:
        self.files += 1
        over = self.files > self.limits.max_files
        self.truncated = self.truncated or over
        return not over


def inside(path: Path, directory: Path) -> bool:
    try:
        return path.is_relative_to(directory.resolve())
    except OSError:
        return False


def walk_ggufs(root: Path, budget: Budget, allow: AllowLink | None = None) -> Iterator[Path]:
    """``.gguf`` files under ``root`` as found (a followed link keeps its own name)."""
    allow = allow or (lambda target: inside(target, root))
    yield from _walk(root, 0, budget, allow)


def _walk(directory: Path, depth: int, budget: Budget, allow: AllowLink) -> Iterator[Path]:
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if not budget.spend_entry():
            return
        path = Path(entry.path)
        try:
            if entry.is_dir(follow_symlinks=False):
                if depth + 1 < budget.limits.max_depth:
                    yield from _walk(path, depth + 1, budget, allow)
                elif not entry.name.startswith("."):
                    budget.truncated = True
                continue
            if not entry.name.lower().endswith(".gguf"):
                continue
            if entry.is_symlink():
                target = path.resolve(strict=True)  # a loop raises; skipped below
                if not (allow(target) and target.is_file()):
                    continue
            elif not entry.is_file(follow_symlinks=False):
                continue
        except (OSError, RuntimeError):
            continue
        yield path
