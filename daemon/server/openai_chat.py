"""``POST /v1/chat/completions``: OpenAI chat onto the one inference path."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from starlette.responses import Response

from daemon.api import (
    ChatChoice,
    ChatChunkChoice,
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChatDelta,
    ChatResponseMessage,
)
from daemon.generation import Delta, Finished, Generation
from daemon.inference import Inference
from daemon.server.errors import stream_error
from daemon.server.openai_translate import chat_job, chat_logprobs, tool_calls_out, usage_out
from daemon.server.sse import DONE, EventStream, sse_data, until_disconnect

__all__ = ["router"]

router = APIRouter()


@router.post("/v1/chat/completions", response_model=None)
async def chat_completions(
    body: ChatCompletionRequest, request: Request
) -> Response | ChatCompletion:
    inference: Inference = request.app.state.inference
    job = chat_job(body)
    generation = await until_disconnect(request, inference.generate(job))
    request.state.generation = generation
    ids = _Ids(f"chatcmpl-{secrets.token_hex(12)}", int(time.time()), generation.model)
    if body.stream:
        usage = bool(body.stream_options and body.stream_options.include_usage)
        events = _stream(generation, ids, usage, body.logprobs or False)
        return EventStream(events, on_close=generation.aclose)
    try:
        return await until_disconnect(request, _collect(generation, ids, body.logprobs or False))
    finally:
        await generation.aclose()


class _Ids:
    def __init__(self, id: str, created: int, model: str):
        self.id, self.created, self.model = id, created, model

    def chunk(self, **choice) -> ChatCompletionChunk:
        return ChatCompletionChunk(
            id=self.id, created=self.created, model=self.model, choices=[ChatChunkChoice(**choice)]
        )


async def _collect(generation: Generation, ids: _Ids, logprobs: bool) -> ChatCompletion:
    result = await generation.collect()
    finished = result.finished
    calls = tool_calls_out(finished.tool_calls) or None
    message = ChatResponseMessage(content=None if calls else result.text, tool_calls=calls)
    choice = ChatChoice(
        message=message,
        finish_reason=finished.reason,
        logprobs=chat_logprobs(result.logprobs) if logprobs else None,
    )
    return ChatCompletion(
        id=ids.id,
        created=ids.created,
        model=ids.model,
        choices=[choice],
        usage=usage_out(finished.usage),
    )


async def _stream(
    generation: Generation, ids: _Ids, include_usage: bool, logprobs: bool
) -> AsyncIterator[bytes]:
    yield sse_data(ids.chunk(delta=ChatDelta(role="assistant", content="")))
    try:
        async for item in generation:
            if isinstance(item, Delta):
                if item.text or (logprobs and item.logprobs):
                    lp = chat_logprobs(item.logprobs) if logprobs else None
                    yield sse_data(ids.chunk(delta=ChatDelta(content=item.text), logprobs=lp))
                continue
            if item.tool_calls:
                calls = tool_calls_out(item.tool_calls, stream=True)
                yield sse_data(ids.chunk(delta=ChatDelta(tool_calls=calls)))
            yield sse_data(ids.chunk(delta=ChatDelta(), finish_reason=item.reason))
            if include_usage:
                yield sse_data(_usage_chunk(ids, item))
    except Exception as error:  # headers are sent: the error travels as an event
        yield stream_error(error)
        return
    yield DONE


def _usage_chunk(ids: _Ids, finished: Finished) -> ChatCompletionChunk:
    return ChatCompletionChunk(
        id=ids.id, created=ids.created, model=ids.model, choices=[], usage=usage_out(finished.usage)
    )
