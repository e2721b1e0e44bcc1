"""The daemon's speech runners: a pool (``runners.kept``) that starts a ``SpeakerProcess`` for
a Piper voice's folder."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from localllm.daemon.runners.kept import RunnerPool
from localllm.daemon.speech.frames import SpeakerSpec
from localllm.daemon.speech.process import SpeakerProcess

__all__ = ["Speakers", "speakers"]

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

    return RunnerPool("speaker", start, keep_alive, log_dir, make_room)
