"""A job's prompt as its model's runner gets it: the chat template rendered (thinking
variables, tools, a continued reply), images placed and prepared.

A template that refuses system messages past the first place gets them folded in
(``late_system``). Templates render in worker threads, never on the event loop: a render may
take up to its budget's 2 s (``template_budget``), and every other request goes on meanwhile.

Generating and counting a prompt's tokens both go through ``Prompts.call``, so the prompt a
count measures is the one a generation sends.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from localllm.daemon.errors import BadRequestError, TemplateError, TemplateRejectedError
from localllm.daemon.inference.image_cache import ImageCache
from localllm.daemon.inference.images import prepare_images
from localllm.daemon.inference.jobs import GenerationJob
from localllm.daemon.inference.late_system import fold_late_system
from localllm.daemon.inference.resolve import ResolvedModel
from localllm.daemon.inference.system_part import system_part_chars
from localllm.daemon.inference.templates import (
    TemplateCache,
    assemble_messages,
    continued_reply,
    image_part,
)
from localllm.daemon.inference.thinking import (
    ThinkingFormat,
    detect_format,
    history_for_template,
    parse_think,
    template_variables,
)
from localllm.daemon.inference.tool_calls import with_tool_prompt
from localllm.daemon.runners.types import GenerateCall, SamplingParams

__all__ = ["Prompts"]

_IMAGES_AT_ONCE = 2
_RENDERS_AT_ONCE = 2


class Prompts:
    """Renders prompts (templates compiled once) and prepares their images."""

    def __init__(self) -> None:
        self._templates = TemplateCache()
        # Preparing a big image takes a few hundred MB for a moment: a few at a time.
        self._image_work = asyncio.Semaphore(_IMAGES_AT_ONCE)
        self._prepared = ImageCache()  # a chat resends its images every turn
        # A render stops itself within its budget; a thread cannot be stopped, so a cancelled
        # request's render keeps its worker until then, and runaway templates queue behind
        # each other instead of piling up threads.
        self._renders = ThreadPoolExecutor(_RENDERS_AT_ONCE, thread_name_prefix="template")

    def close(self) -> None:
        self._renders.shutdown(wait=False, cancel_futures=True)

    async def call(
        self, model: ResolvedModel, job: GenerationJob, params: SamplingParams
    ) -> tuple[GenerateCall, ThinkingFormat | None]:
        """The runner call for ``job``, and the thinking format its template shows (if any)."""
        if job.suffix is not None:
            return GenerateCall(job.prompt or "", params, suffix=job.suffix), None
        think = parse_think(job.think)
        if job.raw and think is not None:
            raise BadRequestError("think needs the chat template; it cannot go with raw", "think")
        fmt = None if job.raw else detect_format(_template_source(model, job))
        marker = _image_marker() if job.images else ""
        variables = template_variables(think, fmt)
        prompt, system_chars = await self._prompt(model, job, marker, variables)
        images = await self._prepared_images(job.images, prompt, marker)
        call = GenerateCall(
            prompt, params, add_bos=True, images=images, image_marker=marker,
            system_chars=system_chars,
        )  # fmt: skip
        return call, fmt

    # -- prompt -----------------------------------------------------------------------------
    async def _prompt(
        self,
        model: ResolvedModel,
        job: GenerationJob,
        image_marker: str,
        variables: Mapping[str, object],
    ) -> tuple[str, int]:
        """The prompt, and how many of its characters its system messages take
        (``system_part``)."""
        if job.messages is None:
            if job.prompt is None:
                raise BadRequestError("either messages or a prompt is required")
            if job.raw:
                return image_marker * len(job.images) + job.prompt, 0
            messages: Sequence[Mapping[str, object]] = [_user_message(job.prompt, job.images)]
        else:
            messages = job.messages
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(
                self._renders, self._render, model, job, messages, image_marker, variables
            )
        except TemplateRejectedError:
            raise
        except TemplateError as error:
            if job.template is not None:  # the client's own
                raise BadRequestError(str(error), param="template") from None
            raise type(error)(f"model {model.name!r}: {error}") from None

    def _render(
        self,
        model: ResolvedModel,
        job: GenerationJob,
        messages: Sequence[Mapping[str, object]],
        image_marker: str,
        variables: Mapping[str, object],
    ) -> tuple[str, int]:
        if job.template is not None:
            template = self._templates.get(job.template, "request")
        else:
            template = self._templates.get(model.template, model.template_origin)
        tools: Sequence[Mapping[str, object]] = (
            list(job.tools) if job.tool_choice.mode != "none" else []
        )
        conversation: Sequence[Mapping[str, object]]
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
        try:
            prompt = template.render(conversation, tools=tools, variables=variables)
        except TemplateRejectedError:
            folded = fold_late_system(conversation)
            if folded is None:
                raise
            conversation = folded
            prompt = template.render(conversation, tools=tools, variables=variables)
        head = system_part_chars(template, conversation, prompt, tools=tools, variables=variables)
        return prompt + reply_so_far, head

    # -- images ---------------------------------------------------------------------------
    async def _prepared_images(
        self, images: Sequence[bytes], prompt: str, marker: str
    ) -> tuple[bytes, ...]:
        """The images as the runner gets them, once the prompt is known to place each one."""
        if not images:
            return ()
        _check_places(prompt, marker, len(images))
        async with self._image_work:
            return await asyncio.to_thread(prepare_images, images, self._prepared)


def _template_source(model: ResolvedModel, job: GenerationJob) -> str | None:
    return job.template if job.template is not None else model.template


def _image_marker() -> str:
    """Where an image goes in the prompt: new for each request, so no text can fake one."""
    return f"<__image_{secrets.token_hex(8)}__>"


def _user_message(prompt: str, images: Sequence[bytes]) -> dict[str, object]:
    """A bare prompt as the user's message; its images first, as Ollama puts them."""
    if not images:
        return {"role": "user", "content": prompt}
    parts = [image_part(i) for i in range(len(images))]
    return {"role": "user", "content": [*parts, {"type": "text", "text": prompt}]}


def _check_places(prompt: str, marker: str, count: int) -> None:
    found = prompt.count(marker)
    if found != count:
        what = "dropped" if found < count else "repeated"
        raise BadRequestError(
            f"the chat template {what} an image: {count} sent, {found} in the prompt; "
            "the template must keep each message's content as it is",
            param="images",
        )
    if prompt.endswith(marker):  # a raw prompt: the model needs text to answer from
        raise BadRequestError(
            "the prompt must go on after its last image; put text after it", param="prompt"
        )
