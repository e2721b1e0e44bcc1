"""The one path from a request to tokens: choose the request's ``Backend`` once (a remote's,
when its model names one; the local one otherwise), then let it resolve, render, lease and
generate.

The OpenAI routes (and the native ones) translate their wire format into a
``GenerationJob`` or ``EmbedJob`` and back; none of them talks to the scheduler, the store or
a runner on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from localllm.daemon.inference.backend import Backend
from localllm.daemon.inference.generation import Finished, GenerationStream
from localllm.daemon.inference.jobs import (
    Embeddings,
    EmbedJob,
    GenerationJob,
    Rerankings,
    RerankJob,
)
from localllm.daemon.inference.local_backend import LocalBackend
from localllm.daemon.inference.options import merge_options, runner_options
from localllm.daemon.inference.resolve import ResolvedModel, RunSettings
from localllm.daemon.scheduler import Scheduler
from localllm.daemon.settings import Settings
from localllm.model_registry.store import Store

if TYPE_CHECKING:  # remotes build on inference's types; the daemon passes them in
    from localllm.daemon.remotes import Remotes

__all__ = ["Inference"]


class Inference:
    def __init__(
        self,
        store: Store,
        scheduler: Scheduler,
        settings: Settings,
        *,
        on_finished: Callable[[str, Finished], None] | None = None,
        remotes: Remotes | None = None,
    ):
        self.store = store
        self.remotes = remotes
        self.scheduler = scheduler
        self.settings = settings
        self._on_finished = on_finished
        self.local = LocalBackend(store, scheduler, settings, on_finished)

    def close(self) -> None:
        self.local.close()

    def resolve(self, name: str) -> ResolvedModel:
        return self.local.resolve(name)

    def backend(self, model: str) -> Backend:
        """Where ``model`` runs: the one place a request's model is matched to a remote."""
        found = self.remotes.match(model) if self.remotes is not None else None
        if found is None or self.remotes is None:
            return self.local
        return self.remotes.backend(found, self._on_finished)

    async def generate(self, job: GenerationJob) -> GenerationStream:
        """Start generating; returns once the first token (or an error) is there. A model
        that names a remote is generated there, behind the same ``GenerationStream``."""
        return await self.backend(job.model).generate(job)

    async def count_tokens(self, job: GenerationJob) -> int:
        """The prompt tokens ``job`` takes, counted by its local model's runner."""
        return await self.local.count_tokens(job)

    async def load(self, name: str, options: Mapping[str, object], keep_alive: float | None) -> str:
        """Load ``name`` (or keep it loaded) without generating; returns its display name.
        A remote's model is always ready: nothing to load."""
        return await self.backend(name).load(name, options, keep_alive)

    async def run_settings(self, model: ResolvedModel) -> RunSettings:
        """How ``model`` runs for a request that sets no load options (for ``show``)."""
        options = runner_options(merge_options(model.params), self.settings, model.context_length)
        parallel, choice = await self.scheduler.sizes(model.target, options)
        reason = choice.reason
        if reason.endswith("num_ctx"):  # set, not sized: say by whom
            own = "num_ctx" in model.params
            source = "the model's num_ctx parameter" if own else "LOCALLLM_CONTEXT_LENGTH"
            reason = reason.removesuffix("num_ctx") + source
        slots = parallel.reason.replace("num_parallel", "LOCALLLM_NUM_PARALLEL")
        return RunSettings(
            choice.num_ctx,
            reason,
            parallel.num_parallel,
            options.kv_cache_type,
            options.flash_attention,
            slots,
        )

    async def unload(self, name: str) -> str:
        """Unload ``name`` now, or once its running requests finish; returns its name."""
        return await self.backend(name).unload(name)

    async def embed(self, job: EmbedJob) -> Embeddings:
        return await self.backend(job.model).embed(job)

    async def rerank(self, job: RerankJob) -> Rerankings:
        """Each document's relevance score to the query, from a reranker model (or the
        remote that serves the model)."""
        return await self.backend(job.model).rerank(job)
