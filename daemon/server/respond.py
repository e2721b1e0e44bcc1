"""One owner for a generation's response, whatever the API and its wire format.

A route translates its request into a ``GenerationJob`` and names how its answer looks: the
frames of a stream (``chunks``) and the whole answer (``whole``). ``respond`` does the rest the
same way for every API: start the generation (cancelled if the client hangs up), hand it
(and what the route left out of the request) to the request log, stream it or collect it, and
close it (which gives the runner's slot back) however the response ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.responses import Response

from localllm.daemon.inference import Collected, GenerationJob, GenerationStream, Inference
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.errors import Redact, anthropic_stream_error
from localllm.daemon.server.metrics import log_generation, log_warnings
from localllm.daemon.server.ndjson import ndjson_stream
from localllm.daemon.server.redaction import PathRedactor
from localllm.daemon.server.sse import EventStream, sse_stream, until_disconnect

__all__ = ["ANTHROPIC_SSE", "NDJSON", "SSE", "Wire", "respond"]

Answer = TypeVar("Answer", Response, BaseModel)  # what a wire makes of a whole answer


@dataclass(frozen=True, slots=True)
class Wire(Generic[Answer]):
    """How an API frames a stream (errors included) and a whole answer."""

    stream: Callable[[AsyncIterator[bytes], GenerationStream, Redact], EventStream]
    whole: Callable[[BaseModel], Answer]


def _ndjson_whole(answer: BaseModel) -> Response:
    return JSONResponse(answer.model_dump(exclude_none=True))


SSE: Wire[BaseModel] = Wire(
    stream=lambda frames, generation, redact: sse_stream(frames, redact, generation.aclose),
    whole=lambda answer: answer,  # FastAPI serializes it, nulls included, as OpenAI does
)
# Anthropic's: named events, no [DONE] (message_stop ends it), errors as event: error
ANTHROPIC_SSE: Wire[BaseModel] = Wire(
    stream=lambda frames, generation, redact: sse_stream(
        frames, redact, generation.aclose, error=anthropic_stream_error, end=b""
    ),
    whole=lambda answer: answer,  # nulls included (stop_sequence: null), as Anthropic sends
)
NDJSON: Wire[Response] = Wire(
    stream=lambda frames, generation, redact: ndjson_stream(frames, redact, generation.aclose),
    whole=_ndjson_whole,
)


async def respond(
    request: Request,
    job: GenerationJob,
    *,
    stream: bool,
    chunks: Callable[[GenerationStream], AsyncIterator[bytes]],
    whole: Callable[[GenerationStream, Collected], BaseModel],
    wire: Wire[Answer],
) -> EventStream | Answer:
    """Run ``job`` and answer with its stream of ``chunks`` or its ``whole`` answer."""
    inference = app_part(request, "inference", Inference)
    log_warnings(request, job.warnings)
    generation = await until_disconnect(request, inference.generate(job))
    log_generation(request, generation)
    if stream:
        redact = app_part(request, "redactor", PathRedactor)
        return wire.stream(chunks(generation), generation, redact)
    try:
        collected = await until_disconnect(request, generation.collect())
    finally:
        await generation.aclose()
    return wire.whole(whole(generation, collected))
