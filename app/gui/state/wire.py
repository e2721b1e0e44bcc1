"""The daemon's answers, as ``daemon.client`` returns them (``daemon.api`` models), turned into
the app's frozen records.

Only the gateway uses this; when a field moves on the wire, the shared ``daemon.api`` model
and this module are what change. Fields the daemon may leave empty (a pull event's digest and
sizes, a chunk's timings before the last) become the records' zero values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from localllm.app.gui.state.records import (
    CatalogModel,
    ChatDelta,
    ChatDone,
    GpuInfo,
    HubFile,
    HubRepo,
    InstalledModel,
    ModelDetails,
    ModelPlan,
    PlanDevice,
    PlanPart,
    PullProgress,
    PullStatus,
    RunningModel,
    ServerInfo,
    SystemInfo,
)
from localllm.daemon import api

__all__ = [
    "catalog_model",
    "chat_events",
    "hub_file",
    "hub_repo",
    "installed",
    "model_details",
    "model_plan",
    "progress",
    "pull_status",
    "running",
    "server_info",
    "system_info",
    "timestamp",
]

_FRACTION = re.compile(r"(\.\d{6})\d+")  # fromisoformat takes microseconds, not nanoseconds


def timestamp(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(_FRACTION.sub(r"\1", value).replace("Z", "+00:00"))
    except ValueError:
        return None


def installed(item: api.ModelSummary) -> InstalledModel:
    details = item.details
    return InstalledModel(
        name=item.name or item.model,
        size=item.size,
        modified_at=timestamp(item.modified_at),
        digest=item.digest,
        family=details.family,
        parameter_size=details.parameter_size,
        quantization=details.quantization_level,
        format=details.format,
        remote=item.remote or "",
    )


def _metadata_value(value: Any) -> str:
    if isinstance(value, list):
        head = ", ".join(map(str, value[:8]))
        return f"[{head}{', …' if len(value) > 8 else ''}] ({len(value)} items)"
    return str(value)


def model_details(name: str, data: api.ShowResponse) -> ModelDetails:
    info = data.model_info
    context = next((v for k, v in info.items() if k.endswith(".context_length")), None)
    return ModelDetails(
        name=name,
        modelfile=data.modelfile,
        parameters=data.parameters,
        template=data.template,
        system=data.system,
        license=data.license,
        metadata=tuple(sorted((k, _metadata_value(v)) for k, v in info.items())),
        capabilities=frozenset(data.capabilities),
        context_length=int(context) if context else None,
        runs_at=data.runs_with.context_length if data.runs_with else None,
        slots=data.runs_with.num_parallel if data.runs_with else 0,
    )


def running(item: api.RunningModel) -> RunningModel:
    return RunningModel(
        name=item.name or item.model,
        size=item.size,
        size_vram=item.size_vram,
        expires_at=timestamp(item.expires_at),
        context_length=item.context_length,
        processor=item.processor,
        remote=item.remote or "",
    )


def progress(name: str) -> Callable[[api.ProgressResponse], PullProgress]:
    def convert(chunk: api.ProgressResponse) -> PullProgress:
        return PullProgress(
            name=name,
            status=chunk.status,
            digest=chunk.digest or "",
            total=chunk.total or 0,
            completed=chunk.completed or 0,
        )

    return convert


def pull_status(item: api.PullRecordOut) -> PullStatus:
    return PullStatus(
        name=item.name,
        status=item.status,
        total=item.total,
        completed=item.completed,
        state=item.state,
        error=item.error or "",
    )


_DONE_FIELDS = tuple(
    f for f in ChatDone.__dataclass_fields__ if f not in ("dropped_messages", "kept_from")
)


def chat_events(chunk: api.ChatChunk) -> tuple[ChatDelta | ChatDone, ...]:
    """A chunk is text (of the answer, or thinking), the end, or both (a final chunk may
    still carry text)."""
    content, thinking = chunk.message.content, chunk.message.thinking or ""
    calls = tuple(
        (call.function.name, _arguments(call.function.arguments))
        for call in chunk.message.tool_calls or ()
    )
    wanted = content or thinking or calls or not chunk.done
    delta = (ChatDelta(content, thinking, calls),) if wanted else ()
    if not chunk.done:
        return delta
    numbers = {name: getattr(chunk, name) for name in _DONE_FIELDS}
    if chunk.truncated is not None:
        numbers.update(chunk.truncated.model_dump())
    return (*delta, ChatDone(**{k: v for k, v in numbers.items() if v is not None}))


def _arguments(arguments: dict[str, Any] | str) -> dict[str, Any]:
    """A call's arguments as an object (the daemon sends one; text is parsed, or kept)."""
    if isinstance(arguments, dict):
        return arguments
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return {"arguments": arguments}
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}


def catalog_model(item: api.CatalogModel) -> CatalogModel:
    return CatalogModel(
        item.name,
        item.parameter_size,
        item.size,
        item.description,
        item.kind,
        item.repo,
        frozenset(item.capabilities),
        item.quant,
    )


def hub_repo(item: api.HubRepo) -> HubRepo:
    return HubRepo(item.repo, item.downloads, item.likes, timestamp(item.updated))


def hub_file(item: api.HubFile) -> HubFile:
    return HubFile(item.file, item.quant, item.size, item.name_to_pull, item.recommended)


def model_plan(data: api.PlanResponse) -> ModelPlan:
    s = data.settings
    return ModelPlan(
        model=data.model,
        parts=tuple(
            PlanPart(p.kind, p.device, p.bytes, p.text, p.measured, p.later) for p in data.parts
        ),
        devices=tuple(PlanDevice(d.device, d.bytes, d.later_bytes, d.free) for d in data.devices),
        total=data.total,
        fits=data.fits,
        fit_reason=data.fit_reason,
        suggestion=data.suggestion,
        context_length=s.context_length,
        context_reason=s.context_reason,
        num_parallel=s.num_parallel,
        parallel_reason=s.parallel_reason,
        kv_cache_type=s.kv_cache_type,
        flash_attention=s.flash_attention,
        gpu_layers=s.gpu_layers,
        total_layers=s.total_layers,
        placement_reason=s.placement_reason,
        cpu_moe_layers=s.cpu_moe_layers,
        measured=data.measured,
        notes=tuple(data.notes),
    )


def system_info(data: api.SystemResponse) -> SystemInfo:
    gpus = tuple(GpuInfo(g.name, g.vram_total, g.vram_free) for g in data.gpus)
    return SystemInfo(
        ram_total=data.ram_total,
        ram_available=data.ram_available,
        gpus=gpus,
        backend=data.backend,
        build_advice=_sentence(data.build_advice or ""),
    )


def _sentence(text: str) -> str:
    """The daemon's clause ("this llama.cpp build runs on the CPU only, ...") as a sentence."""
    text = text.strip()
    if not text:
        return ""
    return f"{text[:1].upper()}{text[1:]}{'' if text.endswith(('.', '!', '?')) else '.'}"


def server_info(data: api.ServerResponse, lan_url: str = "") -> ServerInfo:
    return ServerInfo(
        host=data.host,
        port=data.port,
        lan=data.lan,
        api_key_set=data.api_key_set,
        lan_url=lan_url if data.lan else "",
    )
