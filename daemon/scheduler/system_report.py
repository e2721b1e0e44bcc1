"""The machine as front ends show it: RAM, GPUs (name and VRAM), and the compute backend.

The backend is what loaded runners report (llama.cpp knows what it was built with), else what
the installed build was compiled for, else a guess from the GPUs found. A GPU next to a build
for the CPU only is said in words with the fix (``gpu_left_unused``). Probes shell out
(``nvidia-smi``), so callers run them in a worker thread.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from localllm.daemon.runners.types import REBUILD_COMMAND
from localllm.daemon.scheduler import ModelStatus, system_memory

__all__ = [
    "Gpu",
    "SystemReport",
    "gpu_left_unused",
    "nvidia_gpus",
    "parse_gpus",
    "system_report",
]

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
    build_advice: str | None = None  # a GPU the installed build cannot use, and the fix


def system_report(loaded: Sequence[ModelStatus], build_backend: str | None = None) -> SystemReport:
    """``build_backend``: what the installed llama.cpp build was compiled for, if known."""
    memory = system_memory()
    gpus = tuple(nvidia_gpus())
    backends = sorted({status.info.backend for status in loaded if status.info.backend})
    guess = "cuda (no model loaded)" if gpus else "cpu"
    backend = ", ".join(backends) or build_backend or guess
    advice = gpu_left_unused(build_backend, gpus, platform.system(), platform.machine())
    cpus = os.cpu_count() or 1
    return SystemReport(memory.total, memory.available, cpus, gpus, backend, advice)


def gpu_left_unused(
    build_backend: str | None, gpus: Sequence[Gpu], system: str, machine: str
) -> str | None:
    """What to tell a user whose build runs on the CPU only next to a GPU llama.cpp could use
    (an NVIDIA card, or Apple silicon's Metal); None otherwise."""
    if build_backend != "cpu":
        return None
    if gpus:
        name = gpus[0].name
    elif system == "Darwin" and machine == "arm64":
        name = "Apple GPU (Metal)"
    else:
        return None
    return (
        f"this llama.cpp build runs on the CPU only, so the {name} is not used; install a GPU "
        f"build with `{REBUILD_COMMAND}` in the localllm checkout, or the app built for this "
        "machine"
    )


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
