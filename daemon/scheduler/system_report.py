"""The machine as front ends show it: RAM, GPUs (name and VRAM), and the compute backend.

The backend is what loaded runners report (llama.cpp knows what it was built with); with no
model loaded it is a guess from the GPUs found. Probes shell out (``nvidia-smi``), so callers
run them in a worker thread.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from daemon.scheduler import ModelStatus, system_memory

__all__ = ["Gpu", "SystemReport", "nvidia_gpus", "parse_gpus", "system_report"]

_QUERY = "--query-gpu=name,memory.total,memory.free"


@dataclass(frozen=True, slots=True)
class Gpu:
    name: str
    vram_total: int
    vram_free: int


@dataclass(frozen=True, slots=True)
class SystemReport:
    ram_total: int
    ram_available: int
    cpu_count: int
    gpus: tuple[Gpu, ...]
    backend: str


def system_report(loaded: Sequence[ModelStatus]) -> SystemReport:
    memory = system_memory()
    gpus = tuple(nvidia_gpus())
    backends = sorted({status.info.backend for status in loaded if status.info.backend})
    backend = ", ".join(backends) or ("cuda (no model loaded)" if gpus else "cpu")
    return SystemReport(memory.total, memory.available, os.cpu_count() or 1, gpus, backend)


def nvidia_gpus(timeout: float = 5.0) -> list[Gpu]:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    command = [exe, _QUERY, "--format=csv,noheader,nounits"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return []
    return parse_gpus(result.stdout) if result.returncode == 0 else []


def parse_gpus(output: str) -> list[Gpu]:
    """``name, total MiB, free MiB`` lines; malformed lines are skipped."""
    gpus = []
    for line in output.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3 or not parts[-1].isdigit() or not parts[-2].isdigit():
            continue
        gpus.append(Gpu(",".join(parts[:-2]), int(parts[-2]) << 20, int(parts[-1]) << 20))
    return gpus
