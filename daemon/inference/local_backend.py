"""The local backend: a job resolved in the store, rendered (``prompts``), run on a leased
runner of the scheduler's."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar, cast

from anyio import to_thread

from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference.generation import Finished, Generation, primed
from localllm.daemon.inference.history_fit import certainly_fits, fit_history, reply_room
from localllm.daemon.inference.jobs import (
    Embeddings,
    EmbedJob,
    GenerationJob,
    Rerankings,
    RerankJob,
)
from localllm.daemon.inference.options import merge_options, runner_options, sampling_params
from localllm.daemon.inference.prompts import Prompts
from localllm.daemon.inference.recommended import RecommendedSampling
from localllm.daemon.inference.resolve import ResolvedModel, resolve_model, with_draft
from localllm.daemon.inference.schema_bounds import check_schema_bounds
from localllm.daemon.inference.thinking import ThinkingFormat, VocabularyFormats, parse_think
from localllm.daemon.inference.thinking_run import ThinkingRun, thinking_run
from localllm.daemon.inference.tool_call_parser import ToolCallParser
from localllm.daemon.inference.tool_calls import forced_tool_schema
from localllm.daemon.runners.types import (
    DoneEvent,
    EmbedCall,
    GenerateCall,
    RerankCall,
    RunnerCrashed,
    SamplingParams,
)
from localllm.daemon.scheduler import Lease, Runner, Scheduler
from localllm.daemon.settings import Settings
from localllm.model_registry.store import Store

__all__ = ["LocalBackend"]

_Reply = TypeVar("_Reply")  # what a runner call answers (embeddings, scores)


class LocalBackend:
    """Models in the store, run by the scheduler's runners."""

    def __init__(
        self,
        store: Store,
        scheduler: Scheduler,
        settings: Settings,
        on_finished: Callable[[str, Finished], None] | None = None,
    ):
        self.store = store
        self.scheduler = scheduler
        self.settings = settings
        self._on_finished = on_finished
        self._prompts = Prompts()
        self._vocabularies = VocabularyFormats()
        self._recommended = RecommendedSampling()

    def close(self) -> None:
        self._prompts.close()

    def resolve(self, name: str) -> ResolvedModel:
        return resolve_model(self.store, name)

    async def generate(self, job: GenerationJob) -> Generation:
        """Start generating; returns once the first token (or an error) is there."""
        started = time.perf_counter()
        model = self._generator(job)
        recommended = await self._recommended.of(model)
        options = merge_options(recommended, model.params, job.options)
        schema = await _bounded_schema(job)
        params = self._sampling(job, schema, options, _template_stops(model, job))
        request, fmt = await self._prompts.call(model, job, params)
        lease = await self._lease(model, options, job.keep_alive)
        truncation = None
        try:
            context = lease.info.n_ctx
            room = reply_room(options, context)
            fits = certainly_fits(request.prompt, bool(request.images), context, room)
            if job.truncate and job.messages and not fits:
                count = functools.partial(self._count_on, model, lease)
                job, truncation = await fit_history(job, context, room, count)
                if truncation is not None:
                    request, fmt = await self._prompts.call(model, job, params)
            thinking = await self._thinking(model, job, fmt, options, request, lease)
        except BaseException as error:
            lease.release(crashed=isinstance(error, RunnerCrashed))
            raise
        generation = Generation(
            model.name,
            lease,
            lease.runner.generate(thinking.first_call() if thinking else request),
            started=started,
            loaded=time.perf_counter(),
            tool_filter=self._tool_filter(job),
            thinking=thinking,
            on_finished=self._on_finished,
            truncation=truncation,
        )
        return await primed(generation)

    async def count_tokens(self, job: GenerationJob) -> int:
        """The prompt tokens ``job`` takes, images included: its prompt is rendered and put
        to its model's runner as a generation of no tokens, so the count is the very one a
        generation reports (``Finished.usage.prompt_tokens``)."""
        model = self._generator(job)
        options = merge_options(model.params, job.options)
        request, _ = await self._prompts.call(model, job, SamplingParams(max_tokens=0))
        lease = await self._lease(model, options, job.keep_alive)
        crashed = False
        try:
            return await _counted(model.name, lease, request)
        except RunnerCrashed:
            crashed = True
            raise
        finally:
            lease.release(crashed=crashed)

    async def _count_on(self, model: ResolvedModel, lease: Lease, job: GenerationJob) -> int:
        """``job``'s prompt tokens, counted by the leased runner (nothing is generated)."""
        request, _ = await self._prompts.call(model, job, SamplingParams(max_tokens=0))
        return await _counted(model.name, lease, request)

    async def load(self, name: str, options: Mapping[str, object], keep_alive: float | None) -> str:
        """Load ``name`` (or keep it loaded) without generating; returns its display name."""
        model = self.resolve(name)
        lease = await self._lease(model, merge_options(model.params, options), keep_alive)
        lease.release()
        return model.name

    async def unload(self, name: str) -> str:
        """Unload ``name`` now, or once its running requests finish; returns its name."""
        model = self.resolve(name)
        await self.scheduler.unload(model.name)
        return model.name

    async def embed(self, job: EmbedJob) -> Embeddings:
        model = self.resolve(job.model)
        if model.reranker:
            raise BadRequestError(f"model {model.name!r} is a reranker; use /api/rerank")
        call = EmbedCall(tuple(job.inputs), True, job.truncate)
        result = await self._on_runner(
            model, job.options, job.keep_alive, lambda runner: runner.embed(call)
        )
        vectors = [list(vector) for vector in result.embeddings]
        return Embeddings(model.name, vectors, result.prompt_tokens)

    async def rerank(self, job: RerankJob) -> Rerankings:
        """Each document's relevance score to the query, from a reranker model."""
        model = self.resolve(job.model)
        if not model.reranker:
            kind = "an embedding model" if model.embedding_only else "a chat model"
            raise BadRequestError(
                f"model {model.name!r} is {kind}, not a reranker; name a reranker such as "
                "bge-reranker:m3 (`localllm pull bge-reranker:m3`)",
                param="model",
            )
        call = RerankCall(job.query, tuple(job.documents), job.truncate)
        result = await self._on_runner(
            model, job.options, job.keep_alive, lambda runner: runner.rerank(call)
        )
        return Rerankings(model.name, result.scores, result.prompt_tokens, result.truncated)

    async def _on_runner(
        self,
        model: ResolvedModel,
        options: Mapping[str, object],
        keep_alive: float | None,
        run: Callable[[Runner], Awaitable[_Reply]],
    ) -> _Reply:
        """``run(runner)`` on a leased runner of ``model``."""
        lease = await self._lease(model, merge_options(model.params, options), keep_alive)
        crashed = False
        try:
            return await run(lease.runner)
        except RunnerCrashed:
            crashed = True
            raise
        finally:
            lease.release(crashed=crashed)

    def _generator(self, job: GenerationJob) -> ResolvedModel:
        """The job's model, if it can do what the job asks."""
        model = self.resolve(job.model)
        if model.embedding_only:
            kind = "a reranker" if model.reranker else "an embedding model"
            raise BadRequestError(f"model {model.name!r} is {kind}; it cannot generate")
        if job.images and model.target.projector_path is None:
            raise BadRequestError(
                f"model {model.name!r} does not support images (it has no vision projector)",
                param="images",
            )
        return model

    async def _lease(
        self, model: ResolvedModel, options: Mapping[str, object], keep_alive: float | None
    ) -> Lease:
        runner_opts = runner_options(options, self.settings, model.context_length)
        target = with_draft(self.store, model.target, options.get("draft"))
        return await self.scheduler.acquire(target, runner_opts, keep_alive)

    # -- thinking ---------------------------------------------------------------------------
    async def _thinking(
        self,
        model: ResolvedModel,
        job: GenerationJob,
        fmt: ThinkingFormat | None,
        options: Mapping[str, object],
        request: GenerateCall,
        lease: Lease,
    ) -> ThinkingRun | None:
        """How this generation thinks; the vocabulary tells where the template does not."""
        if not job.templated:
            return None
        if fmt is None:
            runner = lease.runner
            tokenize = lambda text: runner.tokenize(text, False, True)  # noqa: E731
            fmt = await self._vocabularies.get(model.target.model_paths, tokenize)
        budget = job.think_budget if job.think_budget is not None else options.get("think_budget")
        think = parse_think(job.think)
        if fmt is None and job.think_optional:
            think, budget = None, None  # a model that cannot think simply answers
        return thinking_run(model.name, fmt, think, budget, request)

    # -- sampling ---------------------------------------------------------------------------
    def _sampling(
        self,
        job: GenerationJob,
        schema: Mapping[str, object] | None,
        options: Mapping[str, object],
        stops: tuple[str, ...],
    ) -> SamplingParams:
        params = sampling_params(
            options,
            json_schema=json.dumps(schema) if schema is not None else None,
            logit_bias=dict(job.logit_bias) or None,
            logprobs=job.logprobs,
        )
        return dataclasses.replace(params, stop=(*params.stop, *stops)) if stops else params

    def _tool_filter(self, job: GenerationJob) -> ToolCallParser | None:
        if not job.tools or job.tool_choice.mode == "none":
            return None
        functions = [cast(Mapping[str, object], t.get("function") or {}) for t in job.tools]
        return ToolCallParser([str(f.get("name")) for f in functions])  # a request's JSON


