"""Our own native endpoints' wire format: health, version, how the daemon is served, the
machine, the hub browser, the log."""

from __future__ import annotations

from pydantic import BaseModel

__all__ = [
    "GpuInfo",
    "HealthResponse",
    "HubFile",
    "HubFilesResponse",
    "HubRepo",
    "HubSearchResponse",
    "LogsResponse",
    "ServerResponse",
    "SystemResponse",
    "VersionResponse",
]


class HealthResponse(BaseModel):
    status: str  # "ok"
    version: str
    models_loaded: int
    requests_in_flight: int


class VersionResponse(BaseModel):
    version: str


class ServerResponse(BaseModel):
    """Where the daemon listens, as its settings say (``GET /api/server``)."""

    host: str
    port: int
    lan: bool  # reachable beyond this machine (not bound to a loopback address)
    api_key_set: bool


class GpuInfo(BaseModel):
    name: str
    vram_total: int
    vram_free: int


class SystemResponse(BaseModel):
    ram_total: int
    ram_available: int
    cpu_count: int
    gpus: list[GpuInfo]
    backend: str  # of the loaded runners ("cpu", "cuda", ...), else of the installed build
    models_dir: str | None = None  # the store's folder, told only to a client on this machine
    # a GPU the installed llama.cpp build cannot use (a CPU build on a CUDA or Metal machine),
    # in words with the fix; None when there is nothing to say
    build_advice: str | None = None


class HubRepo(BaseModel):
    repo: str
    downloads: int = 0
    likes: int = 0
    updated: str | None = None
    gated: bool = False


class HubSearchResponse(BaseModel):
    models: list[HubRepo]


class HubFile(BaseModel):
    file: str  # the first file of the quantization (its first shard)
    quant: str
    size: int  # all shards together
    shards: int
    name_to_pull: str  # hf.co/org/repo:QUANT
    recommended: bool = False


class HubFilesResponse(BaseModel):
    repo: str
    files: list[HubFile]
    projector: str | None = None


class LogsResponse(BaseModel):
    text: str
