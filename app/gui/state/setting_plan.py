"""What the settings being chosen would take in memory: the daemon's plan, for the latest choice.

The Settings page's context and a chat's own settings show what a load of the chat's model
would take with them: the daemon's plan (``/api/plan``) of that model with the options the chat
would send, the same plan the Models page draws. A choice being made (a context typed digit by
digit, a list scrolled) asks at every step; the service sends the ask once the user pauses
(``services.setting_plan``), and this keeps which ask is current, so that an ask equal to the
current one is not sent again and an answer to an older one is dropped. Until the plan comes
its text names no figure, and after a failure it says nothing: a wrong figure is worse than
none for a choice made on it. The same holds for the GPU layers the plan places
(``gpu_layers``). Qt-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from localllm.app.gui.state.chat.records import ChatOptions
from localllm.app.gui.state.fit import GpuLayers
from localllm.app.gui.state.model_plan import GROUPS, plan_lines
from localllm.app.gui.state.records import ModelPlan
from localllm.app.gui.state.units import bytes_text

__all__ = ["PlanAsk", "PlanPreview", "memory_options", "plan_summary"]


@dataclass(frozen=True, slots=True)
class PlanAsk:
    """A model and the options its plan is asked with (hashable, so asks compare)."""

    model: str
    options: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, model: str, options: Mapping[str, Any]) -> PlanAsk:
        return cls(model, tuple(sorted(options.items())))

    def options_dict(self) -> dict[str, Any]:
        return dict(self.options)


def memory_options(options: ChatOptions, context: int | None) -> dict[str, int]:
    """The options of a chat's request that decide its memory: its own context, else
    ``context`` (what the app sends for a chat that sets none; None: the daemon decides), and
    its GPU layers."""
    found = {"num_ctx": options.num_ctx or context, "num_gpu": options.num_gpu}
    return {key: value for key, value in found.items() if value is not None}


def plan_summary(plan: ModelPlan) -> str:
    """The plan in one sentence: '1.2 GB at 4,096 tokens x 4 slots (weights 253.0 MB, cache
    108.0 MB, compute 518.5 MB). Fits in the memory free now.'"""
    parts = []
    for group, kinds in GROUPS:
        size = sum(p.bytes for p in plan.parts if p.kind in kinds and not p.later)
        if size:
            parts.append(f"{group} {bytes_text(size)}")
    slots = f"{plan.num_parallel} slot{'s' if plan.num_parallel != 1 else ''}"
    figures = f" ({', '.join(parts)})" if parts else ""
    verdict = plan_lines(plan)[-1]  # whether it fits, and if not what would
    total = f"{bytes_text(plan.total)} at {plan.context_length:,} tokens x {slots}"
    return f"{total}{figures}. {verdict}"


class PlanPreview:
    """The current ask, and its plan once it comes (or that it failed)."""

    def __init__(self) -> None:
        self.ask: PlanAsk | None = None
        self.plan: ModelPlan | None = None
        self.failed = False

    def want(self, ask: PlanAsk) -> bool:
        """Make ``ask`` the current one; False when it already is (asked, or answered)."""
        if ask == self.ask:
            return False
        self.ask, self.plan, self.failed = ask, None, False
        return True

    def answered(self, ask: PlanAsk, plan: ModelPlan) -> bool:
        """Keep the plan if it answers the current ask (False: a late answer, dropped)."""
        if ask != self.ask:
            return False
        self.plan, self.failed = plan, False
        return True

    def failed_for(self, ask: PlanAsk) -> bool:
        """The current ask could not be planned (False: an older ask's failure, dropped)."""
        if ask != self.ask:
            return False
        self.plan, self.failed = None, True
        return True

    def clear(self) -> bool:
        """No model to plan; False when there was none already."""
        if self.ask is None:
            return False
        self.ask, self.plan, self.failed = None, None, False
        return True

    def gpu_layers(self) -> GpuLayers | None:
        """Where the plan puts the model's layers (None until it comes), and whether the ask
        set them (``num_gpu``) or left them to the daemon."""
        asked = self.ask is not None and "num_gpu" in self.ask.options_dict()
        return GpuLayers.of(self.plan, asked)

    def text(self, lead: str = "{model} at this setting") -> str:
        """``lead`` (``{model}`` is the model's name) and the plan in one sentence, or
        'planning…' until it comes; nothing without a model or after a failure."""
        if self.ask is None or self.failed:
            return ""
        head = lead.format(model=self.ask.model)
        return f"{head}: {plan_summary(self.plan) if self.plan else 'planning…'}"
