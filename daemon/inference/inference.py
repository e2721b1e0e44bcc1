"""The one path from a request to tokens: resolve the model, lease it, render, generate.

The OpenAI routes (and the native ones) translate their wire format into a
``GenerationJob`` or ``EmbedJob`` and back; none of them talks to the scheduler, the store or
a runner on its own.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from daemon.errors import (
    BadRequestError,
    TemplateError,
    TemplateRejectedError,
)
from daemon.inference.generation import Finished, Generation
from daemon.inference.image_cache import ImageCache
from daemon.inference.images import prepare_images
from daemon.inference.options import merge_options, runner_options, sampling_params
from daemon.inference.resolve import ResolvedModel, resolve_model
from daemon.inference.templates import (
    TemplateCache,
    assemble_messages,
    continued_reply,
    image_part,
)
from daemon.inference.thinking import (
    ThinkingFormat,
    VocabularyFormats,
    detect_format,
    history_for_template,
    parse_think,
    template_variables,
)
from daemon.inference.thinking_run import ThinkingRun, thinking_run
from daemon.inference.tool_call_parser import ToolCallParser
from daemon.inference.tool_calls import (
    ToolChoice,
    forced_tool_schema,
    with_tool_prompt,
)
from daemon.runners.types import EmbedCall, GenerateCall, RunnerCrashed
from daemon.scheduler import Lease, Scheduler
from daemon.settings import Settings
from model_registry.store import Store

__all__ = ["EmbedJob", "Embeddings", "GenerationJob", "Inference"]

_PICTURES_AT_ONCE = 2


@dataclass(frozen=True, slots=True)
class GenerationJob:
    """What to generate. Exactly one of ``messages`` (chat) or ``prompt`` is set.

    ``images`` are the pictures as the client sent them (PNG, JPEG... bytes), in the order the
    messages' image parts (``templates.image_part``) name them; with a ``prompt`` they come
    before its text."""

    model: str
    messages: Sequence[Mapping[str, object]] | None = None
    prompt: str | None = None
    raw: bool = False  # the prompt goes to the model as is (no template)
    options: Mapping[str, object] = field(default_factory=dict)  # Ollama option names
    tools: Sequence[Mapping[str, object]] = ()
    tool_choice: ToolChoice = field(default_factory=ToolChoice)
    json_schema: Mapping[str, object] | None = None  # output must match (grammar-enforced)
    logit_bias: Mapping[int, float] = field(default_factory=dict)
    logprobs: int | None = None  # None: off; n: top n alternatives per token
    keep_alive: float | None = None  # seconds; None: the daemon's default
    template: str | None = None  # replaces the model's chat template (Ollama's per-request one)
    images: Sequence[bytes] = ()
    # True/False, or an effort ("low", "medium", "high") for templates that take one; None:
    # the model's own default. Thinking never reaches ``Delta.text``.
    think: bool | str | None = None
    think_budget: int | None = None  # thinking tokens before the model is made to answer


@dataclass(frozen=True, slots=True)
class EmbedJob:
    model: str
    inputs: Sequence[str]
    options: Mapping[str, object] = field(default_factory=dict)
    truncate: bool = False
    keep_alive: float | None = None


@dataclass(frozen=True, slots=True)
class Embeddings:
    model: str
    vectors: list[list[float]]
    prompt_tokens: int


class Inference:
    def __init__(
        self,
        store: Store,
        scheduler: Scheduler,
        settings: Settings,
        *,
        on_finished: Callable[[str, Finished], None] | None = None,
    ):
        self.store = store
        self.scheduler = scheduler
        self.settings = settings
        self._templates = TemplateCache()
        self._on_finished = on_finished
        # Preparing a big picture takes a few hundred MB for a moment: a few at a time.
        self._picture_work = asyncio.Semaphore(_PICTURES_AT_ONCE)
        self._pictures = ImageCache()  # a chat resends its pictures every turn
        self._vocabularies = VocabularyFormats()

    def resolve(self, name: str) -> ResolvedModel:
        return resolve_model(self.store, name)

    async def generate(self, job: GenerationJob) -> Generation:
        """Start generating; returns once the first token (or an error) is there."""
        started = time.perf_counter()
        model = self.resolve(job.model)
        if model.embedding_only:
            raise BadRequestError(f"model {model.name!r} is an embedding model; it cannot generate")
        if job.images and model.target.projector_path is None:
            raise BadRequestError(
                f"model {model.name!r} does not support images (it has no vision projector)",
                param="images",
            )
        options = merge_options(model.params, job.options)
        think = parse_think(job.think)
        if job.raw and think is not None:
            raise BadRequestError("think needs the chat template; it cannot go with raw", "think")
        fmt = None if job.raw else detect_format(_template_source(model, job))
        marker = _image_marker() if job.images else ""
        prompt = self._prompt(model, job, marker, template_variables(think, fmt))
        params = self._sampling(job, options, _template_stops(model, job))
        images = await self._prepared_images(job.images, prompt, marker)
        request = GenerateCall(prompt, params, add_bos=True, images=images, image_marker=marker)
        lease = await self._lease(model, options, job.keep_alive)
        try:
            thinking = await self._thinking(model, job, fmt, options, request, lease)
        except BaseException:
            lease.release()
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
        )
        try:
            await generation.prime()
        except BaseException:
            await generation.aclose()
            raise
        return generation

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
        options = merge_options(model.params, job.options)
        lease = await self._lease(model, options, job.keep_alive)
        crashed = False
        try:
            result = await lease.runner.embed(EmbedCall(tuple(job.inputs), True, job.truncate))
        except RunnerCrashed:
            crashed = True
            raise
        finally:
            lease.release(crashed=crashed)
        vectors = [list(vector) for vector in result.embeddings]
        return Embeddings(model.name, vectors, result.prompt_tokens)

    async def _lease(
        self, model: ResolvedModel, options: Mapping[str, object], keep_alive: float | None
    ) -> Lease:
        runner_opts = runner_options(options, self.settings, model.context_length)
        return await self.scheduler.acquire(model.target, runner_opts, keep_alive)

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
        if job.raw:
            return None
        if fmt is None:
            runner = lease.runner
            tokenize = lambda text: runner.tokenize(text, False, True)  # noqa: E731
            fmt = await self._vocabularies.get(model.target.model_paths, tokenize)
        budget = job.think_budget if job.think_budget is not None else options.get("think_budget")
        return thinking_run(model.name, fmt, parse_think(job.think), budget, request)

    # -- prompt -----------------------------------------------------------------------------
    def _prompt(
        self,
        model: ResolvedModel,
        job: GenerationJob,
        image_marker: str,
        variables: Mapping[str, object],
    ) -> str:
        if job.messages is None:
            if job.prompt is None:
                raise BadRequestError("either messages or a prompt is required")
            if job.raw:
                return image_marker * len(job.images) + job.prompt
            messages: Sequence[Mapping[str, object]] = [_user_message(job.prompt, job.images)]
        else:
            messages = job.messages
        try:
            return self._render(model, job, messages, image_marker, variables)
        except TemplateError as error:
            if job.template is None or isinstance(error, TemplateRejectedError):
                raise
            raise BadRequestError(str(error), param="template") from None  # the client's own

    def _render(
        self,
        model: ResolvedModel,
        job: GenerationJob,
        messages: Sequence[Mapping[str, object]],
        image_marker: str,
        variables: Mapping[str, object],
    ) -> str:
        if job.template is not None:
            template = self._templates.get(job.template, "request")
        else:
            template = self._templates.get(model.template, model.template_origin)
        tools = list(job.tools) if job.tool_choice.mode != "none" else []
        conversation, reply_so_far = continued_reply(
            assemble_messages(
                history_for_template(messages),
                system=model.system,
                preset=model.messages,
                image_marker=image_marker,
            )
        )
        if tools and not template.supports_tools:
            conversation = with_tool_prompt(conversation, tools)
        tools = tools if template.supports_tools else ()
        prompt = template.render(conversation, tools=tools, variables=variables)
        return prompt + reply_so_far

    # -- pictures ---------------------------------------------------------------------------
    async def _prepared_images(
        self, images: Sequence[bytes], prompt: str, marker: str
    ) -> tuple[bytes, ...]:
        """The pictures as the runner gets them, once the prompt is known to place each one."""
        if not images:
            return ()
        _check_places(prompt, marker, len(images))
        async with self._picture_work:
            return await asyncio.to_thread(prepare_images, images, self._pictures)

    # -- sampling ---------------------------------------------------------------------------
    def _sampling(self, job: GenerationJob, options: Mapping[str, object], stops: tuple[str, ...]):
        schema = job.json_schema
        if job.tool_choice.forced and job.tools:
            if schema is not None:
                raise BadRequestError("response_format cannot be combined with a forced tool call")
            schema = forced_tool_schema(job.tools, job.tool_choice)
        elif job.tool_choice.forced:
            raise BadRequestError("tool_choice requires tools", param="tool_choice")
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
        return ToolCallParser([str((t.get("function") or {}).get("name")) for t in job.tools])


def _template_source(model: ResolvedModel, job: GenerationJob) -> str | None:
    return job.template if job.template is not None else model.template


def _template_stops(model: ResolvedModel, job: GenerationJob) -> tuple[str, ...]:
    """The fallback template's end marker, when the prompt is rendered with it."""
    if job.template or (job.messages is None and job.raw):
        return ()
    return model.fallback_stops


def _image_marker() -> str:
    """Where a picture goes in the prompt: new for each request, so no text can fake one."""
    return f"<__image_{secrets.token_hex(8)}__>"


def _user_message(prompt: str, images: Sequence[bytes]) -> dict[str, object]:
    """A bare prompt as the user's message; its pictures first, as Ollama puts them."""
    if not images:
        return {"role": "user", "content": prompt}
    parts = [image_part(i) for i in range(len(images))]
    return {"role": "user", "content": [*parts, {"type": "text", "text": prompt}]}


def _check_places(prompt: str, marker: str, count: int) -> None:
    found = prompt.count(marker)
    if found != count:
        what = "dropped" if found < count else "repeated"
        raise BadRequestError(
            f"the chat template {what} a picture: {count} sent, {found} in the prompt; "
            "the template must keep each message's content as it is",
            param="images",
        )
    if prompt.endswith(marker):  # a raw prompt: the model needs text to answer from
        raise BadRequestError(
            "the prompt must go on after its last picture; put text after it", param="prompt"
        )
