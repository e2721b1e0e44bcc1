"""What the scheduler is told by the daemon's settings: keep-alive, limits, headroom, where
runner logs and llama.cpp's measured buffers go."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["SchedulerConfig"]


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    keep_alive: float = 300.0  # seconds; 0 unloads after each request, negative never
    max_loaded_models: int = 0  # 0: as many as memory allows
    max_queue: int = 512  # requests waiting or running before "server busy"
    headroom: float = 0.20  # fraction of free memory never planned for
    context_cap: int = 32768  # the longest default context (``context_size``)
    log_dir: Path | None = None  # runner logs, one file per model load
    memory_file: Path | None = None  # llama.cpp's buffers as measured (None: in memory)
