"""``POST /v1/messages/count_tokens``: the prompt tokens a Messages request would take.

The request is translated exactly as ``/v1/messages`` translates it and its prompt counted by
the model's own runner, so the count equals the prompt tokens a generation reports.
"""

from __future__ import annotations

from fastapi import APIRouter, Request

from localllm.daemon.api.anthropic import CountTokensRequest, CountTokensResponse
from localllm.daemon.inference import Inference
from localllm.daemon.server.anthropic.translate import count_job
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.sse import until_disconnect

__all__ = ["router"]

router = APIRouter()


@router.post("/v1/messages/count_tokens")
async def count_tokens(body: CountTokensRequest, request: Request) -> CountTokensResponse:
    inference = app_part(request, "inference", Inference)
    count = await until_disconnect(request, inference.count_tokens(count_job(body)))
    return CountTokensResponse(input_tokens=count)
