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

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.responses import Response

from localllm.daemon.inference import Collected, Generation, GenerationJob, Inference
from localllm.daemon.server.errors import Redact, anthropic_stream_error
from localllm.daemon.server.metrics import log_generation, log_warnings
from localllm.daemon.server.ndjson import ndjson_stream
from localllm.daemon.server.sse import EventStream, sse_stream, until_disconnect

__all__ = ["ANTHROPIC_SSE", "NDJSON", "SSE", "Wire", "respond"]


@dataclass(frozen=True, slots=True)
class Wire:
    """How an API frames a stream (errors included) and a whole answer."""

    stream: Callable[[AsyncIterator[bytes], Generation, Redact], EventStream]
    whole: Callable[[BaseModel], Response | BaseModel]


def _ndjson_whole(answer: BaseModel) -> Response:
    return JSONResponse(answer.model_dump(exclude_none=True))


SSE = Wire(
    stream=lambda frames, generation, redact: sse_stream(frames, redact, generation.aclose),
    whole=lambda answer: answer,  # FastAPI serializes it, nulls included, as OpenAI does
)
ANTHROPIC_SSE = Wire(  # named events, no [DONE] (message_stop ends it), errors as event: error
    stream=lambda frames, generation, redact: sse_stream(
        frames, redact, generation.aclose, error=anthropic_stream_error, end=b""
    ),
    whole=lambda answer: answer,  # nulls included (stop_sequence: null), as Anthropic sends
)
NDJSON = Wire(
    stream=lambda frames, generation, redact: ndjson_stream(frames, redact, generation.aclose),
    whole=_ndjson_whole,
)


async def respond(
    request: Request,
    job: GenerationJob,
    *,
    stream: bool,
    chunks: Callable[[Generation], AsyncIterator[bytes]],
    whole: Callable[[Generation, Collected], BaseModel],
    wire: Wire,
) -> Response | BaseModel:
    """Run ``job`` and answer with its stream of ``chunks`` or its ``whole`` answer."""
    inference: Inference = request.app.state.inference
    log_warnings(request, job.warnings)
    generation = await until_disconnect(request, inference.generate(job))
    log_generation(request, generation)
    if stream:
        return wire.stream(chunks(generation), generation, request.app.state.redactor)
    try:
        collected = await until_disconnect(request, generation.collect())
    finally:
        await generation.aclose()
    return wire.whole(whole(generation, collected))
