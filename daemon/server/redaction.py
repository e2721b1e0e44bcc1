"""Error texts and the daemon's log leave the daemon without file-system paths.

A failed load quotes the runner's last log lines, and llama.cpp names the files it read: blob
paths under the user's home (the user name, the store's layout). Tracebacks in the log name
every source file. ``PathRedactor`` first replaces the directories the daemon knows whole
(``<models>/blobs/sha256-1f``, ``~/x.gguf``), so a name with a space ("/home/Ann Smith") is
never cut in the middle; any other absolute path is then cut to its last part. The log file
itself keeps every path for whoever runs the daemon.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from localllm.daemon.settings import Settings

__all__ = ["PathRedactor", "redact_paths"]

# The directories of an absolute path: "/home/ann/.localllm/blobs/" in ".../blobs/sha256-1f".
# Not after a word character, a dot, "~", ":", "/" or ">" (so URLs, relative names and the
# known directories' labels stay whole), and not our own routes ("/api/...", "/v1/...", as
# the request log names them).
_POSIX_DIRS = re.compile(r"(?<![\w.~:/>-])/(?!(?:api|v1)/)(?:[^\s/'\"]+/)+")
_WINDOWS_DIRS = re.compile(r"(?<![\w])[A-Za-z]:[\\/](?:[^\s\\/'\"]+[\\/])+")
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def redact_paths(text: str) -> str:
    """``text`` with each absolute path cut to its last part."""
    return _WINDOWS_DIRS.sub("", _POSIX_DIRS.sub("", text))


@dataclass(frozen=True, slots=True)
class PathRedactor:
    """Known directories by name first (the longest first), then any other path cut."""

    known: tuple[tuple[re.Pattern[str], str], ...] = ()

    @classmethod
    def for_settings(cls, settings: Settings, home: Path | None = None) -> PathRedactor:
        """The store, data, log and config directories of ``settings``, and the home."""
        return cls.of(
            (
                (settings.models_dir, "<models>"),
                (settings.data_dir, "<data>"),
                (settings.log_dir, "<logs>"),
                (settings.config_dir, "<config>"),
                (home if home is not None else Path.home(), "~"),
            )
        )

    @classmethod
    def of(cls, directories: Iterable[tuple[Path, str]]) -> PathRedactor:
        spellings = {
            spelling: label
            for directory, label in directories
            for spelling in _spellings(directory)
        }
        ordered = sorted(spellings.items(), key=lambda item: len(item[0]), reverse=True)
        return cls(tuple((_prefix_pattern(spelling), label) for spelling, label in ordered))

    def __call__(self, text: str) -> str:
        for pattern, label in self.known:
            text = pattern.sub(_literal(label), text)
        return redact_paths(text)


def _literal(label: str) -> Callable[[re.Match[str]], str]:
    """A replacement that puts ``label`` in as it is (a replacement string reads escapes)."""
    return lambda _match: label


def _spellings(directory: Path) -> set[str]:
    """How ``directory`` may be written: as given, resolved (symlinks), with "/" on Windows.
    The root, or a relative or one-part path, is no directory worth naming."""
    spellings = set()
    for text in (str(directory), os.path.realpath(directory)):
        text = text.rstrip("\\/")
        if len(Path(text).parts) >= 2 and Path(text).is_absolute():
            spellings |= {text, text.replace("\\", "/")}
    return spellings


def _prefix_pattern(spelling: str) -> re.Pattern[str]:
    """``spelling`` as a whole path prefix: not inside a longer name on either side."""
    flags = re.IGNORECASE if _DRIVE.match(spelling) else 0
    return re.compile(rf"(?<![\w.~/\\-]){re.escape(spelling)}(?![\w.-])", flags)
