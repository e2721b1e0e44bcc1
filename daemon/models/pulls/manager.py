"""Pulls as daemon tasks: an HTTP stream only watches a pull, so hanging up never stops it.

``PullManager.start`` runs one task per model (a second request for the same model joins the
running or queued pull); each task drives the registry's ``Puller`` and publishes its events
to every watcher, and keeps the persistent pull list (``records``) up to date. At most
``max_running`` pulls run at once (each costs threads, connections and open files); the
others wait in order, listed and streamed as ``queued``, and cost nothing until they start.
Pause and cancel go to the puller; the running task then ends with a ``paused`` or
``cancelled`` event. A queued pull is paused or cancelled without ever starting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncGenerator, Callable
from typing import Final

from anyio import to_thread

from localllm.daemon.api.native_models import PullState
from localllm.daemon.errors import NotFoundError
from localllm.daemon.models.pulls.records import PullRecord, PullRecords
from localllm.model_registry.names import ModelName, parse_name
from localllm.model_registry.pull import Puller, PullEvent
from localllm.model_registry.pull.events import CANCELLED, PAUSED, PULLING_MANIFEST

__all__ = ["PullJob", "PullManager"]

log = logging.getLogger("localllm.pulls")

Event = dict[str, object]  # a pull event in its wire form (``PullEvent.to_json``)
QUEUED: Final = "queued"
_STOP_WAIT = 10.0  # seconds a pause or cancel waits for the pull to wind down


class PullJob:
    """One running pull: the latest event, its end, and the queues of whoever watches it."""

    def __init__(self, name: ModelName):
        self.name = name
        self.last: Event | None = None
        self.error: BaseException | None = None
        self.ended = asyncio.Event()
        self.resolved = False  # past "pulling manifest": the name meant real files
        self.task: asyncio.Task[None] | None = None
        self._queues: set[asyncio.Queue[Event | None]] = set()  # None: the end

    def publish(self, event: Event) -> None:
        self.last = event
        for queue in self._queues:
            queue.put_nowait(event)

    def end(self, error: BaseException | None = None) -> None:
        self.error = error
        self.ended.set()
        for queue in self._queues:
            queue.put_nowait(None)

    async def events(self) -> AsyncGenerator[Event, None]:
        """The events from now on (starting with the latest); raises the pull's error."""
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        if self.last is not None:
            queue.put_nowait(self.last)
        if self.ended.is_set():
            queue.put_nowait(None)
        self._queues.add(queue)
        try:
            while (item := await queue.get()) is not None:
                yield item
        finally:
            self._queues.discard(queue)
        if self.error is not None:
            raise self.error


