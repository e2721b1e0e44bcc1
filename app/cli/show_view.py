"""The human summary of a model (``localllm show`` and ``/show`` in a chat), from ``/api/show``.

Laid out like ``ollama show``: sections Model, (Projector, Adapters,) Capabilities, Parameters,
System, License, with long text cut to its first lines (the full text is one flag away:
``--system``, ``--license``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from localllm.app.cli.formatting import format_size, short_id
from localllm.daemon.api import AdapterOut, ShowResponse

__all__ = [
    "adapter_lines",
    "format_parameter_count",
    "model_facts",
    "parameter_lines",
    "render_show",
]

_PREVIEW_LINES = 2


def format_parameter_count(count: int | float | None) -> str:
    """``8.0B``, ``494M``, ``22.7M``: a parameter count the way model cards write it."""
    if not count:
        return "-"
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if count >= scale:
            value = count / scale
            return f"{value:.1f}{unit}" if value < 100 else f"{value:.0f}{unit}"
    return str(int(count))


def model_facts(info: ShowResponse) -> list[tuple[str, str]]:
    """(label, value) rows for the Model section; rows the daemon did not report are left out."""
    details, model_info = info.details, info.model_info
    arch = model_info.get("general.architecture") or details.family
    parameters = details.parameter_size or format_parameter_count(
        model_info.get("general.parameter_count")
    )
    rows = [
        ("architecture", arch),
        ("parameters", parameters if parameters != "-" else None),
        ("context length", model_info.get(f"{arch}.context_length")),
        ("embedding length", model_info.get(f"{arch}.embedding_length")),
        ("quantization", details.quantization_level),
        *_run_facts(info),
    ]
    return [(label, str(value)) for label, value in rows if value not in (None, "")]


def _run_facts(info: ShowResponse) -> list[tuple[str, object]]:
    """How a request that sets no load options runs it (the daemon decides, and says why)."""
    runs = info.runs_with
    if runs is None:
        return []
    return [
        ("runs at", f"{runs.context_length} tokens x {runs.num_parallel} slots"),
        ("because", runs.context_reason),
        ("slots", runs.parallel_reason),
        ("kv cache", f"{runs.kv_cache_type}, flash attention {runs.flash_attention}"),
    ]


def parameter_lines(parameters: object) -> list[str]:
    """The model's parameters, one ``name value`` per line, whether sent as text or as JSON."""
    if isinstance(parameters, str):
        return [line.strip() for line in parameters.splitlines() if line.strip()]
    if isinstance(parameters, Mapping):
        lines = []
        for name, value in parameters.items():
            for item in value if isinstance(value, list) else [value]:
                lines.append(f"{name:<16}{json.dumps(item) if isinstance(item, str) else item}")
        return lines
    return []


def render_show(info: ShowResponse) -> str:
    sections: list[tuple[str, list[str]]] = []
    facts = model_facts(info)
    width = max((len(label) for label, _ in facts), default=0) + 4
    sections.append(("Model", [f"{label:<{width}}{value}" for label, value in facts]))
    projector = info.projector_info or {}
    if projector:
        arch = projector.get("general.architecture", "clip")
        sections.append(("Projector", [f"{'architecture':<{width}}{arch}"]))
    sections.append(("Adapters", adapter_lines(info.adapters)))
    sections.append(("Draft model", [info.draft] if info.draft else []))
    sections.append(("Capabilities", list(info.capabilities)))
    sections.append(("Parameters", parameter_lines(info.parameters)))
    sections.append(("Recommended sampling", recommended_lines(info.model_info)))
    sections.append(("System", _preview(info.system)))
    sections.append(("License", _preview(info.license)))
    blocks = []
    for title, lines in sections:
        if lines:
            blocks.append("\n".join([f"  {title}", *(f"    {line}" for line in lines)]))
    return "\n\n".join(blocks) + "\n"


def recommended_lines(model_info: Mapping[str, object]) -> list[str]:
    """The authors' sampling (GGUF ``general.sampling.*``), used where nothing overrides it."""
    prefix = "general.sampling."
    return [
        f"{key.removeprefix(prefix):<16}{value}"
        for key, value in model_info.items()
        if key.startswith(prefix)
    ]


def adapter_lines(adapters: list[AdapterOut]) -> list[str]:
    """One ``LoRA <id>  <size>  scale <s>`` line per adapter the model applies."""
    return [
        f"LoRA {short_id(a.digest)}    {format_size(a.size)}    scale {a.scale}" for a in adapters
    ]


def _preview(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.strip().splitlines()]
    lines = [line for line in lines if line]
    return lines[:_PREVIEW_LINES] + (["..."] if len(lines) > _PREVIEW_LINES else [])
