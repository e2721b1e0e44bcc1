"""What the scheduler knows about a model: the request side (target, options) and the loaded side.

A ``LoadedModel`` is plain bookkeeping (ref count, keep-alive expiry, slots, last use); the
decisions about it are all made in ``Scheduler``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from localllm.daemon.runners.types import (
    DEFAULT_DRAFT,
    BackendSampling,
    DoneEvent,
    EmbedCall,
    FlashAttention,
    GenerateCall,
    KvCacheType,
    LoraAdapter,
    RerankCall,
    RunnerInfo,
    RunnerSpec,
    TokenEvent,
)
from localllm.daemon.scheduler.memory import ModelFootprint
from localllm.daemon.scheduler.memory_plan import MemoryPlan
from localllm.model_registry.model_shape import ModelShape

if TYPE_CHECKING:  # the runner process module is imported where runners start
    from localllm.daemon.runners.process import EmbedReply, RerankReply

__all__ = [
    "LoadTarget",
    "LoadedModel",
    "ModelStatus",
    "PromptCacheUse",
    "Runner",
    "RunnerFactory",
    "RunnerOptions",
    "TargetShapes",
]


class Runner(Protocol):
    """The part of ``RunnerProcess`` the scheduler and inference rely on."""

    info: RunnerInfo

    @property
    def alive(self) -> bool: ...

    def generate(self, request: GenerateCall) -> AsyncGenerator[TokenEvent | DoneEvent]: ...

    async def embed(self, request: EmbedCall) -> EmbedReply: ...

    async def rerank(self, request: RerankCall) -> RerankReply: ...

    async def tokenize(
        self, text: str, add_bos: bool = True, special: bool = True
    ) -> list[int]: ...

    async def stop(self) -> None: ...

    def last_log_lines(self, n: int = 20) -> list[str]: ...


RunnerFactory = Callable[[RunnerSpec, Path | None], Awaitable[Runner]]

if TYPE_CHECKING:  # the type checker holds the real runner to this protocol
    from localllm.daemon.runners.process import RunnerProcess

    _RUNNER_PROCESS_IS_A_RUNNER: type[Runner] = RunnerProcess


@dataclass(frozen=True, slots=True)
class TargetShapes:
    """The shapes of everything a target loads (``model_registry.model_shape``)."""

    model: ModelShape
    draft: ModelShape | None = None
    projector: ModelShape | None = None
    loras: tuple[ModelShape, ...] = ()


@dataclass(frozen=True, slots=True)
class LoadTarget:
    """A model resolved from the store: which files, and the numbers that size it (the
    store's summary; the memory plan reads the files' headers: ``planner``)."""

    name: str  # display name; the scheduler's key
    model_paths: tuple[str, ...]
    footprint: ModelFootprint
    projector_path: str | None = None
    adapters: tuple[LoraAdapter, ...] = ()  # a model's LoRA adapters load with its weights
    draft_name: str | None = None  # the draft model of speculative decoding (DRAFT or `draft`)
    draft_paths: tuple[str, ...] = ()  # its weights; another draft means a reload
    embedding_only: bool = False
    n_ctx_train: int | None = None
    # its shapes known already, where there are no files to read them from (a quant on the
    # hub, from its headers); None: read from the files
    shapes: TargetShapes | None = None


@dataclass(frozen=True, slots=True)
class RunnerOptions:
    """Per-request options that decide how a runner is started (a change means a reload),
    and whether it is started where its plan does not fit (``load_anyway``: no reload)."""

    num_ctx: int = 4096  # 0: sized at load from free memory (``context_size``)
    num_parallel: int = 4  # 0: chosen at load (``parallel``)
    num_gpu: int | None = None  # None: choose from free VRAM; -1: all layers
    num_cpu_moe: int | None = None  # a MoE model's layers whose experts stay in RAM; -1: all
    num_threads: int | None = None
    num_batch: int = 512
    kv_cache_type: KvCacheType = "f16"
    flash_attention: FlashAttention = "auto"
    backend_sampling: BackendSampling = "auto"  # sampling in llama.cpp's graph
    host_cache_bytes: int = 0
    prompt_cache_dir: str | None = None  # the prompt cache on disk; None: off
    prompt_cache_bytes: int = 0  # the most it holds, for all runners together
    num_draft: int = DEFAULT_DRAFT  # speculative decoding's most guessed tokens per step; 0: off
    load_anyway: bool = False  # load even where the memory plan does not fit (``refusal``)
    deterministic: bool = False  # one slot, flash attention off, resumed after whole batches


@dataclass(frozen=True, slots=True)
class PromptCacheUse:
    """What a loaded model's runner read back from the prompt cache on disk since it loaded
    (``/api/ps``), summed from its requests' ``DoneEvent``."""

    hits: int = 0  # requests that resumed their prompt from a file
    tokens: int = 0  # prompt tokens restored
    bytes_read: int = 0
    restore_seconds: float = 0.0  # reading, checking and restoring

    def plus(self, done: DoneEvent) -> PromptCacheUse:
        return PromptCacheUse(
            hits=self.hits + (1 if done.prompt_disk_tokens > 0 else 0),
            tokens=self.tokens + done.prompt_disk_tokens,
            bytes_read=self.bytes_read + done.prompt_disk_bytes,
            restore_seconds=self.restore_seconds + done.prompt_disk_seconds,
        )


