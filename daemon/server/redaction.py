"""Error texts leave the daemon without file-system paths.

A failed load quotes the runner's last log lines, and llama.cpp names the files it read: blob
paths under the user's home (the user name, the store's layout). Clients get the file name; the
daemon's own log keeps the whole path for whoever runs it.
"""

from __future__ import annotations

import re

__all__ = ["redact_paths"]

# The directories of an absolute path: "/home/ann/.localllm/blobs/" in ".../blobs/sha256-1f".
# Not after a word character, a dot, "~", ":" or "/" (so URLs and relative names stay whole).
_POSIX_DIRS = re.compile(r"(?<![\w.~:/-])/(?:[^\s/'\"]+/)+")
_WINDOWS_DIRS = re.compile(r"(?<![\w])[A-Za-z]:[\\/](?:[^\s\\/'\"]+[\\/])+")


def redact_paths(text: str) -> str:
    """``text`` with each absolute path cut to its last part."""
    return _WINDOWS_DIRS.sub("", _POSIX_DIRS.sub("", text))
