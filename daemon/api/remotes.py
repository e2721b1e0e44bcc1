"""The wire contract for remotes: engines elsewhere (vLLM, SGLang, llama-server, Ollama, another
localllm) whose models the daemon serves next to its own, under ``NAME/<model id>``.

Several URLs make one remote: replicas of the same engine, which requests are spread over.
API keys never travel back out: a remote says only whether it has one and where it comes from.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "RemoteAddRequest",
    "RemoteInfo",
    "RemoteList",
    "RemoteModelOut",
    "ReplicaInfo",
]

RemoteKind = Literal["openai", "ollama"]  # the API the engine speaks


class RemoteAddRequest(BaseModel):
    """``POST /api/remotes``. ``api_key`` is stored in the keyring (or the user-only key file
    when there is no keyring) and never written in the remotes file; ``api_key_env`` names an
    environment variable of the daemon's to read it from instead."""

    model_config = ConfigDict(extra="forbid")

    name: str  # lowercase letters, digits, '-' and '_', at most 32: the models' prefix
    urls: list[str] = Field(min_length=1, max_length=16)  # http(s) base URLs, replicas
    kind: RemoteKind = "openai"
    api_key: str | None = None
    api_key_env: str | None = None
    aliases: dict[str, str] = Field(default_factory=dict)  # alias -> the remote's model id
    timeout_seconds: float = Field(default=600.0, gt=0, le=3600)  # a whole request
    max_concurrency: int = Field(default=16, ge=1, le=1024)  # per replica


class ReplicaInfo(BaseModel):
    url: str
    healthy: bool
    latency_ms: float | None = None  # the last health check's round trip
    in_flight: int = 0
    error: str | None = None  # why it is unhealthy, in words
    ejected_until: str | None = None  # RFC 3339, while passively ejected after failures


class RemoteModelOut(BaseModel):
    name: str  # as clients name it: "NAME/<model id>" or an alias
    remote_id: str  # the id the remote itself uses


class RemoteInfo(BaseModel):
    name: str
    urls: list[str]
    kind: RemoteKind
    has_api_key: bool
    api_key_env: str | None = None
    aliases: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: float
    max_concurrency: int
    healthy: bool  # at least one replica is
    replicas: list[ReplicaInfo]
    models: list[RemoteModelOut]  # the last model list fetched (cached)
    in_flight: int = 0


class RemoteList(BaseModel):
    """``GET /api/remotes``."""

    remotes: list[RemoteInfo]
