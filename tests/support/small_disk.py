"""A small file system of its own (tmpfs) for tests of a full disk: mounting needs root, as CI
has; elsewhere the test is skipped, saying why."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["small_disk"]


@contextmanager
def small_disk(folder: Path, size: str) -> Iterator[Path]:
    """``folder`` (made here) as a tmpfs of ``size`` (``"1m"``, ``"96m"``) while inside."""
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (run as root): {mounted.stderr.decode()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
