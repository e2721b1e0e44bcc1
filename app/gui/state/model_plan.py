"""A model's memory plan as the app draws and says it: one bar per device, in words beside it.

The daemon's plan (``/api/plan``) lists every part of a load: the weights, each cache, the
compute and output buffers, a projector, a draft model, adapters, and the RAM the runner may
fill later. The details view draws them as a bar per device (RAM, each GPU), the parts grouped
by what they are and coloured by group, against the free memory the plan is judged by; the
words beside it say the same figures. Qt-free: the view only paints what this returns.
"""

from __future__ import annotations

from dataclasses import dataclass

from localllm.app.gui.state.fit import needed_memory
from localllm.app.gui.state.records import ModelPlan
from localllm.app.gui.state.units import bytes_text

__all__ = [
    "GROUPS",
    "GROUP_TONES",
    "BarRow",
    "Segment",
    "bar_rows",
    "device_name",
    "memory_text",
    "plan_lines",
    "plan_tip",
]

# what the bar shows, in order: a group's name and the plan's kinds it gathers
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("weights", ("weights", "experts")),
    ("cache", ("kv", "window kv", "recurrent")),
    ("compute", ("compute", "output")),
    ("projector", ("projector",)),
    ("draft", ("draft",)),
    ("adapters", ("lora",)),
    ("prompt cache", ("host cache", "checkpoints")),  # RAM filled later, not at load
)
# each group's colour, a ``design.tokens.Palette`` field: the same meaning on every page
GROUP_TONES = {
    "weights": "accent",
    "cache": "info",
    "compute": "warning",
    "projector": "success",
    "draft": "link",
    "adapters": "muted",
    "prompt cache": "border_strong",
}
_GROUP_OF = {kind: group for group, kinds in GROUPS for kind in kinds}
_LATER = GROUPS[-1][0]


@dataclass(frozen=True, slots=True)
class Segment:
    group: str  # one of GROUPS' names
    bytes: int


@dataclass(frozen=True, slots=True)
class BarRow:
    """One device's bar: its segments in ``GROUPS`` order, and the free memory it is judged
    against (the bar's whole width, unless the plan needs more)."""

    device: str  # as people read it: "RAM", "GPU 0"
    segments: tuple[Segment, ...]
    free: int | None

    @property
    def used(self) -> int:
        """At load (what may come later not counted)."""
        return sum(s.bytes for s in self.segments if s.group != _LATER)

    @property
    def scale(self) -> int:
        """The bytes the bar's full width stands for."""
        return max(self.free or 0, sum(s.bytes for s in self.segments), 1)

    @property
    def over(self) -> bool:
        """What it needs at load does not fit what is free."""
        return self.free is not None and self.used > self.free


def device_name(device: str) -> str:
    if device == "CPU":
        return "RAM"
    return f"GPU {device.removeprefix('GPU')}" if device.startswith("GPU") else device


def bar_rows(plan: ModelPlan) -> tuple[BarRow, ...]:
    """A bar per device the plan uses, RAM first."""
    free = {d.device: d.free for d in plan.devices}
    devices = [d.device for d in plan.devices] or sorted({p.device for p in plan.parts})
    rows = []
    for device in devices:
        sizes: dict[str, int] = {}
        for part in plan.parts:
            if part.device == device:
                group = _LATER if part.later else _GROUP_OF.get(part.kind, "compute")
                sizes[group] = sizes.get(group, 0) + part.bytes
        segments = tuple(Segment(g, sizes[g]) for g, _ in GROUPS if sizes.get(g))
        rows.append(BarRow(device_name(device), segments, free.get(device)))
    return tuple(rows)


def plan_lines(plan: ModelPlan) -> list[str]:
    """The plan in words: how it would run, then each device's figures, then whether it fits.
    ("RAM: 1.2 GB of 6.3 GB free: weights 253.0 MB, cache 310.0 MB, compute 514.5 MB")."""
    slots = f"{plan.num_parallel} slot{'s' if plan.num_parallel != 1 else ''}"
    lines = [f"{plan.context_length:,} tokens x {slots}, {_where(plan)}"]
    lines += [_row_text(row) for row in bar_rows(plan)]
    lines.append(_verdict(plan))
    return lines


def _verdict(plan: ModelPlan) -> str:
    """Whether it fits the memory free now, and where it does not, what would (the figures
    are the lines above, in the app's units)."""
    if plan.fits:
        return "Fits in the memory free now."
    advice = f": {plan.suggestion}" if plan.suggestion else ""
    return f"Does not fit in the memory free now{advice}."


def _where(plan: ModelPlan) -> str:
    if plan.on_gpu:
        place = "all on the GPU"
    elif plan.gpu_layers:
        place = f"{plan.gpu_layers} of {plan.total_layers} layers on the GPU"
    else:
        place = "on the CPU"
    experts = ""
    if plan.cpu_moe_layers and any(p.kind == "experts" for p in plan.parts):
        experts = f", the experts of its first {plan.cpu_moe_layers} layers in RAM"
    return f"{place}{experts}, K/V cache {plan.kv_cache_type}"


def _row_text(row: BarRow) -> str:
    free = f" of {bytes_text(row.free)} free" if row.free is not None else ""
    now = [s for s in row.segments if s.group != _LATER]
    parts = ", ".join(f"{s.group} {bytes_text(s.bytes)}" for s in now)
    later = sum(s.bytes for s in row.segments if s.group == _LATER)
    tail = f"; up to {bytes_text(later)} more later (prompt cache)" if later else ""
    return f"{row.device}: {bytes_text(row.used)}{free} ({parts}){tail}"


def memory_text(plan: ModelPlan | None, file_size: int) -> str:
    """What loading it takes: the plan's figure, or "about" one from the file size until the
    plan has come."""
    if plan is not None:
        return bytes_text(plan.total)
    return f"about {bytes_text(needed_memory(file_size))}" if file_size > 0 else ""


def plan_tip(plan: ModelPlan | None, file_size: int) -> str:
    """The plan in words, or what the figure is until it comes."""
    if plan is not None:
        return "\n".join(plan_lines(plan))
    return (
        f"About {bytes_text(needed_memory(file_size))} with context: a guess from the file "
        "size, until the daemon has planned it from the model itself"
    )
