"""The daemon's speech runners: a pool (``runners.kept``) that starts a ``SpeakerProcess`` for
a Piper voice's folder."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from localllm.daemon.runners.kept import RunnerPool, files_bytes
from localllm.daemon.speech.frames import SpeakerSpec
from localllm.daemon.speech.process import SpeakerProcess

__all__ = ["Speakers", "speaker_bytes", "speakers"]

_RUNTIME_BYTES = 400 << 20  # Python, onnxruntime and its arena as it grows, espeak-ng

Speakers = RunnerPool[SpeakerProcess]


def speakers(
    keep_alive: float,
    log_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    threads: int | None = None,
    make_room: Callable[[str, int], Awaitable[None]] | None = None,
) -> Speakers:
    """The pool; its runners get the daemon's runner environment ``env`` and ``threads``."""

    async def start(name: str, folder: Path, log: Path | None) -> SpeakerProcess:
        spec = SpeakerSpec(str(folder), threads=threads or 0, model_name=name)
        return await SpeakerProcess.start(spec, log, env=env)

    return RunnerPool("speaker", start, speaker_bytes, keep_alive, log_dir, make_room)


def speaker_bytes(folder: Path) -> int:
    """The most a runner of the Piper voice in ``folder`` takes: its files and what
    onnxruntime grows to. Measured with en_US-joe-medium (61 MB): 145 MB once loaded, 294 MB
    after 22 sentences, 357 MB from 88 on, where it settled (176 sentences); estimate 461 MB
    (tests/test_speech_runner.py holds the peak of 22 sentences to it)."""
    return _RUNTIME_BYTES + files_bytes(folder)
