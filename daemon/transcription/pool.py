"""The daemon's transcription runners: a pool (``runners.kept``) that starts a
``TranscriberProcess`` for a Whisper model's folder."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from localllm.daemon.runners.kept import RunnerPool, files_bytes
from localllm.daemon.transcription.frames import TranscriberSpec
from localllm.daemon.transcription.process import TranscriberProcess

__all__ = ["Transcribers", "transcriber_bytes", "transcribers"]

_RUNTIME_BYTES = 100 << 20  # Python, CTranslate2 and faster-whisper, with no model

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

    return RunnerPool("transcriber", start, transcriber_bytes, keep_alive, log_dir, make_room)


def transcriber_bytes(folder: Path) -> int:
    """The most a runner of the Whisper model in ``folder`` takes: the runtime, and four times
    its weights. Measured on Whisper base (145 MB of F16 weights, int8 on 2 CPU cores): 168 MB
    resident once loaded, 326 MB at the peak of the load, 380 MB reading a long recording
    piece by piece, 616 MB at batch 8 of the batched pipeline (tests/test_transcription_long.py
    holds it to this); larger models are assumed to grow with their weights (not measured)."""
    return _RUNTIME_BYTES + 4 * files_bytes(folder)
