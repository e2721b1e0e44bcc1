"""``POST /api/plan`` (ours): what a model would take in memory before it loads, part by part.

The request names an installed model (``model``), or a file on Hugging Face not downloaded yet
(``repo`` with ``file``, or ``quant`` as a pull names it), with the options a chat would send
(``num_ctx``, ``num_parallel``, ``kv_cache_type``, ``flash_attention``, ``num_gpu``,
``num_cpu_moe``...). The answer is the daemon's memory plan for the load those options would
start: the settings it would run with and why, every part (weights, caches, buffers, projector,
draft) with where it goes and whether llama.cpp measured it, the totals per device, the free
memory they are judged against, and whether it fits.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "PlanDevice",
    "PlanPartOut",
    "PlanRequest",
    "PlanResponse",
    "PlanSettingsOut",
]


class PlanRequest(BaseModel):
    """``model`` (installed), or ``repo`` with ``file`` or ``quant`` (on Hugging Face)."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    model: str | None = Field(default=None, max_length=512)
    repo: str | None = Field(default=None, max_length=200)  # org/name on Hugging Face
    file: str | None = Field(default=None, max_length=512)  # a quant's (first) GGUF file
    quant: str | None = Field(default=None, max_length=128)  # or its quant, as a pull tags it
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _name_alias(cls, data: Any) -> Any:
        if isinstance(data, dict) and "model" not in data and "name" in data:
            return {**data, "model": data["name"]}
        return data


class PlanSettingsOut(BaseModel):
    """How the load would run, and why (the daemon's words)."""

    context_length: int  # tokens per slot
    context_reason: str
    num_parallel: int
    parallel_reason: str
    kv_cache_type: str
    flash_attention: bool  # as it would run (llama.cpp's "auto" decided)
    gpu_layers: int  # llama.cpp's n_gpu_layers (the output layer counts as one)
    total_layers: int  # the repeating layers and the output layer
    placement_reason: str  # why that many on the GPU
    cpu_moe_layers: int = 0  # of a mixture of experts, the first layers whose experts stay in
    # RAM (parts of kind "experts" say how much is where)


class PlanPartOut(BaseModel):
    kind: str  # weights, experts, kv, window kv, recurrent, output, compute, projector...
    device: str  # "CPU" (RAM) or "GPU0"...
    bytes: int
    text: str  # what it is, in words
    measured: bool = False  # llama.cpp's own figure from an earlier load, not the plan's
    later: bool = False  # RAM the runner may fill later (host cache, checkpoints), not at load


class PlanDevice(BaseModel):
    device: str
    bytes: int  # at load
    later_bytes: int = 0  # what the runner may fill later, besides
    free: int | None = None  # free memory judged against (headroom kept); None: not judged


class PlanResponse(BaseModel):
    model: str  # the installed name, or the name that pulls the file (hf.co/org/repo:QUANT)
    source: Literal["store", "hub"] = "store"
    file_size: int = 0  # the model's files (a pull downloads this much)
    settings: PlanSettingsOut
    parts: list[PlanPartOut]
    devices: list[PlanDevice]
    total: int  # everything at load, every device
    fits: bool
    fit_reason: str  # the figures, in words
    suggestion: str = ""  # where it does not fit: what would ("it fits at 8,192 tokens a slot")
    measured: bool = False  # some parts are llama.cpp's own figures
    notes: list[str] = Field(default_factory=list)  # what the plan leaves out for this model
