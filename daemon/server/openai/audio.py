"""``POST /v1/audio/transcriptions`` and ``/v1/audio/translations``: OpenAI's audio API on the
daemon's Whisper runners (``daemon.transcription``), so the official SDKs'
``client.audio.transcriptions.create`` and ``translations.create`` work unchanged.

The upload is a multipart form (``file``, ``model``, ``language``, ``prompt``, ``temperature``,
``response_format``, ``timestamp_granularities[]``, ``stream``); its file streams to disk (the
body cap for these routes is ``AUDIO_LIMIT``, a 413 past it) and the runner decodes it with
PyAV, so any format FFmpeg reads works and an hour of audio is never held in the daemon.
``stream: true`` answers with OpenAI's ``transcript.text.delta`` events, one per segment as
the runner writes it, then ``transcript.text.done``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx
from anyio import to_thread
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.datastructures import FormData, UploadFile

from localllm.daemon.errors import BadRequestError, RemoteError
from localllm.daemon.remotes import RemoteMatch, Remotes
from localllm.daemon.runners.kept import RunnerPool
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.audio_models import runner_key
from localllm.daemon.server.openai.transcript_formats import (
    FORMATS,
    Transcript,
    TranscriptFormat,
    render,
)
from localllm.daemon.server.redaction import PathRedactor
from localllm.daemon.server.sse import sse_data, sse_stream
from localllm.daemon.settings import Settings
from localllm.daemon.transcription.frames import (
    Segment,
    TranscribeRequest,
    TranscriptionDone,
    TranscriptionInfo,
)
from localllm.daemon.transcription.pool import Transcribers
from localllm.model_registry.names import parse_name
from localllm.model_registry.store import LayerType, Store

__all__ = ["router"]

router = APIRouter()
_FIELD_BYTES = 64 << 10  # a form field other than the file (a prompt is at most 224 tokens)
_REMOTE_BODY = 64 << 20  # a remote's whole answer: an hour's verbose_json with words is ~5 MB
_Task = Literal["transcribe", "translate"]


@dataclass(frozen=True, slots=True)
class _Asked:
    """The form, checked."""

    file: UploadFile
    model: str
    language: str | None
    prompt: str | None
    temperature: float
    form: TranscriptFormat
    granularities: tuple[str, ...]
    stream: bool

    @property
    def words(self) -> bool:
        return "word" in self.granularities

    @property
    def timed(self) -> bool:
        """Whether the answer shows each segment's times (and so needs them fine-grained)."""
        return self.form in ("srt", "vtt", "verbose_json") or bool(self.granularities)

    def fields(self) -> list[tuple[str, str]]:
        """The form as a remote is sent it (``model`` aside: the remote's id)."""
        fields = [("response_format", self.form), ("temperature", str(self.temperature))]
        fields += [("timestamp_granularities[]", g) for g in self.granularities]
        fields += [("language", self.language)] if self.language else []
        fields += [("prompt", self.prompt)] if self.prompt else []
        return fields + ([("stream", "true")] if self.stream else [])


@router.post("/v1/audio/transcriptions")
async def transcriptions(request: Request) -> Response:
    return await _serve(request, "transcribe")


@router.post("/v1/audio/translations")
async def translations(request: Request) -> Response:
    """Speech in any language Whisper knows, written in English."""
    return await _serve(request, "translate")


