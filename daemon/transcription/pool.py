"""The daemon's transcription runners: a pool (``runners.kept``) that starts a
``TranscriberProcess`` for a Whisper model's folder."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from localllm.daemon.runners.kept import RunnerPool
from localllm.daemon.transcription.frames import TranscriberSpec
from localllm.daemon.transcription.process import TranscriberProcess

__all__ = ["Transcribers", "transcribers"]

Transcribers = RunnerPool[TranscriberProcess]


def transcribers(
    keep_alive: float,
    log_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    threads: int | None = None,
    make_room: Callable[[str, int], Awaitable[None]] | None = None,
) -> Transcribers:
    """The pool; its runners get the daemon's runner environment ``env`` and ``threads``."""

    async def start(name: str, folder: Path, log: Path | None) -> TranscriberProcess:
        spec = TranscriberSpec(str(folder), threads=threads or 0, model_name=name)
        return await TranscriberProcess.start(spec, log, env=env)

    return RunnerPool("transcriber", start, keep_alive, log_dir, make_room)
