"""A runner subprocess that serves one request at a time, talked to from asyncio.

The base of ``TranscriberProcess`` and ``SpeakerProcess``: the runner is a child process
(``python -m <its worker>``), as the llama runner is (``daemon.runners.process``): a crash or a
native abort never takes the daemon down, and unloading really frees memory. One task reads
its stdout and routes each event to the request it names; another keeps the last lines of its
stderr (and appends them to a log file) so every error can say what the runner said before it
failed. If the process dies, every request in flight raises :class:`RunnerCrashed` at once.
A subclass names its worker, its frames (:class:`ChildWire`) and its request methods.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
import sys
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Generic, Protocol, Self, TypeVar

from .child_frames import CancelOp, ChildWire, FatalEv, ShutdownOp
from .log_tail import RunnerLog, quotable_lines
from .process import runner_process_env
from .protocol import encode_frame, read_frame
from .typed_frames import ProtocolError, Tagged
from .types import RunnerCrashed, RunnerError, RunnerState

__all__ = ["ChildProcess", "ChildSpec"]

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # holds the ``daemon`` package
_ERROR_LOG_LINES = 15
_STREAM_LIMIT = 1 << 20
_Stream = TypeVar("_Stream", asyncio.StreamReader, asyncio.StreamWriter)


class ChildSpec(Protocol):
    """What a runner loads: a folder, and the name to call it by in messages."""

    @property
    def model_path(self) -> str: ...
    @property
    def model_name(self) -> str: ...


_Spec = TypeVar("_Spec", bound=ChildSpec)
_Info = TypeVar("_Info")
_Request = TypeVar("_Request", bound=Tagged)
_Event = TypeVar("_Event", bound=Tagged)
_Out = TypeVar("_Out")


@dataclass(frozen=True, slots=True)
class _Closed:
    """Put in a request's queue when the runner is gone; each request raises a fresh error."""

    error: Callable[[], RunnerError]


