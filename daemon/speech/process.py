"""Start a speech runner for one Piper voice and talk to it from asyncio.

The runner is a child process (``python -m localllm.daemon.speech.worker``), started and
watched as ``daemon.runners.child`` does for the Whisper runner too: a crash never takes the
daemon down, unloading really frees memory, and if the process dies every request in flight
raises ``RunnerCrashed`` at once, quoting the last lines of its log.

What fails, and how: ``RunnerError`` (a voice that does not load, a runner that was stopped),
its ``RunnerCrashed`` (the process died) and ``InvalidRequestError`` (a request the voice
cannot serve as asked: a 400), all from ``daemon.runners.types``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from dataclasses import replace
from pathlib import Path

from ..runners.child import ChildProcess
from ..runners.types import InvalidRequestError
from .frames import (
    WIRE,
    AudioChunk,
    Event,
    Request,
    SpeakerInfo,
    SpeakerSpec,
    SpeakOp,
    SpeakRequest,
    SpeechDone,
    SpeechEvent,
)

__all__ = ["SpeakerProcess"]


class SpeakerProcess(ChildProcess[SpeakerSpec, SpeakerInfo, Request, Event]):
    """One running voice. Create with :meth:`start`; every method is safe to call
    concurrently. Requests are served one at a time, in the order they were sent."""

    _WORKER = "localllm.daemon.speech.worker"
    _ROLE = "speaker"
    _LOADS = "voice"
    _ERRORS = {"invalid_request": InvalidRequestError}
    _wire = WIRE

    @classmethod
    async def start(
        cls,
        spec: SpeakerSpec,
        log_path: Path | None = None,
        *,
        env: Mapping[str, str] | None = None,
        start_timeout: float = 120.0,
    ) -> SpeakerProcess:
        """Start a runner and wait until its voice is loaded; RunnerError if it cannot load.
        ``env`` is the runner's whole environment (``Settings.runner_env``); None inherits."""
        spec = replace(spec, model_path=str(Path(spec.model_path).resolve()))
        return await cls._launch(spec, log_path, env, start_timeout)

    def speak(self, request: SpeakRequest) -> AsyncGenerator[SpeechEvent, None]:
        """Stream one text's speech: an AudioChunk as each sentence is made, then a
        SpeechDone. The request is sent at the first step, queued behind the ones sent before
        it; closing the iterator early cancels it. Raises InvalidRequestError (no text, a
        speed out of bounds), RunnerCrashed (the runner died) or RunnerError."""
        return self._stream(lambda rid: SpeakOp(rid, request), (AudioChunk,), SpeechDone)
