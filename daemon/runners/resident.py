"""How much memory a runner process holds, as it reports once loaded (llama, Whisper, Piper)."""

from __future__ import annotations

import os
import sys

__all__ = ["resident_bytes"]


def resident_bytes() -> int:
    """Resident memory of this process: /proc on Linux, peak RSS elsewhere."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
    except ImportError:  # Windows
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024
