"""``POST /v1/audio/speech``: OpenAI's text-to-speech API on the daemon's Piper voices
(``daemon.speech``), so the official SDKs' ``client.audio.speech.create`` works unchanged.

The body is OpenAI's JSON: ``model``, ``input``, ``voice``, ``response_format`` (mp3 unless
named; wav, pcm, mp3, opus, flac and aac where PyAV can encode them), ``speed`` (0.25 to 4)
and ``stream_format`` (``audio``, or ``sse`` for OpenAI's ``speech.audio.delta`` events).
``instructions`` is accepted and ignored: a Piper voice speaks one way.

Which voice speaks: ``model`` names a voice of the store (``voice:joe``); OpenAI's ``voice``
(alloy, echo...) is then ignored. Where ``model`` is no model of the store (``tts-1``, as
clients written for OpenAI send), ``voice`` names the stored voice instead, as it is or as
``voice:<voice>``: ``model="tts-1", voice="joe"`` speaks with ``voice:joe``.

The answer streams as the runner speaks, a sentence at a time: a long text starts playing
early. A WAV's header gives its sizes as unknown (``daemon.speech.encoding``); every answer
says the sample rate in ``X-Sample-Rate`` (``pcm`` has no header to say it). The request is
answered with an error status until the first sentence is spoken; a failure after that ends
the audio early (the daemon log says why).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

from anyio import to_thread
from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from localllm.daemon.errors import BadRequestError
from localllm.daemon.runners.kept import RunnerPool
from localllm.daemon.server.app_state import app_part
from localllm.daemon.server.audio_models import runner_key
from localllm.daemon.server.redaction import PathRedactor
from localllm.daemon.server.sse import EventStream, sse_data, sse_stream
from localllm.daemon.speech.encoding import FORMATS, encoder_for, supported_formats
from localllm.daemon.speech.frames import MAX_SPEED, MIN_SPEED, AudioChunk, SpeakRequest
from localllm.daemon.speech.pool import Speakers
from localllm.model_registry.errors import InvalidNameError, ModelNotFoundError
from localllm.model_registry.names import parse_name
from localllm.model_registry.store import LayerType, Manifest, Store

__all__ = ["MAX_INPUT_CHARACTERS", "SpeechRequest", "router"]

router = APIRouter()
log = logging.getLogger("localllm.server")
MAX_INPUT_CHARACTERS = 100_000  # some two hours of speech; OpenAI takes 4,096


class SpeechRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")

    model: str = Field(min_length=1, max_length=1000)
    input: str
    voice: str | dict[str, Any] | None = None  # a name, or OpenAI's {"id": ...}
    response_format: str = "mp3"
    speed: float = 1.0
    stream_format: Literal["audio", "sse"] = "audio"
    instructions: str | None = None  # ignored: a Piper voice speaks one way


@router.post("/v1/audio/speech", response_model=None)
async def speech(body: SpeechRequest, request: Request) -> Response:
    form = _checked(body)
    store = app_part(request, "store", Store)
    name, rate = await to_thread.run_sync(_voice, store, body)
    folder = await to_thread.run_sync(store.model_folder, name, LayerType.VOICE)
    pool: Speakers = app_part(request, "speakers", RunnerPool)
    key = runner_key(parse_name(name))  # the key /api/ps, stop and rm use too
    audio = _audio(pool, key, folder, SpeakRequest(body.input, body.speed), form)
    first = await anext(audio, b"")  # until the first sentence: an error is a status
    chunks = _prepended(first, audio)
    if body.stream_format == "sse":
        events = _sse(chunks)
        return sse_stream(events, app_part(request, "redactor", PathRedactor), end=b"")
    headers = {"X-Sample-Rate": str(rate)}
    return EventStream(_logged(chunks), media_type=FORMATS[form].media_type, headers=headers)


def _checked(body: SpeechRequest) -> str:
    """The request's checks that need no voice; returns the response format."""
    if not body.input.strip():
        raise BadRequestError("input is empty: give the text to speak", param="input")
    if len(body.input) > MAX_INPUT_CHARACTERS:
        raise BadRequestError(
            f"input is {len(body.input):,} characters; at most {MAX_INPUT_CHARACTERS:,} are "
            "spoken in one request (split the text)",
            param="input",
        )
    if not MIN_SPEED <= body.speed <= MAX_SPEED:
        raise BadRequestError(
            f"speed must be between {MIN_SPEED:g} and {MAX_SPEED:g}, not {body.speed:g}",
            param="speed",
        )
    formats = supported_formats()
    if body.response_format not in formats:
        raise BadRequestError(
            f"response_format must be one of {', '.join(formats)}, not "
            f"{body.response_format[:40]!r}",
            param="response_format",
        )
    return body.response_format


