"""The transcription runners the daemon keeps: one per model, started on its first request,
stopped ``keep_alive`` seconds after its last one, restarted when it died, stopped with the
daemon.

A runner serves its requests one at a time in the order they came (``process``), so requests
to one model share it; a second model gets a runner of its own. The scheduler's memory plan
does not size them, but they take part in its making room (``scheduler.peers``): before one
starts, idle models are unloaded until its estimate fits (``make_room``), and a load that
needs room stops an idle one first (``release_idle``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from localllm.daemon.transcription.frames import TranscriberSpec
from localllm.daemon.transcription.process import TranscriberProcess

__all__ = ["LoadedTranscriber", "Transcribers", "estimate_bytes"]

_RUNTIME_BYTES = 100 << 20  # a runner besides its weights: Python, CTranslate2, buffers


@dataclass(eq=False)
class LoadedTranscriber:
    name: str
    folder: Path
    runner: TranscriberProcess
    users: int = 0  # requests holding it now
    expiry: asyncio.Task[None] | None = field(default=None, repr=False)
    expires_at: float | None = None  # when it stops (epoch seconds); None: in use
    unload_when_free: bool = False  # asked to unload while requests held it
    last_used: float = 0.0  # when its last request let go (monotonic)


class Transcribers:
    """Transcription runners by model name."""

    def __init__(
        self,
        keep_alive: float,
        log_dir: Path | None = None,
        env: Mapping[str, str] | None = None,
        threads: int | None = None,
        make_room: Callable[[str, int], Awaitable[None]] | None = None,
    ):
        """``make_room(name, bytes)`` is awaited before a runner starts (the scheduler's
        ``free_up``)."""
        self._keep_alive = keep_alive
        self._make_room = make_room
        self._log_dir = log_dir
        self._env = dict(env) if env is not None else None
        self._threads = threads or 0
        self._loaded: dict[str, LoadedTranscriber] = {}
        self._starting: dict[str, asyncio.Lock] = {}

    @contextlib.asynccontextmanager
    async def use(self, name: str, folder: Path) -> AsyncIterator[TranscriberProcess]:
        """The runner of ``name`` (its model files in ``folder``), started if need be, held
        until the block ends; ``RunnerError`` when it cannot start."""
        loaded = await self._runner(name, folder)
        loaded.users += 1
        if loaded.expiry is not None:
            loaded.expiry.cancel()
            loaded.expiry = None
        loaded.expires_at = None
        try:
            yield loaded.runner
        finally:
            loaded.users -= 1
            loaded.last_used = time.monotonic()
            if not loaded.users and self._loaded.get(name) is loaded:
                self._schedule(loaded, 0.0 if loaded.unload_when_free else self._keep_alive)

    async def load(self, name: str, folder: Path) -> None:
        """Start ``name``'s runner (as a request would), kept ``keep_alive`` after."""
        async with self.use(name, folder):
            pass

    async def unload(self, name: str) -> bool:
        """Stop ``name``'s runner now, or once the requests holding it end; False when none
        is loaded."""
        loaded = self._loaded.get(name)
        if loaded is None:
            return False
        if loaded.users:
            loaded.unload_when_free = True
            return True
        if loaded.expiry is not None:
            loaded.expiry.cancel()
        del self._loaded[name]
        await loaded.runner.stop()
        return True

    async def release_idle(self) -> bool:
        """Stop the least recently used runner no request holds (the scheduler needs the
        room); False when every one is busy."""
        idle = [loaded for loaded in self._loaded.values() if not loaded.users]
        if not idle:
            return False
        return await self.unload(min(idle, key=lambda loaded: loaded.last_used).name)

    @property
    def keep_alive(self) -> float:
        return self._keep_alive

    def loaded(self) -> list[LoadedTranscriber]:
        return list(self._loaded.values())

    async def close(self) -> None:
        """Stop every runner (the daemon is going)."""
        loaded, self._loaded = list(self._loaded.values()), {}
        for each in loaded:
            if each.expiry is not None:
                each.expiry.cancel()
        await asyncio.gather(*(each.runner.stop() for each in loaded), return_exceptions=True)

    async def _runner(self, name: str, folder: Path) -> LoadedTranscriber:
        async with self._starting.setdefault(name, asyncio.Lock()):
            loaded = self._loaded.get(name)
            if loaded is not None and loaded.runner.alive and loaded.folder == folder:
                return loaded
            if loaded is not None:  # died, or the name now means other files
                del self._loaded[name]
                await loaded.runner.stop()
            if self._make_room is not None:
                await self._make_room(name, await asyncio.to_thread(estimate_bytes, folder))
            spec = TranscriberSpec(str(folder), threads=self._threads, model_name=name)
            log = self._log_dir / f"transcriber-{_safe(name)}.log" if self._log_dir else None
            runner = await TranscriberProcess.start(spec, log, env=self._env)
            loaded = self._loaded[name] = LoadedTranscriber(name, folder, runner)
            return loaded

    def _schedule(self, loaded: LoadedTranscriber, seconds: float) -> None:
        loaded.expires_at = time.time() + seconds
        loaded.expiry = asyncio.get_running_loop().create_task(self._expire(loaded, seconds))

    async def _expire(self, loaded: LoadedTranscriber, seconds: float) -> None:
        await asyncio.sleep(seconds)
        if self._loaded.get(loaded.name) is loaded and not loaded.users:
            del self._loaded[loaded.name]
            await loaded.runner.stop()


def estimate_bytes(folder: Path) -> int:
    """What a runner of the model in ``folder`` takes: its weights as stored (int8 on a CPU
    halves F16 ones; the margin covers the difference on a GPU), and the runtime."""
    weights = folder / "model.bin"
    return (weights.stat().st_size if weights.is_file() else 0) + _RUNTIME_BYTES


def _safe(name: str) -> str:
    """A model name as part of a log file's name."""
    return "".join(c if c.isalnum() or c in "-." else "_" for c in name)
