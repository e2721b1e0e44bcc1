"""Start a speech runner for one Piper voice and talk to it from asyncio.

The runner is a child process (``python -m localllm.daemon.speech.worker``), as the llama and
Whisper runners are: a crash never takes the daemon down, and unloading really frees memory.
One task reads its stdout and routes each event to the request it names; another keeps the
last lines of its stderr (and appends them to a log file) so every error can say what the
runner said before it failed. If the process dies, every request in flight raises
:class:`RunnerCrashed` at once.

What fails, and how: ``RunnerError`` (a voice that does not load, a runner that was stopped),
its ``RunnerCrashed`` (the process died) and ``InvalidRequestError`` (a request the voice
cannot serve as asked: a 400), all from ``daemon.runners.types``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
import sys
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from ..runners.log_tail import RunnerLog, quotable_lines
from ..runners.process import runner_process_env
from ..runners.protocol import encode_frame, read_frame
from ..runners.types import InvalidRequestError, RunnerCrashed, RunnerError, RunnerState
from .frames import (
    AudioChunk,
    CancelOp,
    ErrorEv,
    Event,
    FatalEv,
    ProtocolError,
    ReadyEv,
    Request,
    ShutdownOp,
    SpeakerInfo,
    SpeakerSpec,
    SpeakOp,
    SpeakRequest,
    SpecOp,
    SpeechDone,
    SpeechEvent,
    decode_event,
    encode,
)

__all__ = ["SpeakerProcess"]

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # holds the ``daemon`` package
_ERROR_LOG_LINES = 15
_STREAM_LIMIT = 1 << 20
_Stream = TypeVar("_Stream", asyncio.StreamReader, asyncio.StreamWriter)
_Queue = asyncio.Queue["Event | _Closed"]


@dataclass(frozen=True, slots=True)
class _Closed:
    """Put in a request's queue when the runner is gone; each request raises a fresh error."""

    error: Callable[[], RunnerError]


class SpeakerProcess:
    """One running voice. Create with :meth:`start`; every method is safe to call
    concurrently. Requests are served one at a time, in the order they were sent."""

    info: SpeakerInfo  # what the runner reported when it was ready (set by :meth:`start`)

    def __init__(self, spec: SpeakerSpec, proc: asyncio.subprocess.Process, log: RunnerLog):
        self.spec = spec
        self.state: RunnerState = "loading"
        self._proc = proc
        self._log = log
        self._ids = itertools.count(1)
        self._pending: dict[int, _Queue] = {}
        self._closed: _Closed | None = None
        self._stderr_task = asyncio.create_task(log.pump(_piped(proc.stderr)))
        self._reader_task: asyncio.Task[None] | None = None

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
        log = RunnerLog(log_path)
        log.note(f"starting speaker for {spec.model_path}")
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "localllm.daemon.speech.worker",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=_PACKAGE_ROOT,
            limit=_STREAM_LIMIT,
            env=runner_process_env(env),
        )
        runner = cls(spec, proc, log)
        try:
            runner._send(SpecOp(spec))
            runner.info = await asyncio.wait_for(runner._wait_ready(), start_timeout)
        except TimeoutError:
            await runner._abandon()
            what = f"{runner._name} did not load within {start_timeout:g} s"
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
    def alive(self) -> bool:
        return self._closed is None and self._proc.returncode is None

    def last_log_lines(self, n: int = _ERROR_LOG_LINES) -> list[str]:
        """The runner's last ``n`` log lines that an answer may quote."""
        return quotable_lines(self._log.lines)[-n:] if n > 0 else []

    async def speak(self, request: SpeakRequest) -> AsyncGenerator[SpeechEvent, None]:
        """Stream one text's speech: an AudioChunk as each sentence is made, then a
        SpeechDone. The request is sent at the first step, queued behind the ones sent before
        it; closing the iterator early cancels it. Raises InvalidRequestError (no text, a
        speed out of bounds), RunnerCrashed (the runner died) or RunnerError."""
        rid, queue = self._open()
        finished = False
        try:
            self._send(SpeakOp(rid, request))
            while True:
                event = await self._next(queue)
                if isinstance(event, AudioChunk):
                    yield event
                    continue
                finished = True
                if isinstance(event, SpeechDone):
                    yield event
                    return
                raise _failure(event)
        finally:
            self._pending.pop(rid, None)
            if not finished:
                self._cancel(rid)

    async def stop(self, timeout: float = 10.0) -> None:
        """Ask the runner to exit (a running request stops at its next sentence); kill it if
        it has not within ``timeout`` seconds."""
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

    # -- internals --------------------------------------------------------------------------

    def _open(self) -> tuple[int, _Queue]:
        self._raise_if_closed()
        rid = next(self._ids)
        queue: _Queue = asyncio.Queue()
        self._pending[rid] = queue
        return rid, queue

    def _send(self, request: Request) -> None:
        self._raise_if_closed()
        self._stdin.write(encode_frame(encode(request)))

    def _cancel(self, rid: int) -> None:
        if self.alive:
            with contextlib.suppress(Exception):
                self._stdin.write(encode_frame(encode(CancelOp(rid))))

    def _raise_if_closed(self) -> None:
        if self._closed is not None:
            raise self._closed.error()

    async def _next(self, queue: _Queue) -> Event:
        event = await queue.get()
        if isinstance(event, _Closed):
            raise event.error()
        return event

    async def _next_event(self) -> Event | None:
        message = await read_frame(self._stdout)
        return None if message is None else decode_event(message)

    async def _wait_ready(self) -> SpeakerInfo:
        while True:
            event = await self._next_event()
            if event is None:
                await self._settle()
                raise self._death(RunnerError, "exited while loading")
            if isinstance(event, FatalEv):
                await self._settle()
                raise RunnerError(self._explain(f"cannot load {self._name}: {event.message}"))
            if isinstance(event, ReadyEv):
                return event.info

    async def _read_loop(self) -> None:
        try:
            while (event := await self._next_event()) is not None:
                rid = getattr(event, "id", None)
                queue = self._pending.get(rid) if isinstance(rid, int) else None
                if queue is not None:  # else a request cancelled (or closed) meanwhile
                    queue.put_nowait(event)
        except (ProtocolError, ValueError) as exc:
            self._log.lines.append(f"[daemon] bad frame from the speaker: {exc}")
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

    @property
    def _stdin(self) -> asyncio.StreamWriter:
        return _piped(self._proc.stdin)

    @property
    def _stdout(self) -> asyncio.StreamReader:
        return _piped(self._proc.stdout)

    @property
    def _name(self) -> str:
        name = self.spec.model_name or Path(self.spec.model_path).name
        return f"the speaker for voice {name!r}"

    def _explain(self, message: str) -> str:
        """``message`` followed by the runner's last log lines."""
        lines = self.last_log_lines()
        if lines:
            message += "; its last log lines:\n" + "\n".join(lines)
        return message


def _piped(stream: _Stream | None) -> _Stream:
    """One of the runner's pipes (``start`` opens all three)."""
    if stream is None:
        raise RunnerError("the speaker was started without its pipes")
    return stream


def _failure(event: Event) -> RunnerError:
    """The error for ``event``, which ends a request without answering it."""
    if not isinstance(event, ErrorEv):
        return RunnerError(f"the speaker answered with an unexpected {event.TAG!r} event")
    if event.kind == "invalid_request":
        return InvalidRequestError(event.message)
    return RunnerError(event.message)
