"""``localllm show MODEL --plan``: the daemon's memory plan for a model, before it loads.

Laid out like ``show``: sections Settings (how the load would run, with the daemon's reasons),
Memory (a table of the parts: what, where, how big), Totals (per device, against the free
memory the plan is judged by), then whether it fits and what the plan leaves out.
"""

from __future__ import annotations

from localllm.app.cli.formatting import format_size, table
from localllm.daemon.api import PlanDevice, PlanPartOut, PlanResponse

__all__ = ["render_plan", "where"]


def where(device: str) -> str:
    """``RAM`` for the CPU's share, ``GPU 0`` for a GPU's."""
    if device == "CPU":
        return "RAM"
    return f"GPU {device.removeprefix('GPU')}" if device.startswith("GPU") else device


def render_plan(plan: PlanResponse) -> str:
    sections = [
        ("Settings", _settings(plan)),
        ("Memory", table(["PART", "WHERE", "SIZE", "WHAT"], [_row(p) for p in plan.parts])),
        ("Totals", table(["WHERE", "AT LOAD", "LATER", "FREE"], _totals(plan.devices))),
        ("Fits" if plan.fits else "Does not fit", plan.fit_reason),
        ("Not planned", "\n".join(plan.notes)),
    ]
    blocks = []
    for title, body in sections:
        if body:
            lines = "\n".join(f"    {line}" for line in body.splitlines())
            blocks.append(f"  {title}\n{lines}")
    return "\n\n".join(blocks) + "\n"


def _settings(plan: PlanResponse) -> str:
    s = plan.settings
    rows = [
        (
            "model",
            plan.model + ("  (on Hugging Face, not downloaded)" if plan.source == "hub" else ""),
        ),
        ("runs at", f"{s.context_length:,} tokens x {s.num_parallel} slots"),
        ("because", s.context_reason),
        ("slots", s.parallel_reason),
        ("kv cache", f"{s.kv_cache_type}, flash attention {'on' if s.flash_attention else 'off'}"),
        ("gpu layers", f"{s.gpu_layers}/{s.total_layers} ({s.placement_reason})"),
    ]
    if any(p.kind == "experts" for p in plan.parts):  # a mixture of experts
        rows.append(("experts in RAM", f"{s.cpu_moe_layers}/{s.total_layers - 1} layers"))
    width = max(len(label) for label, _ in rows) + 4
    return "\n".join(f"{label:<{width}}{value}" for label, value in rows)


def _row(part: PlanPartOut) -> list[str]:
    notes = [note for note, on in (("measured", part.measured), ("later", part.later)) if on]
    what = part.text + (f" ({', '.join(notes)})" if notes else "")
    return [part.kind, where(part.device), format_size(part.bytes), what]


def _totals(devices: list[PlanDevice]) -> list[list[str]]:
    return [
        [
            where(d.device),
            format_size(d.bytes),
            format_size(d.later_bytes) if d.later_bytes else "-",
            "-" if d.free is None else format_size(d.free),
        ]
        for d in devices
    ]
