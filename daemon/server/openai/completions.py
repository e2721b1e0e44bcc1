"""``POST /v1/completions``: OpenAI's legacy text completions onto the one inference path."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from fastapi import APIRouter, Request
from pydantic import BaseModel
from starlette.responses import Response

from localllm.daemon.api import Completion, CompletionChoice, CompletionRequest
from localllm.daemon.inference import Collected, Delta, GenerationStream
from localllm.daemon.server.openai.translate import completion_job, completion_logprobs, usage_out
from localllm.daemon.server.respond import SSE, respond
from localllm.daemon.server.sse import sse_data

__all__ = ["router"]

router = APIRouter()


# A stream, or the whole answer as a Completion (``respond`` types it as any model).
@router.post("/v1/completions", response_model=None)
async def completions(body: CompletionRequest, request: Request) -> Response | BaseModel:
    job = completion_job(body)
    shape = _Shape(
        id=f"cmpl-{secrets.token_hex(12)}",
        created=int(time.time()),
        echo=job.prompt if body.echo and job.prompt else "",
        include_usage=bool(body.stream_options and body.stream_options.get("include_usage")),
        logprobs=body.logprobs is not None,
    )
    return await respond(
        request, job, stream=body.stream, chunks=shape.chunks, whole=shape.whole, wire=SSE
    )


@dataclass(frozen=True, slots=True)
class _Shape:
    """One answer's id and options, and the chunks and whole answer built from them."""

    id: str
    created: int
    echo: str
    include_usage: bool
    logprobs: bool

    def head(self, generation: GenerationStream) -> Completion:
        return Completion(id=self.id, created=self.created, model=generation.model, choices=[])

    def whole(self, generation: GenerationStream, result: Collected) -> Completion:
        lp = completion_logprobs(result.logprobs, len(self.echo)) if self.logprobs else None
        choice = CompletionChoice(
            text=self.echo + result.text, finish_reason=result.finished.reason, logprobs=lp
        )
        usage = usage_out(result.finished.usage)
        return self.head(generation).model_copy(update={"choices": [choice], "usage": usage})

    async def chunks(self, generation: GenerationStream) -> AsyncIterator[bytes]:
        head = self.head(generation)
        offset = len(self.echo)
        if self.echo:
            yield sse_data(_chunk(head, CompletionChoice(text=self.echo)))
        async for item in generation:
            if isinstance(item, Delta):
                lp = completion_logprobs(item.logprobs, offset) if self.logprobs else None
                offset += len(item.text)
                if item.text or lp:
                    yield sse_data(_chunk(head, CompletionChoice(text=item.text, logprobs=lp)))
                continue
            yield sse_data(_chunk(head, CompletionChoice(text="", finish_reason=item.reason)))
            if self.include_usage:
                yield sse_data(head.model_copy(update={"usage": usage_out(item.usage)}))


def _chunk(head: Completion, choice: CompletionChoice) -> Completion:
    return head.model_copy(update={"choices": [choice]})
