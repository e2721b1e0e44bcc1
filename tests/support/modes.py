"""File permission helpers for tests of what only the user may read."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = ["mode_of", "umask"]


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    """Run with this umask (0: nothing masked, so only explicit modes keep files private);
    child processes started meanwhile inherit it."""
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)
