"""Rerank: ``POST /v1/rerank`` with its aliases (llama-server's ``/rerank`` and
``/v1/reranking``, Cohere's ``/v2/rerank``) and the native ``POST /api/rerank``.

Both translate onto one ``RerankJob``; the scores come back in the documents' order and are
sorted here, best first (ties keep the documents' order), then cut to ``top_n``.
"""

from __future__ import annotations

import secrets
import time

from fastapi import APIRouter, Request

from localllm.daemon.api import (
    NativeRerankResponse,
    RerankDocument,
    RerankMeta,
    RerankRequest,
    RerankResponse,
    RerankResult,
    RerankUsage,
)
from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference import Inference, Rerankings, RerankJob
from localllm.daemon.inference.options import parse_keep_alive
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.metrics import Metrics, log_fields
from localllm.daemon.server.sse import until_disconnect

__all__ = ["router"]

router = APIRouter()
_PATHS = ("/v1/rerank", "/rerank", "/v1/reranking", "/v2/rerank")


async def _rerank(body: RerankRequest, request: Request) -> Rerankings:
    if not body.documents:
        raise BadRequestError("documents must not be empty", param="documents")
    inference = app_part(request, "inference", Inference)
    job = RerankJob(
        model=body.model,
        query=body.query,
        documents=body.texts(),
        options=body.options or {},
        truncate=body.truncate,
        keep_alive=parse_keep_alive(body.keep_alive),
    )
    ranked = await until_disconnect(request, inference.rerank(job))
    metrics = app_part(request, "metrics", Metrics)
    metrics.on_rerank(ranked.model, len(ranked.scores), ranked.prompt_tokens)
    log_fields(
        request,
        model=ranked.model,
        documents=len(ranked.scores),
        truncated_documents=len(ranked.truncated),
        prompt_tokens=ranked.prompt_tokens,
    )
    return ranked


def _results(body: RerankRequest, ranked: Rerankings) -> list[RerankResult]:
    texts = body.texts()
    order = sorted(range(len(ranked.scores)), key=lambda i: -ranked.scores[i])
    return [
        RerankResult(
            index=i,
            relevance_score=ranked.scores[i],
            document=RerankDocument(text=texts[i]) if body.return_documents else None,
        )
        for i in order[: body.top_n]
    ]


async def rerank(body: RerankRequest, request: Request) -> RerankResponse:
    ranked = await _rerank(body, request)
    tokens = ranked.prompt_tokens
    warnings = [f"document {i} was cut to fit the model's context" for i in ranked.truncated]
    return RerankResponse(
        id=f"rerank-{secrets.token_hex(12)}",
        model=ranked.model,
        results=_results(body, ranked),
        usage=RerankUsage(prompt_tokens=tokens, total_tokens=tokens),
        truncated=list(ranked.truncated),
        meta=RerankMeta(warnings=warnings),
    )


for _path in _PATHS:
    router.add_api_route(_path, rerank, methods=["POST"], response_model_exclude_none=True)


@router.post("/api/rerank", response_model_exclude_none=True)
async def native_rerank(body: RerankRequest, request: Request) -> NativeRerankResponse:
    started = time.perf_counter()
    ranked = await _rerank(body, request)
    return NativeRerankResponse(
        model=ranked.model,
        results=_results(body, ranked),
        truncated=list(ranked.truncated),
        total_duration=int((time.perf_counter() - started) * 1e9),
        load_duration=0,
        prompt_eval_count=ranked.prompt_tokens,
    )
