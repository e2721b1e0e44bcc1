"""Start a runner process for one model and talk to it from asyncio.

The runner is a child process (``python -m localllm.daemon.runners.worker``) so a crash or a native
abort never takes the daemon down, and unloading really frees memory. One task reads its stdout
and routes each frame to the request it names; another keeps the last lines of its stderr (and
appends them to a log file) so every error can say what the runner said before it failed.
If the process dies, every request in flight raises :class:`RunnerCrashed` at once.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import signal
import sys
from array import array
from collections.abc import AsyncGenerator, Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar, cast

from .frames import (
    CancelOp,
    DoneEv,
    EmbeddingEv,
    EmbedOp,
    ErrorEv,
    Event,
    FatalEv,
    GenerateOp,
    ReadyEv,
    Request,
    RerankOp,
    ResultEv,
    ShutdownOp,
    SpecOp,
    StatusOp,
    TokenEv,
    TokenizeOp,
    encode,
)
from .log_tail import RunnerLog, quotable_lines
from .protocol import ProtocolError, encode_frame, read_event
from .types import (
    DoneEvent,
    EmbedCall,
    GenerateCall,
    IncompatibleBuildError,
    InvalidRequestError,
    RerankCall,
    RunnerCrashed,
    RunnerError,
    RunnerInfo,
    RunnerSpec,
    RunnerState,
    TokenEvent,
)

__all__ = ["EmbedReply", "RerankReply", "RunnerProcess", "runner_process_env"]

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # holds the ``daemon`` package
_ERROR_LOG_LINES = 15
_STREAM_LIMIT = 1 << 20
_Stream = TypeVar("_Stream", asyncio.StreamReader, asyncio.StreamWriter)


@dataclass(frozen=True, slots=True)
class EmbedReply:
    embeddings: list[list[float]]
    prompt_tokens: int


@dataclass(frozen=True, slots=True)
class RerankReply:
    scores: list[float]  # per document, in the request's order
    prompt_tokens: int
    truncated: tuple[int, ...]  # the documents cut to fit the context, by index


@dataclass(frozen=True, slots=True)
class _Closed:
    """Put in a request's queue when the runner is gone; each request raises a fresh error."""

    error: Callable[[], RunnerError]