def _voice(store: Store, body: SpeechRequest) -> tuple[str, int]:
    """The stored voice the request names, and its sample rate (module docstring)."""
    manifest = _manifest(store, body.model)
    if manifest is not None and not manifest.is_voice:
        raise BadRequestError(
            f"{body.model} is not a voice; name a Piper voice of the store as model "
            "(voice:joe), or use it where it serves",
            param="model",
        )
    name = body.model if manifest is not None else _named_voice(store, body.voice)
    if name is None:
        raise ModelNotFoundError(
            f"model {body.model!r} is not a voice of the store (nor is voice "
            f"{_voice_text(body.voice)!r}); name a voice as model, after `localllm pull "
            "voice:joe` or `localllm import <voice>.onnx voice:NAME`"
        )
    config = store.read_config(manifest or store.read_manifest(name))
    facts = config.get("voice")
    rate = facts.get("sample_rate") if isinstance(facts, dict) else None
    return name, rate if isinstance(rate, int) else 0


def _named_voice(store: Store, voice: str | dict[str, Any] | None) -> str | None:
    """The stored voice OpenAI's ``voice`` field names (as it is, or as ``voice:<it>``)."""
    text = _voice_text(voice)
    for name in (text, f"voice:{text}") if text else ():
        try:
            manifest = _manifest(store, name)
        except InvalidNameError:
            continue
        if manifest is not None and manifest.is_voice:
            return name
    return None


def _voice_text(voice: str | dict[str, Any] | None) -> str:
    if isinstance(voice, dict):
        voice = voice.get("id")
    return voice.strip() if isinstance(voice, str) else ""


def _manifest(store: Store, text: str) -> Manifest | None:
    """The model ``text`` names, or None where the store has none by that name."""
    name = parse_name(text)
    try:
        return store.read_manifest(name)
    except ModelNotFoundError:
        return None


async def _audio(
    pool: Speakers, name: str, folder: Path, call: SpeakRequest, form: str
) -> AsyncIterator[bytes]:
    """The speech as ``form``'s bytes, encoded (in a worker thread) as each sentence comes."""
    async with pool.use(name, folder) as runner:
        encoder = encoder_for(form, runner.info.sample_rate)
        async for event in runner.speak(call):
            pcm = event.pcm if isinstance(event, AudioChunk) else b""
            if pcm and (data := await to_thread.run_sync(encoder.encode, pcm)):
                yield data
        if data := await to_thread.run_sync(encoder.finish):
            yield data


async def _prepended(first: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """``first``, then ``rest`` (closed however this ends)."""
    try:
        if first:
            yield first
        async for data in rest:
            yield data
    finally:
        aclose = getattr(rest, "aclose", None)
        if aclose is not None:
            await aclose()


async def _logged(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """``chunks``; a failure once the audio has begun ends it early (and is logged): the
    status went out with the first sentence."""
    try:
        async for data in chunks:
            yield data
    except Exception:
        log.exception("speech ended early: its audio is cut short")
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


async def _sse(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """OpenAI's speech events: the audio in base64 pieces, then its end (no tokens counted:
    a voice has none)."""
    async for data in chunks:
        audio = base64.b64encode(data).decode("ascii")
        yield sse_data({"type": "speech.audio.delta", "audio": audio})
    usage = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    yield sse_data({"type": "speech.audio.done", "usage": usage})
