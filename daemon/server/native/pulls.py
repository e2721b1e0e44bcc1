"""``POST /api/pull`` (Ollama's) and our pull control: pause, resume, cancel, the pull list.

A pull runs as a daemon task (``daemon.models.pulls``); these routes start or steer it and stream
its progress. The first response waits until the name has been looked up, so an unknown
model is a plain 404 rather than an error inside a stream; a pull that has to wait for a free
slot answers at once with ``{"status": "queued"}`` (its name is looked up when it starts).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.responses import Response

from localllm.daemon.api.native_models import (
    ModelRequest,
    ProgressResponse,
    PullListResponse,
    PullRecordOut,
    PullRequest,
)
from localllm.daemon.models.pulls import PullJob, PullManager, PullRecord
from localllm.daemon.remotes import Remotes
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.errors import Redact
from localllm.daemon.server.native.describe import iso_time
from localllm.daemon.server.ndjson import ndjson_line, ndjson_stream
from localllm.daemon.server.redaction import PathRedactor

__all__ = ["router"]

router = APIRouter()

_MANIFEST = "pulling manifest"
PullEvent = dict[str, object]  # a pull's event in its wire form (``PullJob.events``)


def _manager(request: Request) -> PullManager:
    return app_part(request, "pulls", PullManager)


def _redactor(request: Request) -> Redact:
    return app_part(request, "redactor", PathRedactor)


@router.post("/api/pull", response_model=None)
async def pull(body: PullRequest, request: Request) -> Response:
    app_part(request, "remotes", Remotes).refuse_local_work(body.model, "pull")
    return await _answer(_manager(request).start(body.model), body.stream, _redactor(request))


@router.post("/api/pull/resume", response_model=None)
async def resume(body: PullRequest, request: Request) -> Response:
    return await _answer(_manager(request).resume(body.model), body.stream, _redactor(request))


@router.post("/api/pull/pause")
async def pause(body: ModelRequest, request: Request) -> JSONResponse:
    await _manager(request).pause(body.model)
    return JSONResponse({"status": "paused"})


@router.post("/api/pull/cancel")
async def cancel(body: ModelRequest, request: Request) -> JSONResponse:
    await _manager(request).cancel(body.model)
    return JSONResponse({"status": "cancelled"})


@router.get("/api/pulls")
async def pulls(request: Request) -> PullListResponse:
    redact = _redactor(request)
    return PullListResponse(pulls=[_out(record, redact) for record in _manager(request).list()])


def _out(record: PullRecord, redact: Redact) -> PullRecordOut:
    return PullRecordOut(
        name=record.name,
        state=record.state,
        status=record.status,
        total=record.total,
        completed=record.completed,
        error=redact(record.error) if record.error else record.error,
        interrupted=record.interrupted,
        updated_at=iso_time(record.updated),
    )


async def _answer(job: PullJob, stream: bool, redact: Redact) -> Response:
    events = job.events()
    try:
        head = await _until_resolved(events)  # errors here become the HTTP status
    except BaseException:
        await events.aclose()
        raise
    if stream:
        return ndjson_stream(_lines(head, events), redact)  # closing it only stops watching
    last: PullEvent = head[-1] if head else {"status": "success"}
    async for event in events:
        last = event
    return JSONResponse(_progress(last).model_dump(exclude_none=True))


def _progress(event: PullEvent) -> ProgressResponse:
    """A pull event as the shared wire model (what ``daemon.client`` parses it into)."""
    return ProgressResponse.model_validate(event)


async def _until_resolved(events: AsyncIterator[PullEvent]) -> list[PullEvent]:
    head: list[PullEvent] = []
    async for event in events:
        head.append(event)
        if event.get("status") != _MANIFEST:
            break
    return head


async def _lines(
    head: list[PullEvent], events: AsyncGenerator[PullEvent, None]
) -> AsyncIterator[bytes]:
    try:
        for event in head:
            yield ndjson_line(_progress(event))
        async for event in events:
            yield ndjson_line(_progress(event))
    finally:
        await events.aclose()