class RunnerProcess:
    """One running model. Create with :meth:`start`; every method is safe to call concurrently."""

    info: RunnerInfo  # what the runner reported when it was ready (set by :meth:`start`)

    def __init__(self, spec: RunnerSpec, proc: asyncio.subprocess.Process, log: RunnerLog):
        self.spec = spec
        self.state: RunnerState = "loading"
        self._proc = proc
        self._log = log
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Queue[Event | _Closed]] = {}
        self._closed: _Closed | None = None
        self._stderr_task = asyncio.create_task(log.pump(_piped(proc.stderr)))
        self._reader_task: asyncio.Task[None] | None = None

    @classmethod
    async def start(
        cls,
        spec: RunnerSpec,
        log_path: Path | None = None,
        *,
        start_timeout: float = 300.0,
        verbose: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> RunnerProcess:
        """Start a runner and wait until its model is loaded; RunnerError if it cannot load.

        ``env`` is the runner's whole environment (the daemon passes ``Settings.runner_env``,
        which keeps its secrets out of a process that parses untrusted files); None inherits.
        """
        spec = _absolute(spec)
        log = RunnerLog(log_path)
        log.note(f"starting runner for {spec.model_name}")
        proc = await asyncio.create_subprocess_exec(
            *_command(verbose),
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
            what = f"did not load within {start_timeout:g} s"
            raise RunnerError(runner._explain(f"{runner._name} {what}")) from None
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
        """The runner's last ``n`` log lines that an answer may quote: a native backtrace (its
        libraries' addresses) is left to the log file."""
        return quotable_lines(self._log.lines)[-n:] if n > 0 else []

    async def generate(self, req: GenerateCall) -> AsyncGenerator[TokenEvent | DoneEvent, None]:
        """Stream a generation; the last item is a DoneEvent. Closing early cancels it."""
        rid, queue = self._open()
        finished = False
        try:
            self._send(GenerateOp(rid, req))
            while True:
                event = await self._next(queue)
                if isinstance(event, TokenEv):
                    yield event.event()
                    continue
                finished = True
                if isinstance(event, DoneEv):
                    yield event.done
                    return
                raise _failure(event)
        finally:
            self._pending.pop(rid, None)
            if not finished:
                self._cancel(rid)

    async def embed(self, req: EmbedCall) -> EmbedReply:
        """Pooled embeddings of every input, in order, with the number of tokens they took."""
        rid, queue = self._open()
        vectors: dict[int, list[float]] = {}
        reply = None
        try:
            self._send(EmbedOp(rid, req.inputs, req.normalize, req.truncate))
            while isinstance(reply := await self._next(queue), EmbeddingEv):
                vectors[reply.index] = _floats(reply.f32)
        finally:
            self._pending.pop(rid, None)
            if reply is None or isinstance(reply, EmbeddingEv):
                self._cancel(rid)
        value = _result(reply)
        return EmbedReply([vectors[i] for i in range(value["count"])], value["prompt_tokens"])

    async def rerank(self, req: RerankCall) -> RerankReply:
        """The relevance score of each document to the query, in order (a reranker model)."""
        rid, queue = self._open()
        reply = None
        try:
            self._send(RerankOp(rid, req.query, req.documents, req.truncate))
            reply = await self._next(queue)
        finally:
            self._pending.pop(rid, None)
            if reply is None:
                self._cancel(rid)
        value = _result(reply)
        return RerankReply(value["scores"], value["prompt_tokens"], tuple(value["truncated"]))

    async def tokenize(self, text: str, add_bos: bool = True, special: bool = True) -> list[int]:
        return cast(
            "list[int]", await self._call(lambda rid: TokenizeOp(rid, text, add_bos, special))
        )

    async def status(self) -> dict[str, Any]:
        """Slots in use, queue length, cached tokens per slot and resident memory."""
        return cast("dict[str, Any]", await self._call(StatusOp))

    async def stop(self, timeout: float = 10.0) -> None:
        """Ask the runner to exit; kill it if it has not within ``timeout`` seconds."""
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
        """Wait for the process to exit (and its last frames and log lines to be read)."""
        code = await self._proc.wait()
        tasks = [t for t in (self._reader_task, self._stderr_task) if t is not None]
        await asyncio.gather(*tasks, return_exceptions=True)
        return code

    # -- internals --------------------------------------------------------------------------

    def _open(self) -> tuple[int, asyncio.Queue[Event | _Closed]]:
        self._raise_if_closed()
        rid = next(self._ids)
        queue: asyncio.Queue[Event | _Closed] = asyncio.Queue()
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

    async def _next(self, queue: asyncio.Queue[Event | _Closed]) -> Event:
        event = await queue.get()
        if isinstance(event, _Closed):
            raise event.error()
        return event

    async def _call(self, request: Callable[[int], Request]) -> Any:
        """Send the request ``request`` makes for a fresh id; its result's value."""
        rid, queue = self._open()
        try:
            self._send(request(rid))
            return _result(await self._next(queue))
        finally:
            self._pending.pop(rid, None)

    async def _wait_ready(self) -> RunnerInfo:
        while True:
            event = await read_event(self._stdout)
            if event is None:
                await self._settle()
                raise self._death(RunnerError, "loading")
            if isinstance(event, FatalEv):
                await self._settle()
                what = f"cannot load model {self.spec.model_name!r}: {event.message}"
                if event.invalid:  # the request's fault; the log would add nothing
                    raise InvalidRequestError(what)
                raise RunnerError(self._explain(what))
            if isinstance(event, ReadyEv):
                return event.info

    async def _read_loop(self) -> None:
        try:
            while (event := await read_event(self._stdout)) is not None:
                rid = getattr(event, "id", None)  # load events answer no request
                queue = self._pending.get(rid) if isinstance(rid, int) else None
                if queue is not None:
                    queue.put_nowait(event)
        except (ProtocolError, ValueError) as exc:
            self._log.lines.append(f"[daemon] bad frame from the runner: {exc}")
            self.kill()
        await self._settle()
        self._close_all()

    def _close_all(self) -> None:
        if self.state == "stopping":
            self.state = "stopped"
            stopped = f"the runner for {self.spec.model_name} was stopped"
            closed = _Closed(lambda: RunnerError(stopped))
        else:
            self.state = "crashed"
            closed = _Closed(lambda: self._death(RunnerCrashed, "running"))
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
        not_started = f"the runner for {self.spec.model_name} did not start"
        self._closed = _Closed(lambda: RunnerError(not_started))
        self.state = "stopped"
        await self._settle()

    def _death(self, kind: type[RunnerError], phase: str) -> RunnerError:
        """The error for the process's end while ``phase`` ("loading" or "running"). SIGILL is
        the build's fault, not the model's or the request's, and says how to fix it."""
        killed_by = self._exit_signal()
        if killed_by == "SIGILL":
            return IncompatibleBuildError(f"{self._name} was killed by SIGILL while {phase}")
        what = "exited while loading" if phase == "loading" else "stopped unexpectedly"
        message = self._explain(f"{self._name} {what} ({self._exit_text()})")
        return kind(message, exit_signal=killed_by)

    def _exit_signal(self) -> str | None:
        code = self._proc.returncode
        if code is None or code >= 0:
            return None
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"

    def _exit_text(self) -> str:
        code = self._proc.returncode
        if code is None:
            return "still running"
        killed_by = self._exit_signal()
        return f"killed by {killed_by}" if killed_by else f"exit code {code}"

    @property
    def _stdin(self) -> asyncio.StreamWriter:
        return _piped(self._proc.stdin)

    @property
    def _stdout(self) -> asyncio.StreamReader:
        return _piped(self._proc.stdout)

    @property
    def _name(self) -> str:
        return f"the runner for model {self.spec.model_name!r}"

    def _explain(self, message: str) -> str:
        """``message`` followed by the runner's last log lines."""
        lines = self.last_log_lines()
        if lines:
            message += "; its last log lines:\n" + "\n".join(lines)
        return message


def _piped(stream: _Stream | None) -> _Stream:
    """One of the runner's pipes (``start`` opens all three)."""
    if stream is None:
        raise RunnerError("the runner process was started without its pipes")
    return stream


def _result(event: Event) -> Any:
    """The JSON value of ``event``'s answer; a cast names its shape where it is read."""
    if isinstance(event, ResultEv):
        return event.value
    raise _failure(event)


def _failure(event: Event) -> RunnerError:
    """The error for ``event``, which ends a request without answering it."""
    if isinstance(event, ErrorEv):
        return event.error()
    return RunnerError(f"the runner answered with an unexpected {event.TAG!r} event")


def _floats(data: str) -> list[float]:
    """Decode the worker's little-endian float32 vector."""
    values = array("f", base64.b64decode(data))
    if sys.byteorder == "big":
        values.byteswap()
    return values.tolist()


def _absolute(spec: RunnerSpec) -> RunnerSpec:
    """The runner works in the package directory, so hand it absolute paths."""
    paths = tuple(str(Path(p).resolve()) for p in spec.model_paths)
    projector = str(Path(spec.projector_path).resolve()) if spec.projector_path else None
    drafts = tuple(str(Path(p).resolve()) for p in spec.draft_paths)
    return replace(spec, model_paths=paths, projector_path=projector, draft_paths=drafts)


def runner_process_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """The environment a runner starts with: ``env`` (None: this process's, as a child would
    inherit it), with CUDA numbering the GPUs in PCI bus order unless it says otherwise. The
    memory plan splits the layers over the GPUs in the order ``nvidia-smi`` lists them (PCI
    bus order), while CUDA's own order puts the fastest first: without this, the plan's GPU0
    could be the runner's GPU1, and each GPU's share checked against the other's memory."""
    whole = dict(os.environ if env is None else env)
    whole.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    return whole


def _command(verbose: bool) -> list[str]:
    command = [sys.executable, "-m", "localllm.daemon.runners.worker"]
    return [*command, "--verbose"] if verbose else command
