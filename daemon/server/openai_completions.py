"""``POST /v1/completions``: OpenAI's legacy text completions onto the one inference path."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from starlette.responses import Response

from daemon.api import Completion, CompletionChoice, CompletionRequest
from daemon.generation import Delta, Generation
from daemon.inference import Inference
from daemon.server.errors import stream_error
from daemon.server.openai_translate import completion_job, completion_logprobs, usage_out
from daemon.server.sse import DONE, EventStream, sse_data, until_disconnect

__all__ = ["router"]

router = APIRouter()


@router.post("/v1/completions", response_model=None)
async def completions(body: CompletionRequest, request: Request) -> Response | Completion:
    inference: Inference = request.app.state.inference
    job = completion_job(body)
    generation = await until_disconnect(request, inference.generate(job))
    request.state.generation = generation
    head = Completion(
        id=f"cmpl-{secrets.token_hex(12)}",
        created=int(time.time()),
        model=generation.model,
        choices=[],
    )
    echo = job.prompt if body.echo and job.prompt else ""
    if body.stream:
        usage = bool(body.stream_options and body.stream_options.get("include_usage"))
        events = _stream(generation, head, echo, usage, body.logprobs is not None)
        return EventStream(events, on_close=generation.aclose)
    try:
        return await until_disconnect(
            request, _collect(generation, head, echo, body.logprobs is not None)
        )
    finally:
        await generation.aclose()


async def _collect(
    generation: Generation, head: Completion, echo: str, logprobs: bool
) -> Completion:
    result = await generation.collect()
    choice = CompletionChoice(
        text=echo + result.text,
        finish_reason=result.finished.reason,
        logprobs=completion_logprobs(result.logprobs, len(echo)) if logprobs else None,
    )
    usage = usage_out(result.finished.usage)
    return head.model_copy(update={"choices": [choice], "usage": usage})


async def _stream(
    generation: Generation, head: Completion, echo: str, include_usage: bool, logprobs: bool
) -> AsyncIterator[bytes]:
    offset = len(echo)
    if echo:
        yield sse_data(_chunk(head, CompletionChoice(text=echo)))
    try:
        async for item in generation:
            if isinstance(item, Delta):
                lp = completion_logprobs(item.logprobs, offset) if logprobs else None
                offset += len(item.text)
                if item.text or lp:
                    yield sse_data(_chunk(head, CompletionChoice(text=item.text, logprobs=lp)))
                continue
            yield sse_data(_chunk(head, CompletionChoice(text="", finish_reason=item.reason)))
            if include_usage:
                yield sse_data(head.model_copy(update={"usage": usage_out(item.usage)}))
    except Exception as error:  # headers are sent: the error travels as an event
        yield stream_error(error)
        return
    yield DONE


def _chunk(head: Completion, choice: CompletionChoice) -> Completion:
    return head.model_copy(update={"choices": [choice]})
