"""``POST /api/embed`` (batch, Ollama's current endpoint) and legacy ``POST /api/embeddings``."""

from __future__ import annotations

import math
import time

from fastapi import APIRouter, Request

from localllm.daemon.api.native_chat import (
    EmbeddingsRequest,
    EmbeddingsResponse,
    EmbedRequest,
    EmbedResponse,
)
from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference import EmbedJob, Inference
from localllm.daemon.inference.options import parse_keep_alive
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.sse import until_disconnect

__all__ = ["router"]

router = APIRouter()


@router.post("/api/embed")
async def embed(body: EmbedRequest, request: Request) -> EmbedResponse:
    inference = app_part(request, "inference", Inference)
    started = time.perf_counter()
    texts = [body.input] if isinstance(body.input, str) else list(body.input)
    keep_alive = parse_keep_alive(body.keep_alive)
    if not any(texts):  # nothing to embed: just load the model, as Ollama does
        loading = inference.load(body.model, body.options or {}, keep_alive)
        name = await until_disconnect(request, loading)
        return EmbedResponse(
            model=name, embeddings=[], total_duration=0, load_duration=0, prompt_eval_count=0
        )
    if not all(texts):
        raise BadRequestError("input must not contain empty strings", param="input")
    job = EmbedJob(body.model, texts, body.options or {}, body.truncate, keep_alive)
    result = await until_disconnect(request, inference.embed(job))
    vectors = [_shorten(vector, body.dimensions) for vector in result.vectors]
    return EmbedResponse(
        model=result.model,
        embeddings=vectors,
        total_duration=int((time.perf_counter() - started) * 1e9),
        load_duration=0,
        prompt_eval_count=result.prompt_tokens,
    )


@router.post("/api/embeddings")
async def embeddings(body: EmbeddingsRequest, request: Request) -> EmbeddingsResponse:
    if not body.prompt:
        return EmbeddingsResponse(embedding=[])
    inference = app_part(request, "inference", Inference)
    keep_alive = parse_keep_alive(body.keep_alive)
    job = EmbedJob(body.model, [body.prompt], body.options or {}, True, keep_alive)
    result = await until_disconnect(request, inference.embed(job))
    return EmbeddingsResponse(embedding=result.vectors[0])


def _shorten(vector: list[float], dimensions: int | None) -> list[float]:
    """Keep the first ``dimensions`` values, renormalized (Matryoshka-style truncation)."""
    if dimensions is None or dimensions >= len(vector):
        return vector
    head = vector[:dimensions]
    norm = math.sqrt(sum(x * x for x in head)) or 1.0
    return [x / norm for x in head]
