"""``POST /api/generate`` and ``POST /api/chat``: Ollama's native generation routes (text,
and images as base64 ``images`` for models with a vision projector).

Both translate onto the one inference path and stream NDJSON chunks (one object with
``stream: false``); a thinking model's reasoning comes in ``thinking``, apart from the
answer. A request with nothing to say only loads the model, or unloads it when
``keep_alive`` is 0, and answers ``done_reason: "load"`` / ``"unload"`` as Ollama does.
A chat's tool calls stream as Ollama's do: each whole, in the chunk where it completes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from anyio import to_thread
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.responses import Response

from localllm.daemon.api.native_chat import (
    ChatChunk,
    ChatRequest,
    GenerateChunk,
    GenerateRequest,
    OllamaReply,
    TruncatedHistory,
)
from localllm.daemon.inference import (
    Collected,
    Delta,
    Finished,
    GenerationJob,
    GenerationStream,
    Inference,
)
from localllm.daemon.inference.options import parse_keep_alive
from localllm.daemon.inference.tool_calls import ToolCall
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.audio_models import audio_model, pool_for, unload_or_load
from localllm.daemon.server.native.translate import (
    CallAssembler,
    chat_job,
    created_at,
    done_reason,
    generate_job,
    timings,
    tool_calls_out,
)
from localllm.daemon.server.ndjson import ndjson_line
from localllm.daemon.server.respond import NDJSON, respond
from localllm.daemon.server.sse import until_disconnect
from localllm.model_registry.store import Store

__all__ = ["router"]

router = APIRouter()

# Builds one chunk from (model, text, thinking, logprobs, finished-or-None, tool calls).
ChunkMaker = Callable[
    [str, str, str, list[dict[str, Any]] | None, Finished | None, Sequence[ToolCall]], BaseModel
]


@router.post("/api/generate", response_model=None)
async def generate(body: GenerateRequest, request: Request) -> Response:
    if not (body.prompt or body.suffix or body.system or body.images):  # a FIM at a file's start
        return await _load_or_unload(request, body.model, body.options, body.keep_alive, False)
    return await _run(request, generate_job(body), body.stream, _generate_chunk)


@router.post("/api/chat", response_model=None)
async def chat(body: ChatRequest, request: Request) -> Response:
    if not body.messages:
        return await _load_or_unload(request, body.model, body.options, body.keep_alive, True)
    return await _run(request, chat_job(body), body.stream, _chat_chunk)


# -- chunks ----------------------------------------------------------------------------------
def _final_fields(finished: Finished | None) -> dict[str, Any]:
    if finished is None:
        return {}
    return {"done": True, "done_reason": done_reason(finished.reason), **timings(finished.usage)}


def _generate_chunk(
    model: str,
    text: str,
    thinking: str,
    logprobs: list[dict[str, Any]] | None,
    finished: Finished | None,
    calls: Sequence[ToolCall] = (),  # /api/generate takes no tools
) -> GenerateChunk:
    return GenerateChunk(
        model=model,
        created_at=created_at(),
        response=text,
        thinking=thinking or None,
        logprobs=logprobs,
        **_final_fields(finished),
    )


def _chat_chunk(
    model: str,
    text: str,
    thinking: str,
    logprobs: list[dict[str, Any]] | None,
    finished: Finished | None,
    calls: Sequence[ToolCall] = (),
) -> ChatChunk:
    return ChatChunk(
        model=model,
        created_at=created_at(),
        message=OllamaReply(
            content=text, thinking=thinking or None, tool_calls=tool_calls_out(calls)
        ),
        logprobs=logprobs,
        **_final_fields(finished),
    )


# -- running a generation --------------------------------------------------------------------
async def _run(request: Request, job: GenerationJob, stream: bool, make: ChunkMaker) -> Response:
    logprobs = job.logprobs is not None

    async def lines(generation: GenerationStream) -> AsyncIterator[bytes]:
        calls = CallAssembler()  # each call goes out whole, in the chunk that completes it
        async for item in generation:
            if isinstance(item, Delta):
                entries = list(item.logprobs) if logprobs and item.logprobs else None
                done = calls.add(item.tool_calls)
                if item.text or item.thinking or entries or done:
                    chunk = make(generation.model, item.text, item.thinking, entries, None, done)
                    yield ndjson_line(chunk)
            else:
                final = make(generation.model, "", "", None, item, ())
                yield ndjson_line(_with_truncation(final, generation))

    def whole(generation: GenerationStream, result: Collected) -> BaseModel:
        entries = result.logprobs if logprobs else None
        finished = result.finished
        answer = make(
            generation.model,
            result.text,
            result.thinking,
            entries,
            finished,
            finished.tool_calls,
        )
        return _with_truncation(answer, generation)

    return await respond(request, job, stream=stream, chunks=lines, whole=whole, wire=NDJSON)


def _with_truncation(chunk: BaseModel, generation: GenerationStream) -> BaseModel:
    """A chat's final chunk says which of its oldest turns were dropped to fit the context."""
    if isinstance(chunk, ChatChunk) and generation.truncation is not None:
        chunk.truncated = TruncatedHistory(**generation.truncation.as_dict())
    return chunk


# -- load and unload -------------------------------------------------------------------------
async def _load_or_unload(
    request: Request,
    model: str,
    options: Mapping[str, object] | None,
    keep_alive: object,
    chat: bool,
) -> JSONResponse:
    inference = app_part(request, "inference", Inference)
    seconds = parse_keep_alive(keep_alive)
    reason = "unload" if seconds == 0 else "load"
    store = app_part(request, "store", Store)
    if (audio := await to_thread.run_sync(audio_model, store, model)) is not None:
        pool = pool_for(request, audio.kind)
        name = await unload_or_load(store, pool, audio, unload=seconds == 0)
    elif seconds == 0:
        name = await inference.unload(model)
    else:
        name = await until_disconnect(request, inference.load(model, options or {}, seconds))
    stamp = created_at()
    answer: BaseModel
    if chat:
        answer = ChatChunk(
            message=OllamaReply(), model=name, created_at=stamp, done=True, done_reason=reason
        )
    else:
        answer = GenerateChunk(model=name, created_at=stamp, done=True, done_reason=reason)
    return JSONResponse(answer.model_dump(exclude_none=True))
