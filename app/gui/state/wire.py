"""The daemon's JSON, as ``daemon.client`` returns it, turned into the app's frozen records.

Only the gateway uses this; when a field moves on the wire, this is the one module to change.
Every reader tolerates a missing field (older daemons, Ollama itself) rather than failing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from app.gui.state.records import (
    CatalogModel,
    ChatDelta,
    ChatDone,
    GpuInfo,
    HubFile,
    HubRepo,
    InstalledModel,
    ModelDetails,
    PullProgress,
    PullStatus,
    RunningModel,
    ServerInfo,
    SystemInfo,
)

__all__ = [
    "catalog_model",
    "chat_events",
    "hub_file",
    "hub_repo",
    "installed",
    "model_details",
    "progress",
    "pull_status",
    "running",
    "server_info",
    "system_info",
    "timestamp",
]

_FRACTION = re.compile(r"(\.\d{6})\d+")  # fromisoformat takes microseconds, not nanoseconds


def timestamp(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(_FRACTION.sub(r"\1", str(value)).replace("Z", "+00:00"))
    except ValueError:
        return None


def installed(item: Mapping[str, Any]) -> InstalledModel:
    details = item.get("details") or {}
    return InstalledModel(
        name=item.get("name") or item.get("model", ""),
        size=int(item.get("size") or 0),
        modified_at=timestamp(item.get("modified_at")),
        digest=item.get("digest", ""),
        family=details.get("family", ""),
        parameter_size=details.get("parameter_size", ""),
        quantization=details.get("quantization_level", ""),
        format=details.get("format", ""),
    )


def _metadata_value(value: Any) -> str:
    if isinstance(value, list):
        head = ", ".join(map(str, value[:8]))
        return f"[{head}{', …' if len(value) > 8 else ''}] ({len(value)} items)"
    return str(value)


def model_details(name: str, data: Mapping[str, Any]) -> ModelDetails:
    info = data.get("model_info") or {}
    context = next((v for k, v in info.items() if k.endswith(".context_length")), None)
    return ModelDetails(
        name=name,
        modelfile=data.get("modelfile", ""),
        parameters=data.get("parameters", ""),
        template=data.get("template", ""),
        system=data.get("system", ""),
        license=data.get("license", ""),
        metadata=tuple(sorted((k, _metadata_value(v)) for k, v in info.items())),
        capabilities=frozenset(data.get("capabilities") or ()),
        context_length=int(context) if context else None,
    )


def running(item: Mapping[str, Any]) -> RunningModel:
    return RunningModel(
        name=item.get("name") or item.get("model", ""),
        size=int(item.get("size") or 0),
        size_vram=int(item.get("size_vram") or 0),
        expires_at=timestamp(item.get("expires_at")),
        context_length=item.get("context_length"),
        processor=item.get("processor", ""),
    )


def progress(name: str) -> Callable[[Mapping[str, Any]], PullProgress]:
    def convert(chunk: Mapping[str, Any]) -> PullProgress:
        return PullProgress(
            name=name,
            status=chunk.get("status", ""),
            digest=chunk.get("digest") or "",
            total=int(chunk.get("total") or 0),
            completed=int(chunk.get("completed") or 0),
        )

    return convert


def pull_status(item: Mapping[str, Any]) -> PullStatus:
    return PullStatus(
        name=item.get("name", ""),
        status=item.get("status", ""),
        total=int(item.get("total") or 0),
        completed=int(item.get("completed") or 0),
        state=item.get("state", "running"),
        error=item.get("error") or "",
    )


def chat_events(chunk: Mapping[str, Any]) -> tuple[ChatDelta | ChatDone, ...]:
    """A chunk is text, the end, or both (a final chunk may still carry text)."""
    content = (chunk.get("message") or {}).get("content", "")
    delta = (ChatDelta(content),) if content or not chunk.get("done") else ()
    if not chunk.get("done"):
        return delta
    fields = ChatDone.__dataclass_fields__
    return (*delta, ChatDone(**{k: v for k, v in chunk.items() if k in fields and v is not None}))


def catalog_model(item: Mapping[str, Any]) -> CatalogModel:
    return CatalogModel(
        item["name"],
        item.get("parameter_size", ""),
        int(item.get("size") or 0),
        item.get("description", ""),
        item.get("kind", "chat"),
        item.get("repo", ""),
    )


def hub_repo(item: Mapping[str, Any]) -> HubRepo:
    return HubRepo(
        item["repo"],
        int(item.get("downloads") or 0),
        int(item.get("likes") or 0),
        timestamp(item.get("updated")),
    )


def hub_file(item: Mapping[str, Any]) -> HubFile:
    return HubFile(
        item["file"],
        item.get("quant", ""),
        int(item.get("size") or 0),
        item["name_to_pull"],
        bool(item.get("recommended")),
    )


def system_info(data: Mapping[str, Any]) -> SystemInfo:
    gpus = tuple(
        GpuInfo(g.get("name", "GPU"), int(g.get("vram_total") or 0), int(g.get("vram_free") or 0))
        for g in data.get("gpus") or ()
    )
    return SystemInfo(
        ram_total=int(data.get("ram_total") or 0),
        ram_available=int(data.get("ram_available") or 0),
        gpus=gpus,
        backend=data.get("backend", ""),
    )


def server_info(data: Mapping[str, Any], lan_url: str = "") -> ServerInfo:
    return ServerInfo(
        host=data.get("host", "127.0.0.1"),
        port=int(data.get("port") or 0),
        lan=bool(data.get("lan")),
        api_key_set=bool(data.get("api_key_set")),
        lan_url=lan_url if data.get("lan") else "",
    )