async def _serve(request: Request, task: _Task) -> Response:
    content_type = request.headers.get("content-type", "")
    if not content_type.lower().startswith("multipart/form-data"):
        raise BadRequestError(
            "send the audio as multipart/form-data with the fields file and model (as "
            "OpenAI's SDKs and `curl -F file=@audio.mp3 -F model=whisper:base` do)"
        )
    form = await request.form(max_files=1, max_fields=32, max_part_size=_FIELD_BYTES)
    try:
        asked = _asked(form, task)
        remotes = app_part(request, "remotes", Remotes)
        if (found := remotes.match(asked.model)) is not None:
            audio = await to_thread.run_sync(_saved, asked.file, _upload_dir(request))
            filename = asked.file.filename or "audio"
            return await _forwarded(request, remotes, found, task, asked, audio, filename)
        store = app_part(request, "store", Store)
        name = parse_name(asked.model)
        folder = await to_thread.run_sync(store.model_folder, name, LayerType.CT2)
        audio = await to_thread.run_sync(_saved, asked.file, _upload_dir(request))
    finally:
        await form.close()
    call = TranscribeRequest(
        str(audio),
        task,
        asked.language,
        asked.prompt,
        asked.temperature,
        word_timestamps=asked.words,
        timed_segments=asked.timed,
    )
    pool: Transcribers = app_part(request, "transcribers", RunnerPool)
    if asked.stream:
        # until the audio is read: a file that is no audio is a 400, not a stream
        deltas = _deltas(pool, runner_key(name), folder, call, asked)
        return await _stream(request, deltas, audio)
    try:
        transcript = await _transcript(pool, runner_key(name), folder, call, task)
    finally:
        audio.unlink(missing_ok=True)
    body, media_type = render(transcript, asked.form, asked.words)
    if isinstance(body, str):
        return Response(body, media_type=media_type)
    return JSONResponse(body)


def _asked(form: FormData, task: _Task) -> _Asked:
    file = form.get("file")
    if not isinstance(file, UploadFile):
        raise BadRequestError("file is required: the audio, as the form's file field", param="file")
    model = _text(form, "model")
    if not model:
        raise BadRequestError("model is required (for instance whisper:base)", param="model")
    response_format = _text(form, "response_format") or "json"
    if response_format not in FORMATS:
        raise BadRequestError(
            f"response_format must be one of {', '.join(FORMATS)}, not {response_format!r}",
            param="response_format",
        )
    granularities = [str(g) for g in form.getlist("timestamp_granularities[]")]
    if unknown := set(granularities) - {"word", "segment"}:
        raise BadRequestError(
            f"timestamp_granularities may name word and segment, not {sorted(unknown)}",
            param="timestamp_granularities[]",
        )
    language = _text(form, "language") or None
    if task == "translate" and language:
        raise BadRequestError("a translation takes no language: it writes English", "language")
    return _Asked(
        file=file,
        model=model,
        language=language,
        prompt=_text(form, "prompt") or None,
        temperature=_temperature(_text(form, "temperature")),
        form=response_format,  # narrowed by the check against FORMATS above
        granularities=tuple(granularities),
        stream=_text(form, "stream").lower() in ("true", "1"),
    )


def _text(form: FormData, name: str) -> str:
    value = form.get(name)
    if isinstance(value, UploadFile):
        raise BadRequestError(f"{name} must be a text field, not a file", param=name)
    return (value or "").strip()


def _temperature(value: str) -> float:
    try:
        temperature = float(value) if value else 0.0
    except ValueError:
        raise BadRequestError(
            f"temperature must be a number, not {value!r}", "temperature"
        ) from None
    if not 0.0 <= temperature <= 1.0:
        raise BadRequestError("temperature must be between 0 and 1", param="temperature")
    return temperature


def _upload_dir(request: Request) -> Path:
    return app_part(request, "settings", Settings).data_dir / "audio-uploads"


