"""Start a transcription runner for one Whisper model and talk to it from asyncio.

The runner is a child process (``python -m localllm.daemon.transcription.worker``), started
and watched as ``daemon.runners.child`` does for every one-request-at-a-time runner: a crash
or a native abort never takes the daemon down, unloading really frees memory, and if the
process dies every request in flight raises :class:`RunnerCrashed` at once, quoting the last
lines of its log.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from dataclasses import replace
from pathlib import Path

from ..runners.child import ChildProcess
from .errors import InvalidAudioError, InvalidRequestError
from .frames import (
    WIRE,
    Event,
    Request,
    Segment,
    TranscribeOp,
    TranscribeRequest,
    TranscriberInfo,
    TranscriberSpec,
    TranscriptionDone,
    TranscriptionEvent,
    TranscriptionInfo,
)

__all__ = ["TranscriberProcess"]


class TranscriberProcess(ChildProcess[TranscriberSpec, TranscriberInfo, Request, Event]):
    """One running Whisper model. Create with :meth:`start`; every method is safe to call
    concurrently. Requests are served one at a time, in the order they were sent."""

    _WORKER = "localllm.daemon.transcription.worker"
    _ROLE = "transcriber"
    _LOADS = "model"
    _ERRORS = {"invalid_audio": InvalidAudioError, "invalid_request": InvalidRequestError}
    _wire = WIRE

    @classmethod
    async def start(
        cls,
        spec: TranscriberSpec,
        log_path: Path | None = None,
        *,
        env: Mapping[str, str] | None = None,
        start_timeout: float = 300.0,
    ) -> TranscriberProcess:
        """Start a runner and wait until its model is loaded; RunnerError if it cannot load.

        ``env`` is the runner's whole environment (the daemon passes ``Settings.runner_env``,
        which keeps its secrets out of a process that parses untrusted files); None inherits.
        """
        spec = replace(spec, model_path=str(Path(spec.model_path).resolve()))
        return await cls._launch(spec, log_path, env, start_timeout)

    def transcribe(self, request: TranscribeRequest) -> AsyncGenerator[TranscriptionEvent, None]:
        """Stream one transcription: a TranscriptionInfo, each Segment as the runner writes
        it, then a TranscriptionDone. The request is sent at the first step, and queued
        behind the ones sent before it; closing the iterator early cancels it. Raises
        InvalidAudioError (the file is no audio), InvalidRequestError (a language the model
        does not know...), RunnerCrashed (the runner died) or RunnerError."""
        # the runner works in the package directory: it is given an absolute path
        request = replace(request, audio_path=str(Path(request.audio_path).resolve()))
        return self._stream(
            lambda rid: TranscribeOp(rid, request), (TranscriptionInfo, Segment), TranscriptionDone
        )