@dataclass(frozen=True, slots=True)
class ModelStatus:
    """One loaded model as ``/api/ps``, ``/metrics`` and the load log see it."""

    name: str
    spec: RunnerSpec
    info: RunnerInfo
    processor: str  # "100% CPU", "100% GPU", "25%/75% CPU/GPU"
    estimate_bytes: int
    active: int  # requests holding the model
    busy_slots: int  # requests generating right now
    expires_in: float | None  # seconds until unloaded when idle; None: kept forever
    context_reason: str = "num_ctx"  # why its context is as long as it is
    parallel_reason: str = "num_parallel"  # why it has as many slots as it has
    draining: bool = False  # a waiting load needs it unloaded: it takes no new requests
    memory: MemoryPlan | None = None  # what it was planned to take (``estimate_bytes``'s parts)
    prompt_cache: PromptCacheUse = PromptCacheUse()  # read from disk since it loaded


@dataclass(eq=False)
class LoadedModel:
    name: str
    spec: RunnerSpec
    runner: Runner
    processor: str
    estimate_bytes: int
    keep_alive: float
    last_used: float
    refs: int = 0
    busy: int = 0
    stale: bool = False  # asked to reload with other options: take no new requests
    draining: bool = False  # a waiting load needs it unloaded: take no new requests
    expires_at: float | None = None
    requested: RunnerSpec | None = None  # the spec asked for, before GPU placement changed it
    context_reason: str = "num_ctx"  # why its context is as long as it is (``context_size``)
    parallel_reason: str = "num_parallel"  # why it has as many slots as it has (``parallel``)
    memory: MemoryPlan | None = None  # its memory plan, part by part (``memory_plan``)
    prompt_cache: PromptCacheUse = field(default_factory=PromptCacheUse)
    slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(1))
    # the tasks of the requests that hold it (``refs`` of them in all): one that waits for
    # a load can never let go while that load waits for this model to drain
    holders: Counter[asyncio.Task[object] | None] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.slots = asyncio.Semaphore(max(1, self.spec.num_parallel))

    @property
    def usable(self) -> bool:
        """Whether a new request may take it."""
        return not self.stale and not self.draining and self.runner.alive

    def take(self, holder: asyncio.Task[object] | None) -> None:
        """One more request (run by ``holder``) holds the model: it cannot expire."""
        self.refs += 1
        self.holders[holder] += 1
        self.expires_at = None

    def let_go(self, holder: asyncio.Task[object] | None) -> None:
        self.refs -= 1
        self.holders[holder] -= 1
        if self.holders[holder] <= 0:
            del self.holders[holder]

    def status(self, now: float) -> ModelStatus:
        expires_in = None if self.expires_at is None else max(0.0, self.expires_at - now)
        return ModelStatus(
            self.name,
            self.spec,
            self.runner.info,
            self.processor,
            self.estimate_bytes,
            self.refs,
            self.busy,
            expires_in,
            self.context_reason,
            self.parallel_reason,
            self.draining,
            self.memory,
            self.prompt_cache,
        )