async def _bounded_schema(job: GenerationJob) -> Mapping[str, object] | None:
    """The JSON schema the answer must match (the requested format, or a forced tool call's),
    measured in a worker thread before a runner builds its grammar (``schema_bounds``)."""
    schema = job.json_schema
    what, param = "the JSON schema of the response format", "response_format"
    if job.tool_choice.forced and job.tools:
        if schema is not None:
            raise BadRequestError("response_format cannot be combined with a forced tool call")
        schema = forced_tool_schema(job.tools, job.tool_choice)
        what, param = "the forced tool call's schema (its tools' parameters)", "tools"
    elif job.tool_choice.forced:
        raise BadRequestError("tool_choice requires tools", param="tool_choice")
    if schema is not None:
        await to_thread.run_sync(check_schema_bounds, schema, what, param)
    return schema


async def _counted(name: str, lease: Lease, request: GenerateCall) -> int:
    """The prompt tokens of ``request``: put to the runner as a generation of no tokens."""
    async with contextlib.aclosing(lease.runner.generate(request)) as events:
        async for event in events:
            if isinstance(event, DoneEvent):
                return event.prompt_tokens
    raise RunnerCrashed(f"the runner for {name} ended a token count early")


def _template_stops(model: ResolvedModel, job: GenerationJob) -> tuple[str, ...]:
    """The fallback template's end marker, when the prompt is rendered with it."""
    if job.template or (job.messages is None and not job.templated):
        return ()
    return model.fallback_stops