class PullManager:
    def __init__(self, puller: Puller, records: PullRecords, max_running: int = 3):
        self.puller = puller
        self.records = records
        self.max_running = max(1, max_running)
        self._jobs: dict[str, PullJob] = {}
        self._active: set[PullJob] = set()
        self._queue: deque[PullJob] = deque()
        self._closing = False

    # -- operations -------------------------------------------------------------------------
    def start(self, text: str) -> PullJob:
        """The running (or queued) pull of ``text``, or a new one, which resumes any partial
        download; it starts now if fewer than ``max_running`` pulls run, else it queues."""
        name = parse_name(text)
        job = self._running(name)
        if job is not None:
            return job
        job = PullJob(name)
        self._jobs[name.full] = job
        earlier = self.records.get(name.full)
        blobs = dict(earlier.blobs) if earlier is not None else {}  # a resume shows its bytes
        if len(self._active) < self.max_running and not self._closing:
            self.records.put(name.full, PullRecord(name.display, blobs=blobs))
            self._launch(job)
        else:
            self.records.put(
                name.full, PullRecord(name.display, state=QUEUED, status=QUEUED, blobs=blobs)
            )
            self._queue.append(job)
            job.publish({"status": QUEUED})
        return job

    def resume(self, text: str) -> PullJob:
        name = parse_name(text)
        if not self._running(name) and self.records.get(name.full) is None:
            raise NotFoundError(f"no paused pull of {name.display!r}; start one with pull")
        return self.start(text)

    async def pause(self, text: str) -> None:
        name = parse_name(text)
        job = self._running(name)
        if job is None:
            if self.records.get(name.full) is None:
                raise NotFoundError(f"no pull of {name.display!r} is running")
            return  # already paused or failed: nothing runs
        if job in self._queue:
            self._unqueue(job, PAUSED)
            return
        await self._stop(job, self.puller.pause)

    async def cancel(self, text: str) -> None:
        """Stop the pull (if running or queued), delete its partial download and forget it."""
        name = parse_name(text)
        job = self._running(name)
        if job is not None and job in self._queue:
            self._unqueue(job, CANCELLED)
        elif job is not None:
            await self._stop(job, self.puller.cancel)
        known = job is not None or self.records.get(name.full) is not None
        removed = await to_thread.run_sync(self.puller.cancel, name)
        self.records.remove(name.full)
        if not (known or removed):
            raise NotFoundError(f"no pull of {name.display!r} to cancel")

    def list(self) -> list[PullRecord]:
        return self.records.all()

    async def shutdown(self) -> None:
        """Pause every running or queued pull (keeping partial downloads), then close the
        puller."""
        self._closing = True
        while self._queue:
            self._unqueue(self._queue[0], PAUSED)
        running = [job for job in self._jobs.values() if not job.ended.is_set()]
        for job in running:
            with contextlib.suppress(Exception):
                await self._stop(job, self.puller.pause, timeout=3.0)
            if job.task is not None and not job.task.done():
                job.task.cancel()
        await to_thread.run_sync(self.puller.close)

    # -- the queue and the task -------------------------------------------------------------
    def _launch(self, job: PullJob) -> None:
        self._active.add(job)
        job.task = asyncio.get_running_loop().create_task(self._run(job))

    def _unqueue(self, job: PullJob, status: str) -> None:
        """End a pull that never started: paused stays listed, cancelled is forgotten."""
        self._queue.remove(job)
        if status == PAUSED:
            self._set_state(job, "paused", PAUSED)
        job.publish({"status": status})
        job.end()

    def _next(self) -> None:
        """A running pull ended: start queued ones while there is room."""
        while self._queue and len(self._active) < self.max_running and not self._closing:
            job = self._queue.popleft()
            self._set_state(job, "running", PULLING_MANIFEST)
            self._launch(job)

    async def _run(self, job: PullJob) -> None:
        try:
            await self._drive(job)
        finally:
            self._active.discard(job)
            self._next()

    async def _drive(self, job: PullJob) -> None:
        try:
            async for event in self.puller.apull(job.name):
                self._record(job, event)
                job.publish(event.to_json())
        except asyncio.CancelledError:
            self._set_state(job, "paused", "paused", interrupted=True)
            job.end()
            raise
        except Exception as error:
            self._failed(job, error)
            job.end(error)
            return
        job.end()

    def _record(self, job: PullJob, event: PullEvent) -> None:
        record = self.records.get(job.name.full) or PullRecord(job.name.display)
        if event.status != PULLING_MANIFEST:
            job.resolved = True
        if event.digest and event.total is not None:
            record.blobs[event.digest] = [event.total, event.completed or 0]
        record.status = event.status
        if event.status in ("success", "cancelled"):
            self.records.remove(job.name.full)
        elif event.status == "paused":
            self._set_state(job, "paused", "paused")
        else:
            self.records.put(job.name.full, record, force=False)

    def _failed(self, job: PullJob, error: Exception) -> None:
        if not job.resolved:  # a typo or an unknown repository: nothing to list or resume
            self.records.remove(job.name.full)
            return
        log.warning("pull of %s failed: %s", job.name.display, error)
        self._set_state(job, "failed", "failed", error=str(error))

    def _set_state(self, job: PullJob, state: PullState, status: str, **fields: object) -> None:
        record = self.records.get(job.name.full)
        if record is None:
            return
        record.state, record.status = state, status
        for key, value in fields.items():
            setattr(record, key, value)
        self.records.put(job.name.full, record)

    # -- helpers ----------------------------------------------------------------------------
    def _running(self, name: ModelName) -> PullJob | None:
        job = self._jobs.get(name.full)
        return job if job is not None and not job.ended.is_set() else None

    async def _stop(
        self, job: PullJob, stop: Callable[[ModelName], bool], timeout: float = _STOP_WAIT
    ) -> None:
        """Ask the puller to stop ``job``, retrying until its session exists, and wait."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not job.ended.is_set() and loop.time() < deadline:
            if await to_thread.run_sync(stop, job.name):
                break
            await asyncio.sleep(0.05)  # the pull's thread has not registered its session yet
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(job.ended.wait(), max(0.1, deadline - loop.time()))
