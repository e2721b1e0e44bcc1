"""The most memory a process has held (Linux's ``VmHWM``), to hold an estimate to it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

__all__ = ["peak_resident_bytes"]


def peak_resident_bytes(pid: int) -> int:
    """The process's peak resident memory so far; skips the test where /proc has no such
    line (macOS)."""
    status = Path(f"/proc/{pid}/status")
    if not sys.platform.startswith("linux") or not status.exists():
        pytest.skip("peak resident memory is read from Linux's /proc")
    for line in status.read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    pytest.skip("this kernel reports no VmHWM")
