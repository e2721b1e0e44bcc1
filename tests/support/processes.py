"""What tests read about processes from /proc: a process's children and its memory."""

from __future__ import annotations

from pathlib import Path

__all__ = ["child_pids", "peak_resident_bytes"]


def child_pids(parent: int) -> list[int]:
    """The live children of ``parent`` (a daemon's runners)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            children.append(int(stat.parent.name))
    return children


def peak_resident_bytes(pid: int) -> int:
    """The most memory ``pid`` has held resident so far (VmHWM); 0 once it has exited."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0
