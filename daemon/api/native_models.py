"""Ollama's native wire format for managing models: list, show, ps, copy, delete, pull, create.

Requests name the model in ``model`` (older clients send ``name``: both are accepted). Our
own additions (pull control and the pull list, prune, verify) follow the same style.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "AdapterOut",
    "CopyRequest",
    "CreateRequest",
    "ModelDetailsOut",
    "ModelRequest",
    "ModelSummary",
    "ProgressResponse",
    "PromptCacheCleared",
    "PromptCacheResponse",
    "PromptCacheUseOut",
    "PruneResponse",
    "PullListResponse",
    "PullRecordOut",
    "PullRequest",
    "PullState",
    "RunSettingsOut",
    "RunningModel",
    "RunningResponse",
    "ShowRequest",
    "ShowResponse",
    "TagsResponse",
    "VerifyProblem",
    "VerifyResponse",
]


class _Request(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class ModelRequest(_Request):
    """A request about one model (delete, pull control)."""

    model: str

    @model_validator(mode="before")
    @classmethod
    def _name_alias(cls, data: Any) -> Any:
        if isinstance(data, dict) and "model" not in data and "name" in data:
            return {**data, "model": data["name"]}
        return data


class ShowRequest(ModelRequest):
    verbose: bool = False


class PullRequest(ModelRequest):
    insecure: bool = False
    stream: bool = True


class CopyRequest(_Request):
    source: str
    destination: str


class CreateMessage(_Request):
    role: Literal["system", "user", "assistant"]
    content: str = ""


class CreateRequest(ModelRequest):
    """A Modelfile as text, or Ollama's structured fields; files are uploaded blobs only."""

    modelfile: str | None = None
    from_: str | None = Field(default=None, alias="from")
    files: dict[str, str] | None = None  # reference (file name or FROM text) -> digest
    adapters: dict[str, str] | None = None
    draft: str | None = None  # ours: a draft model (installed name or uploaded file), as DRAFT
    template: str | None = None
    system: str | None = None
    parameters: dict[str, Any] | None = None
    license: str | list[str] | None = None
    messages: list[CreateMessage] | None = None
    quantize: str | None = None
    stream: bool = True


class ModelDetailsOut(BaseModel):
    parent_model: str = ""
    format: str = "gguf"
    family: str = ""
    families: list[str] | None = None
    parameter_size: str = ""
    quantization_level: str = ""


class ModelSummary(BaseModel):
    name: str
    model: str
    modified_at: str
    size: int
    digest: str  # the model id, 64 hex digits (no prefix), as Ollama lists it
    details: ModelDetailsOut
    remote: str | None = None  # the remote serving it (ours); None: in this store


class TagsResponse(BaseModel):
    models: list[ModelSummary]


class AdapterOut(BaseModel):
    """One LoRA adapter a model applies on top of its weights (ours; Ollama lists none)."""

    digest: str
    size: int
    scale: float


class RunSettingsOut(BaseModel):
    """How a request that sets no load options runs the model, and why (ours)."""

    context_length: int  # tokens per slot
    context_reason: str  # "num_ctx", "the model's trained context (...)", "loaded: ..."
    num_parallel: int
    kv_cache_type: str
    flash_attention: str
    parallel_reason: str = ""  # "the default of 4", "8 of 32,768 tokens fit in ...", ...


class ShowResponse(BaseModel):
    modelfile: str
    parameters: str
    template: str
    system: str
    license: str
    details: ModelDetailsOut
    model_info: dict[str, Any]
    capabilities: list[str]
    modified_at: str
    messages: list[dict[str, str]] | None = None
    projector_info: dict[str, Any] | None = None
    adapters: list[AdapterOut] = Field(default_factory=list)
    draft: str | None = None  # ours: the draft model that guesses for it (speculative decoding)
    runs_with: RunSettingsOut | None = None


class PromptCacheUseOut(BaseModel):
    """What a running model resumed from the prompt cache on disk since it loaded."""

    hits: int = 0  # requests whose prompt was resumed from a file
    tokens: int = 0  # prompt tokens restored
    bytes_read: int = 0
    restore_seconds: float = 0.0  # reading, checking and restoring


class RunningModel(BaseModel):
    name: str
    model: str
    size: int
    digest: str
    details: ModelDetailsOut
    expires_at: str
    size_vram: int
    context_length: int
    processor: str  # "100% GPU", "100% CPU", "25%/75% CPU/GPU"
    active_requests: int
    remote: str | None = None  # the remote serving it (ours); None: a local runner
    kv_cache_type: str = "f16"  # ours: the K/V cache type it runs with
    flash_attention: str = "auto"  # ours: as it runs: "on", "off" or "auto" (llama.cpp decides)
    num_parallel: int = 0  # ours: its slots (requests it serves at once); 0: not known (remote)
    # ours: one slot, flash attention off, prompts resumed only after whole batches (option
    # ``deterministic``): an answer is the same whatever was read before or runs beside it
    deterministic: bool = False
    parallel_reason: str = ""  # ours: why that many
    context_reason: str = ""  # ours: why its context is as long as it is
    expert_layers: int = 0  # ours: a MoE model's layers with experts; 0: dense (or remote)
    cpu_expert_layers: int = 0  # ours: of them, those whose experts stay in RAM
    # ours: what it read back from the prompt cache on disk since it loaded; None: remote
    prompt_cache: PromptCacheUseOut | None = None


class RunningResponse(BaseModel):
    models: list[RunningModel]


class ProgressResponse(BaseModel):
    status: str
    digest: str | None = None
    total: int | None = None
    completed: int | None = None


# where a listed pull stands (``/api/pulls``; the daemon's pull list keeps the same)
PullState = Literal["queued", "running", "paused", "failed"]


class PullRecordOut(BaseModel):
    name: str
    state: PullState
    status: str  # the last progress status ("queued", "pulling 1a2b3c4d5e6f", "paused", ...)
    total: int = 0
    completed: int = 0
    error: str | None = None
    interrupted: bool = False  # the daemon stopped while it was running
    updated_at: str = ""


class PullListResponse(BaseModel):
    pulls: list[PullRecordOut]


class PruneResponse(BaseModel):
    removed: list[str]  # digests of the deleted blobs
    freed: int
    skipped_reason: str | None = None
    prompt_cache_files: int = 0  # ours: files cleared from the prompt cache on disk
    prompt_cache_freed: int = 0  # and their bytes


class PromptCacheResponse(BaseModel):
    """The prompt cache on disk (``GET /api/prompt-cache``): what it holds, and the most it
    may (0: off)."""

    files: int
    bytes: int
    limit_bytes: int


class PromptCacheCleared(BaseModel):
    """What ``DELETE /api/prompt-cache`` removed."""

    files: int
    freed: int


class VerifyProblem(BaseModel):
    digest: str
    models: list[str]


class VerifyResponse(BaseModel):
    ok: bool
    checked: int
    corrupt: list[VerifyProblem]
    missing: list[VerifyProblem]
    unreadable_manifests: list[str]