class ChildProcess(Generic[_Spec, _Info, _Request, _Event]):
    """One running runner. Create with ``start``; every method is safe to call concurrently.
    Requests are served one at a time, in the order they were sent."""

    _WORKER: ClassVar[str]  # the module ``python -m`` runs
    _ROLE: ClassVar[str]  # what messages call it: "transcriber"
    _LOADS: ClassVar[str]  # what messages call what it loads: "model"
    # what an error event's kind raises; any other kind raises RunnerError
    _ERRORS: ClassVar[Mapping[str, type[RunnerError]]]
    _wire: ChildWire[_Spec, _Info, _Request, _Event]
    info: _Info  # what the runner reported when it was ready (set by ``start``)

    def __init__(self, spec: _Spec, proc: asyncio.subprocess.Process, log: RunnerLog):
        self.spec = spec
        self.state: RunnerState = "loading"
        self._proc = proc
        self._log = log
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Queue[_Event | _Closed]] = {}
        self._closed: _Closed | None = None
        self._stderr_task = asyncio.create_task(log.pump(self._piped(proc.stderr)))
        self._reader_task: asyncio.Task[None] | None = None

    @classmethod
    async def _launch(
        cls, spec: _Spec, log_path: Path | None, env: Mapping[str, str] | None, timeout: float
    ) -> Self:
        """Start a runner for ``spec`` (its path already absolute) and wait until it is loaded."""
        log = RunnerLog(log_path)
        log.note(f"starting {cls._ROLE} for {spec.model_path}")
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            cls._WORKER,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=_PACKAGE_ROOT,
            limit=_STREAM_LIMIT,
            env=runner_process_env(env),
        )
        runner = cls(spec, proc, log)
        try:
            runner._send(runner._wire.spec(spec))
            runner.info = await asyncio.wait_for(runner._wait_ready(), timeout)
        except TimeoutError:
            await runner._abandon()
            what = f"{runner._name} did not load within {timeout:g} s"
            raise RunnerError(runner._explain(what)) from None
        except BaseException:
            await runner._abandon()
            raise
        runner.state = "ready"
        runner._reader_task = asyncio.create_task(runner._read_loop())
        return runner

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    @property
    def alive(self) -> bool:
        return self._closed is None and self._proc.returncode is None

    def last_log_lines(self, n: int = _ERROR_LOG_LINES) -> list[str]:
        """The runner's last ``n`` log lines that an answer may quote (no native backtrace)."""
        return quotable_lines(self._log.lines)[-n:] if n > 0 else []

    async def stop(self, timeout: float = 10.0) -> None:
        """Ask the runner to exit (a running request stops at its next step); kill it if it
        has not within ``timeout`` seconds."""
        if self._proc.returncode is None:
            if self.state == "ready":
                self.state = "stopping"
            with contextlib.suppress(Exception):
                self._send(ShutdownOp())
                self._stdin.close()
            try:
                await asyncio.wait_for(self._proc.wait(), timeout)
            except TimeoutError:
                self.kill()
        await self.wait()

    def kill(self) -> None:
        if self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()

    async def wait(self) -> int:
        """Wait for the process to exit (and its last events and log lines to be read)."""
        code = await self._proc.wait()
        tasks = [t for t in (self._reader_task, self._stderr_task) if t is not None]
        await asyncio.gather(*tasks, return_exceptions=True)
        return code

    # -- for subclasses ---------------------------------------------------------------------

    async def _stream(
        self,
        request: Callable[[int], _Request],
        partial: tuple[type[_Out], ...],
        final: type[_Out],
    ) -> AsyncGenerator[_Out, None]:
        """Send ``request`` (given its id) and yield its ``partial`` events until its ``final``
        one; an error event raises. Closing the iterator early cancels the request."""
        rid, queue = self._open()
        finished = False
        try:
            self._send(request(rid))
            while True:
                event = await self._next(queue)
                if isinstance(event, partial):
                    yield event
                    continue
                finished = True
                if isinstance(event, final):
                    yield event
                    return
                raise self._failure(event)
        finally:
            self._pending.pop(rid, None)
            if not finished:
                self._cancel(rid)

    # -- internals --------------------------------------------------------------------------

    def _open(self) -> tuple[int, asyncio.Queue[_Event | _Closed]]:
        self._raise_if_closed()
        rid = next(self._ids)
        queue: asyncio.Queue[_Event | _Closed] = asyncio.Queue()
        self._pending[rid] = queue
        return rid, queue

    def _send(self, request: Tagged) -> None:
        self._raise_if_closed()
        self._stdin.write(encode_frame(self._wire.codec.encode(request)))

    def _cancel(self, rid: int) -> None:
        if self.alive:
            with contextlib.suppress(Exception):
                self._stdin.write(encode_frame(self._wire.codec.encode(CancelOp(rid))))

    def _raise_if_closed(self) -> None:
        if self._closed is not None:
            raise self._closed.error()

    async def _next(self, queue: asyncio.Queue[_Event | _Closed]) -> _Event:
        event = await queue.get()
        if isinstance(event, _Closed):
            raise event.error()
        return event

    async def _next_event(self) -> _Event | None:
        message = await read_frame(self._stdout)
        return None if message is None else self._wire.codec.decode_event(message)

    async def _wait_ready(self) -> _Info:
        while True:
            event = await self._next_event()
            if event is None:
                await self._settle()
                raise self._death(RunnerError, "exited while loading")
            if isinstance(event, FatalEv):
                await self._settle()
                raise RunnerError(self._explain(f"cannot load {self._name}: {event.message}"))
            if isinstance(event, self._wire.ready):
                return event.info

    async def _read_loop(self) -> None:
        try:
            while (event := await self._next_event()) is not None:
                rid = getattr(event, "id", None)
                queue = self._pending.get(rid) if isinstance(rid, int) else None
                if queue is not None:  # else a request cancelled (or closed) meanwhile
                    queue.put_nowait(event)
        except (ProtocolError, ValueError) as exc:
            self._log.lines.append(f"[daemon] bad frame from the {self._ROLE}: {exc}")
            self.kill()
        await self._settle()
        self._close_all()

    def _close_all(self) -> None:
        if self.state == "stopping":
            self.state = "stopped"
            stopped = f"{self._name} was stopped"
            closed = _Closed(lambda: RunnerError(stopped))
        else:
            self.state = "crashed"
            closed = _Closed(lambda: self._death(RunnerCrashed, "stopped unexpectedly"))
        self._closed = closed
        for queue in self._pending.values():
            queue.put_nowait(closed)

    async def _settle(self) -> None:
        """Let the process exit and its stderr drain, so the error can quote its last lines."""
        try:
            await asyncio.wait_for(self._proc.wait(), 5.0)
        except TimeoutError:
            self.kill()
            await self._proc.wait()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._stderr_task), 2.0)

    async def _abandon(self) -> None:
        self.kill()
        not_started = f"{self._name} did not start"
        self._closed = _Closed(lambda: RunnerError(not_started))
        self.state = "stopped"
        await self._settle()

    def _death(self, kind: type[RunnerError], what: str) -> RunnerError:
        """The error for the process's end: how it ended, and its last log lines."""
        code = self._proc.returncode
        killed_by = None
        if code is not None and code < 0:
            try:
                killed_by = signal.Signals(-code).name
            except ValueError:
                killed_by = f"signal {-code}"
        how = f"killed by {killed_by}" if killed_by else f"exit code {code}"
        return kind(self._explain(f"{self._name} {what} ({how})"), exit_signal=killed_by)

    def _failure(self, event: _Event) -> RunnerError:
        """The error for ``event``, which ends a request without answering it."""
        if not isinstance(event, self._wire.failed):
            return RunnerError(f"the {self._ROLE} answered with an unexpected {event.TAG!r} event")
        return self._ERRORS.get(event.kind, RunnerError)(event.message)

    @property
    def _stdin(self) -> asyncio.StreamWriter:
        return self._piped(self._proc.stdin)

    @property
    def _stdout(self) -> asyncio.StreamReader:
        return self._piped(self._proc.stdout)

    @property
    def _name(self) -> str:
        name = self.spec.model_name or Path(self.spec.model_path).name
        return f"the {self._ROLE} for {self._LOADS} {name!r}"

    def _explain(self, message: str) -> str:
        """``message`` followed by the runner's last log lines."""
        lines = self.last_log_lines()
        if lines:
            message += "; its last log lines:\n" + "\n".join(lines)
        return message

    def _piped(self, stream: _Stream | None) -> _Stream:
        """One of the runner's pipes (``start`` opens all three)."""
        if stream is None:
            raise RunnerError(f"the {self._ROLE} was started without its pipes")
        return stream