def _saved(file: UploadFile, folder: Path) -> Path:
    """The upload as a file of its own (0600) that the runner reads."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor, name = tempfile.mkstemp(prefix="upload-", dir=folder)
    with os.fdopen(descriptor, "wb") as out:
        file.file.seek(0)
        shutil.copyfileobj(file.file, out, 1 << 20)
    return Path(name)


def _remover(path: Path) -> Callable[[], Awaitable[None]]:
    async def remove() -> None:
        path.unlink(missing_ok=True)

    return remove


async def _transcript(
    pool: Transcribers, name: str, folder: Path, call: TranscribeRequest, task: _Task
) -> Transcript:
    language, duration, segments = "", 0.0, []
    async with pool.use(name, folder) as runner:
        async for event in runner.transcribe(call):
            if isinstance(event, TranscriptionInfo):
                language, duration = event.language, event.duration
            elif isinstance(event, Segment):
                segments.append(event)
            elif isinstance(event, TranscriptionDone):
                duration = event.duration or duration
    return Transcript(task, language, duration, tuple(segments))


async def _deltas(
    pool: Transcribers, name: str, folder: Path, call: TranscribeRequest, asked: _Asked
) -> AsyncIterator[bytes]:
    """OpenAI's stream of a transcription: first nothing, once the runner has read the
    audio (the route waits for that), then a delta per segment and the whole text.

    Beyond OpenAI's fields (clients ignore them): each delta's segment ``start`` and ``end``
    and the recording's ``duration`` (seconds), for progress; and when ``response_format``
    is srt, vtt or verbose_json, the done event's ``document``, the answer in that format."""
    language, duration, segments = "", 0.0, list[Segment]()
    async with pool.use(name, folder) as runner:
        events = runner.transcribe(call)
        async for event in events:
            if isinstance(event, TranscriptionInfo):
                language, duration = event.language, event.duration
                break
        yield b""
        async for event in events:  # an error now ends the stream with an error event
            if isinstance(event, Segment):
                delta = event.text if segments else event.text.lstrip()
                segments.append(event)
                yield sse_data(
                    {
                        "type": "transcript.text.delta",
                        "delta": delta,
                        "start": event.start,
                        "end": event.end,
                        "duration": duration,
                    }
                )
            elif isinstance(event, TranscriptionDone):
                duration = event.duration or duration
    transcript = Transcript(call.task, language, duration, tuple(segments))
    done: dict[str, object] = {"type": "transcript.text.done", "text": transcript.text}
    if asked.form in ("srt", "vtt", "verbose_json"):
        done["document"] = render(transcript, asked.form, asked.words)[0]
    yield sse_data(done)


async def _forwarded(
    request: Request,
    remotes: Remotes,
    found: RemoteMatch,
    task: _Task,
    asked: _Asked,
    audio: Path,
    filename: str,
) -> Response:
    """The remote's answer to the same form (its model's id in ``model``), passed back: a
    stream as it comes, anything else whole (at most ``_REMOTE_BODY`` bytes)."""
    path = "/v1/audio/translations" if task == "translate" else "/v1/audio/transcriptions"
    answer = remotes.transcription(found, path, asked.fields(), audio, filename)
    if not asked.stream:
        try:
            async with answer as response:
                body = await _capped(response, found.remote.name)
                media_type = response.headers.get("content-type", "application/json")
        finally:
            audio.unlink(missing_ok=True)
        return Response(body, media_type=media_type)

    async def relayed() -> AsyncIterator[bytes]:
        async with answer as response:
            yield b""  # the remote said 200: the stream begins
            async for chunk in response.aiter_raw():
                yield chunk

    return await _stream(request, relayed(), audio)


async def _stream(request: Request, events: AsyncIterator[bytes], audio: Path) -> Response:
    """``events`` as the answer once their first (empty) item came, so an error until then
    is a status; the upload ``audio`` is removed when the stream ends, however it ends."""
    try:
        await anext(events)
    except BaseException:
        audio.unlink(missing_ok=True)
        raise
    redact = app_part(request, "redactor", PathRedactor)
    return sse_stream(events, redact, _remover(audio), end=b"")


async def _capped(response: httpx.Response, remote: str) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_raw():
        body += chunk
        if len(body) > _REMOTE_BODY:
            raise RemoteError(f"remote {remote!r} sent more than {_REMOTE_BODY >> 20} MiB")
    return bytes(body)
