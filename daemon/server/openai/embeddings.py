"""``POST /v1/embeddings``: OpenAI embeddings onto the one inference path."""

from __future__ import annotations

import base64
import math
import struct

from fastapi import APIRouter, Request

from localllm.daemon.api import Embedding, EmbeddingRequest, EmbeddingResponse, EmbeddingUsage
from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference import EmbedJob, Inference
from localllm.daemon.inference.options import parse_keep_alive
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.sse import until_disconnect

__all__ = ["router"]

router = APIRouter()


@router.post("/v1/embeddings")
async def embeddings(body: EmbeddingRequest, request: Request) -> EmbeddingResponse:
    inference = app_part(request, "inference", Inference)
    job = EmbedJob(
        model=body.model,
        inputs=_inputs(body.input),
        options=body.options or {},
        keep_alive=parse_keep_alive(body.keep_alive),
    )
    result = await until_disconnect(request, inference.embed(job))
    vectors = [_shorten(v, body.dimensions) for v in result.vectors]
    data = [
        Embedding(index=i, embedding=_encode(v, body.encoding_format))
        for i, v in enumerate(vectors)
    ]
    usage = EmbeddingUsage(prompt_tokens=result.prompt_tokens, total_tokens=result.prompt_tokens)
    return EmbeddingResponse(data=data, model=result.model, usage=usage)


def _inputs(value: str | list[str] | list[int] | list[list[int]]) -> list[str]:
    given: list[str] | list[int] | list[list[int]] = [value] if isinstance(value, str) else value
    texts = [t for t in given if isinstance(t, str)]
    if not given:
        raise BadRequestError("input must not be empty", param="input")
    if len(texts) < len(given):
        raise BadRequestError("token-array inputs are not supported; send text", param="input")
    if any(not t for t in texts):
        raise BadRequestError("input must not contain empty strings", param="input")
    return texts


def _shorten(vector: list[float], dimensions: int | None) -> list[float]:
    """OpenAI's ``dimensions``: keep the first n values and renormalize."""
    if dimensions is None or dimensions == len(vector):
        return vector
    if dimensions > len(vector):
        raise BadRequestError(
            f"dimensions {dimensions} is more than the model's {len(vector)}", param="dimensions"
        )
    head = vector[:dimensions]
    norm = math.sqrt(sum(x * x for x in head)) or 1.0
    return [x / norm for x in head]


def _encode(vector: list[float], encoding: str) -> list[float] | str:
    if encoding == "base64":
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
    return vector
