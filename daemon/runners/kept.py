"""Runners of the audio models the daemon keeps (Whisper transcription, Piper voices): one per
model, started on its first request, stopped ``keep_alive`` seconds after its last one,
restarted when it died, stopped with the daemon.

A runner serves its requests one at a time in the order they came, so requests to one model
share it; another model gets a runner of its own. The scheduler's memory plan does not size
these runners, but they take part in its making room (``scheduler.peers``): before one starts,
idle models are unloaded until its estimate (the most it was measured to take, for its kind)
fits (``make_room``, the scheduler's ``free_up``), and a load that needs room stops an idle
one first (``release_idle``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Protocol, TypeVar

__all__ = ["Estimate", "KeptRunner", "RunnerPool", "files_bytes"]

Estimate = Callable[[Path], int]  # the most a runner of the model in a folder takes


class Runner(Protocol):
    @property
    def alive(self) -> bool: ...

    async def stop(self) -> None: ...


R = TypeVar("R", bound=Runner)
# (model name, its folder, a log file or None) -> its runner, started
Start = Callable[[str, Path, Path | None], Awaitable[R]]


@dataclass(eq=False)
class KeptRunner(Generic[R]):
    name: str
    folder: Path
    runner: R
    users: int = 0  # requests holding it now
    expiry: asyncio.Task[None] | None = field(default=None, repr=False)
    expires_at: float | None = None  # when it stops (epoch seconds); None: in use
    unload_when_free: bool = False  # asked to unload while requests held it
    last_used: float = 0.0  # when its last request let go (monotonic)


class RunnerPool(Generic[R]):
    """Runners of one kind (``kind``: "transcriber", "speaker": their log files' names) by
    model name."""

    def __init__(
        self,
        kind: str,
        start: Start[R],
        estimate: Estimate,
        keep_alive: float,
        log_dir: Path | None = None,
        make_room: Callable[[str, int], Awaitable[None]] | None = None,
    ):
        """``make_room(name, estimate(folder))`` is awaited before a runner starts."""
        self.kind = kind
        self._start, self._estimate = start, estimate
        self._keep_alive = keep_alive
        self._log_dir = log_dir
        self._make_room = make_room
        self._loaded: dict[str, KeptRunner[R]] = {}
        self._starting: dict[str, asyncio.Lock] = {}

    @property
    def keep_alive(self) -> float:
        return self._keep_alive

    @contextlib.asynccontextmanager
    async def use(self, name: str, folder: Path) -> AsyncIterator[R]:
        """The runner of ``name`` (its files in ``folder``), started if need be, held until
        the block ends; ``RunnerError`` when it cannot start."""
        kept = await self._runner(name, folder)
        kept.users += 1
        if kept.expiry is not None:
            kept.expiry.cancel()
            kept.expiry = None
        kept.expires_at = None
        try:
            yield kept.runner
        finally:
            kept.users -= 1
            kept.last_used = time.monotonic()
            if not kept.users and self._loaded.get(name) is kept:
                self._schedule(kept, 0.0 if kept.unload_when_free else self._keep_alive)

    async def load(self, name: str, folder: Path) -> None:
        """Start ``name``'s runner (as a request would), kept ``keep_alive`` after."""
        async with self.use(name, folder):
            pass

    async def unload(self, name: str) -> bool:
        """Stop ``name``'s runner now, or once the requests holding it end; False when none
        is loaded."""
        kept = self._loaded.get(name)
        if kept is None:
            return False
        if kept.users:
            kept.unload_when_free = True
            return True
        if kept.expiry is not None:
            kept.expiry.cancel()
        del self._loaded[name]
        await kept.runner.stop()
        return True

    async def release_idle(self) -> bool:
        """Stop the least recently used runner no request holds (the scheduler needs the
        room); False when every one is busy."""
        idle = [kept for kept in self._loaded.values() if not kept.users]
        if not idle:
            return False
        return await self.unload(min(idle, key=lambda kept: kept.last_used).name)

    def loaded(self) -> list[KeptRunner[R]]:
        return list(self._loaded.values())

    async def close(self) -> None:
        """Stop every runner (the daemon is going)."""
        kept, self._loaded = list(self._loaded.values()), {}
        for each in kept:
            if each.expiry is not None:
                each.expiry.cancel()
        await asyncio.gather(*(each.runner.stop() for each in kept), return_exceptions=True)

    async def _runner(self, name: str, folder: Path) -> KeptRunner[R]:
        async with self._starting.setdefault(name, asyncio.Lock()):
            kept = self._loaded.get(name)
            if kept is not None and kept.runner.alive and kept.folder == folder:
                return kept
            if kept is not None:  # died, or the name now means other files
                del self._loaded[name]
                await kept.runner.stop()
            if self._make_room is not None:
                await self._make_room(name, await asyncio.to_thread(self._estimate, folder))
            log = self._log_dir / f"{self.kind}-{_safe(name)}.log" if self._log_dir else None
            runner = await self._start(name, folder, log)
            kept = self._loaded[name] = KeptRunner(name, folder, runner)
            return kept

    def _schedule(self, kept: KeptRunner[R], seconds: float) -> None:
        kept.expires_at = time.time() + seconds
        kept.expiry = asyncio.get_running_loop().create_task(self._expire(kept, seconds))

    async def _expire(self, kept: KeptRunner[R], seconds: float) -> None:
        await asyncio.sleep(seconds)
        if self._loaded.get(kept.name) is kept and not kept.users:
            del self._loaded[kept.name]
            await kept.runner.stop()


def files_bytes(folder: Path) -> int:
    """The size of a model's files as stored (the folder of links the runner reads)."""
    return sum(path.stat().st_size for path in folder.iterdir() if path.is_file())


def _safe(name: str) -> str:
    """A model name as part of a log file's name."""
    return "".join(c if c.isalnum() or c in "-." else "_" for c in name)
