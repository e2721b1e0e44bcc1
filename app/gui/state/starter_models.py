"""The first-run suggestions: a few well-known models, sized for this machine.

Names are the catalog's short names, so one click pulls them. Whether each fits is the
daemon's memory plan of it (read from its header on the hub, at the context chats ask for),
once it has come; until then a guess from the file size (the Q4_K_M files' sizes, only
approximate) stands in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from localllm.app.gui.state.fit import Fit, fit_for, plan_fit
from localllm.app.gui.state.records import ModelPlan, SystemInfo

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
    plan: ModelPlan | None = None  # the daemon's, once it came


STARTERS: tuple[StarterModel, ...] = (
    StarterModel("qwen:0.5b", "0.5B", 491_400_032, "Tiny and fast: quick answers, runs anywhere."),
    StarterModel("llama3.2:3b", "3.2B", 2_019_377_696, "A fast, balanced everyday assistant."),
    StarterModel("phi4-mini", "3.8B", 2_491_874_688, "Reasoning and math in a small model."),
    StarterModel("gemma3:4b", "3.9B", 3_341_145_344, "Chat about images too.", vision=True),
    StarterModel("qwen:7b", "7.6B", 4_683_073_184, "Strong general chat, coding, many languages."),
)
_CPU_COMFORT = 2_600_000_000  # above this, CPU-only replies get slow for chat


def _best(suggestions: list[Suggestion]) -> StarterModel:
    on_gpu = [s.model for s in suggestions if s.fit is Fit.VRAM]
    if on_gpu:
        return max(on_gpu, key=lambda m: m.size)
    in_ram = [
        s.model
        for s in suggestions
        if s.fit in (Fit.RAM, Fit.SPLIT) and s.model.size <= _CPU_COMFORT
    ]
    if in_ram:
        return max(in_ram, key=lambda m: m.size)
    return min(STARTERS, key=lambda m: m.size)


def suggest(
    system: SystemInfo | None, plans: Mapping[str, ModelPlan] | None = None
) -> tuple[Suggestion, ...]:
    """Every starter with its fit badge (``plans``: the daemon's, by name, where they came);
    exactly one marked as the one to try first."""
    plans = plans or {}
    plain = [
        Suggestion(
            m, plan_fit(plans[m.name]) if m.name in plans else fit_for(m.size, system), False
        )
        for m in STARTERS
    ]
    best = _best(plain)
    return tuple(
        Suggestion(s.model, s.fit, s.model == best, plans.get(s.model.name)) for s in plain
    )
