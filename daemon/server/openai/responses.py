"""``/v1/responses``: OpenAI's Responses API onto the one inference path.

``POST`` creates a response (streamed or whole), continuing a stored one named by
``previous_response_id``; ``GET`` and ``DELETE`` read and remove a stored response. The store
is the app's (``app.state.responses``, see ``response_store``).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import BaseModel
from starlette.responses import Response

from localllm.daemon.api.openai_responses import ResponseDeleted, ResponseObject, ResponsesRequest
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.openai.response_store import ResponseStore
from localllm.daemon.server.openai.responses_output import ResponseShape
from localllm.daemon.server.openai.responses_stream import ResponseStream
from localllm.daemon.server.openai.responses_translate import responses_turn
from localllm.daemon.server.respond import respond

__all__ = ["router"]

router = APIRouter()


# A stream, or the whole answer as a ResponseObject (``respond`` types it as any model).
@router.post("/v1/responses", response_model=None)
async def create_response(body: ResponsesRequest, request: Request) -> Response | BaseModel:
    store = app_part(request, "responses", ResponseStore)
    previous = await store.get(body.previous_response_id) if body.previous_response_id else None
    turn = responses_turn(body, previous)
    shape = ResponseShape(body, turn, store)
    stream = ResponseStream(shape)
    return await respond(
        request,
        turn.job,
        stream=body.stream,
        chunks=stream.events,
        whole=shape.whole,
        wire=stream.wire,
    )


@router.get("/v1/responses/{response_id}")
async def retrieve_response(response_id: str, request: Request) -> ResponseObject:
    store = app_part(request, "responses", ResponseStore)
    return (await store.get(response_id)).response


@router.delete("/v1/responses/{response_id}")
async def delete_response(response_id: str, request: Request) -> ResponseDeleted:
    store = app_part(request, "responses", ResponseStore)
    await store.delete(response_id)
    return ResponseDeleted(id=response_id)
