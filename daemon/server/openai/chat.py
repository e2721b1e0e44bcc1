"""``POST /v1/chat/completions``: OpenAI chat onto the one inference path."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from fastapi import APIRouter, Request
from pydantic import BaseModel
from starlette.responses import Response

from localllm.daemon.api import (
    ChatChoice,
    ChatChunkChoice,
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChatDelta,
    ChatLogprobs,
    ChatResponseMessage,
)
from localllm.daemon.inference import Collected, Delta, Finished, GenerationStream
from localllm.daemon.server.openai.translate import (
    chat_job,
    chat_logprobs,
    tool_call_chunks,
    tool_calls_out,
    usage_out,
)
from localllm.daemon.server.respond import SSE, respond
from localllm.daemon.server.sse import sse_data

__all__ = ["router"]

router = APIRouter()


# A stream, or the whole answer as a ChatCompletion (``respond`` types it as any model).
@router.post("/v1/chat/completions", response_model=None)
async def chat_completions(body: ChatCompletionRequest, request: Request) -> Response | BaseModel:
    shape = _Shape(
        f"chatcmpl-{secrets.token_hex(12)}",
        int(time.time()),
        include_usage=bool(body.stream_options and body.stream_options.include_usage),
        logprobs=body.logprobs or False,
    )
    return await respond(
        request,
        chat_job(body),
        stream=body.stream,
        chunks=shape.chunks,
        whole=shape.whole,
        wire=SSE,
    )


@dataclass(frozen=True, slots=True)
class _Shape:
    """One answer's id and options, and the chunks and whole answer built from them."""

    id: str
    created: int
    include_usage: bool
    logprobs: bool

    def chunk(
        self,
        model: str,
        delta: ChatDelta,
        finish_reason: str | None = None,
        logprobs: ChatLogprobs | None = None,
    ) -> ChatCompletionChunk:
        choice = ChatChunkChoice(delta=delta, finish_reason=finish_reason, logprobs=logprobs)
        return ChatCompletionChunk(id=self.id, created=self.created, model=model, choices=[choice])

    def whole(self, generation: GenerationStream, result: Collected) -> ChatCompletion:
        finished = result.finished
        calls = tool_calls_out(finished.tool_calls) or None
        content = (result.text or None) if calls else result.text
        message = ChatResponseMessage(
            content=content, reasoning_content=result.thinking or None, tool_calls=calls
        )
        choice = ChatChoice(
            message=message,
            finish_reason=finished.reason,
            logprobs=chat_logprobs(result.logprobs) if self.logprobs else None,
        )
        return ChatCompletion(
            id=self.id,
            created=self.created,
            model=generation.model,
            choices=[choice],
            usage=usage_out(finished.usage),
        )

    async def chunks(self, generation: GenerationStream) -> AsyncIterator[bytes]:
        model = generation.model
        yield sse_data(self.chunk(model, delta=ChatDelta(role="assistant", content="")))
        async for item in generation:
            if isinstance(item, Delta):
                for chunk in self._delta_chunks(model, item):
                    yield sse_data(chunk)
                continue
            yield sse_data(self.chunk(model, delta=ChatDelta(), finish_reason=item.reason))
            if self.include_usage:
                yield sse_data(self._usage_chunk(model, item))

    def _delta_chunks(self, model: str, item: Delta) -> list[ChatCompletionChunk]:
        """Reasoning and content (with its logprobs, if asked for) first, then each tool-call
        piece in a chunk of its own, as OpenAI sends them."""
        logprobs = chat_logprobs(item.logprobs) if self.logprobs else None
        chunks = []
        if item.text or item.thinking or logprobs:
            delta = ChatDelta(
                content=item.text if item.text or not item.thinking else None,
                reasoning_content=item.thinking or None,
            )
            chunks.append(self.chunk(model, delta=delta, logprobs=logprobs))
        for call in tool_call_chunks(item.tool_calls):
            chunks.append(self.chunk(model, delta=ChatDelta(tool_calls=[call])))
        return chunks

    def _usage_chunk(self, model: str, finished: Finished) -> ChatCompletionChunk:
        usage = usage_out(finished.usage)
        return ChatCompletionChunk(
            id=self.id, created=self.created, model=model, choices=[], usage=usage
        )
