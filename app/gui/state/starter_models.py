"""The first-run suggestions: a few well-known models, sized for this machine.

Names are the catalog's short names, so one click pulls them. Sizes are the Q4_K_M files' and
only approximate; the page may replace them with exact ones from the hub later.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.gui.state.fit import Fit, fit_for
from app.gui.state.records import SystemInfo

__all__ = ["STARTERS", "StarterModel", "Suggestion", "suggest"]


@dataclass(frozen=True, slots=True)
class StarterModel:
    name: str
    parameters: str
    size: int
    blurb: str
    vision: bool = False


@dataclass(frozen=True, slots=True)
class Suggestion:
    model: StarterModel
    fit: Fit
    recommended: bool


STARTERS: tuple[StarterModel, ...] = (
    StarterModel("qwen:0.5b", "0.5B", 491_400_032, "Tiny and fast: quick answers, runs anywhere."),
    StarterModel("llama3.2:3b", "3.2B", 2_019_377_696, "A fast, balanced everyday assistant."),
    StarterModel("phi4-mini", "3.8B", 2_491_874_688, "Reasoning and math in a small model."),
    StarterModel("gemma3:4b", "3.9B", 3_341_145_344, "Chat about images too.", vision=True),
    StarterModel("qwen:7b", "7.6B", 4_683_073_184, "Strong general chat, coding, many languages."),
)
_CPU_COMFORT = 2_600_000_000  # above this, CPU-only replies get slow for chat


def _best(suggestions: list[Suggestion], system: SystemInfo | None) -> StarterModel:
    on_gpu = [s.model for s in suggestions if s.fit is Fit.VRAM]
    if on_gpu:
        return max(on_gpu, key=lambda m: m.size)
    in_ram = [s.model for s in suggestions if s.fit is Fit.RAM and s.model.size <= _CPU_COMFORT]
    if in_ram:
        return max(in_ram, key=lambda m: m.size)
    return min(STARTERS, key=lambda m: m.size)


def suggest(system: SystemInfo | None) -> tuple[Suggestion, ...]:
    """Every starter with its fit badge; exactly one marked as the one to try first."""
    plain = [Suggestion(m, fit_for(m.size, system), False) for m in STARTERS]
    best = _best(plain, system)
    return tuple(Suggestion(s.model, s.fit, s.model == best) for s in plain)
