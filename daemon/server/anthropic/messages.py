"""``POST /v1/messages``: Anthropic's Messages API onto the one inference path.

``translate`` makes the job, ``events`` the stream; this module wires them to ``respond`` and
builds the whole message of a ``stream: false`` answer.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass

from fastapi import APIRouter, Request
from pydantic import BaseModel
from starlette.responses import Response

from localllm.daemon.api.anthropic import AnthropicMessage, MessagesRequest
from localllm.daemon.inference import Collected, GenerationStream
from localllm.daemon.server.anthropic.answers import content_out, stop_reason, usage_out
from localllm.daemon.server.anthropic.events import message_events
from localllm.daemon.server.anthropic.translate import messages_job
from localllm.daemon.server.respond import ANTHROPIC_SSE, respond

__all__ = ["router"]

router = APIRouter()


# A stream, or the whole answer as an AnthropicMessage (``respond`` types it as any model).
@router.post("/v1/messages", response_model=None)
async def create_message(body: MessagesRequest, request: Request) -> Response | BaseModel:
    shape = _Shape(f"msg_{secrets.token_hex(12)}")
    return await respond(
        request,
        messages_job(body),
        stream=body.stream,
        chunks=shape.chunks,
        whole=shape.whole,
        wire=ANTHROPIC_SSE,
    )


@dataclass(frozen=True, slots=True)
class _Shape:
    """One answer's id, and the events and whole message built with it."""

    id: str

    def whole(self, generation: GenerationStream, result: Collected) -> AnthropicMessage:
        finished = result.finished
        reason, stop = stop_reason(finished)
        return AnthropicMessage(
            id=self.id,
            content=content_out(result.thinking, result.text, finished.tool_calls),
            model=generation.model,
            stop_reason=reason,
            stop_sequence=stop,
            usage=usage_out(finished.usage),
        )

    def chunks(self, generation: GenerationStream) -> AsyncIterator[bytes]:
        return message_events(self.id, generation.model, generation)
