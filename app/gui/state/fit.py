"""Will a model of this size run well on this machine?

The badge users trust in LM Studio and Jan: "fits in VRAM", "fits in RAM", "too large". A model
needs its file plus room for the context (KV cache) and runtime buffers; we keep the headroom the
surveys recommend (engines crash near 95% of GPU memory).
"""

from __future__ import annotations

from enum import Enum

from app.gui.state.records import SystemInfo

__all__ = ["Fit", "fit_for", "needed_memory"]

_OVERHEAD = 1.2  # context and compute buffers on top of the weights
_FIXED = 300_000_000
_VRAM_USABLE = 0.9
_RAM_USABLE = 0.8  # leave the system and other programs room


class Fit(Enum):
    VRAM = "fits in VRAM"
    RAM = "fits in RAM"
    TOO_LARGE = "too large"
    UNKNOWN = ""

    @property
    def label(self) -> str:
        return self.value

    @property
    def colour(self) -> str | None:
        """Green, amber, red: the badge colour (readable on light and dark backgrounds)."""
        return {"VRAM": "#16a34a", "RAM": "#d97706", "TOO_LARGE": "#dc2626"}.get(self.name)


def needed_memory(file_size: int) -> int:
    return int(file_size * _OVERHEAD) + _FIXED


def fit_for(file_size: int, system: SystemInfo | None) -> Fit:
    if system is None or file_size <= 0:
        return Fit.UNKNOWN
    needed = needed_memory(file_size)
    if system.gpus and needed <= system.vram_total * _VRAM_USABLE:
        return Fit.VRAM
    if needed <= system.ram_total * _RAM_USABLE:
        return Fit.RAM
    return Fit.TOO_LARGE
