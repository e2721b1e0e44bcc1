"""A generation in progress: runner events in, API-neutral deltas out.

It owns the scheduler lease for its whole life and gives it back the moment the runner is
done, fails, or the caller closes it (a client that hung up): closing cancels the runner's
sequence, so the slot is free for the next request at once.

A thinking model's output is split into ``Delta.thinking`` and ``Delta.text`` (tool calls are
parsed from the answer only). When the thinking is generated apart (a thinking budget, or a
grammar meant for the answer), the answer part is a second runner generation under the same
lease (see ``thinking_run``).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from localllm.daemon.inference.history_fit import Truncation
from localllm.daemon.inference.thinking_run import ThinkingRun, add_parts
from localllm.daemon.inference.tool_call_parser import Piece, ToolCallParser
from localllm.daemon.inference.tool_calls import ToolCall, ToolCallDelta
from localllm.daemon.runners.types import DoneEvent, RunnerCrashed, TokenEvent
from localllm.daemon.scheduler import Lease

__all__ = [
    "Collected",
    "Delta",
    "Finished",
    "Generation",
    "GenerationStats",
    "GenerationStream",
    "ToolCallDelta",
    "primed",
]


@dataclass(frozen=True, slots=True)
class GenerationStats:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int  # prompt tokens reused from the prefix cache (not decoded again)
    load_seconds: float  # waiting for the model: queue and loading
    prompt_seconds: float
    generation_seconds: float
    time_to_first_token: float  # from the request reaching inference to the first token
    total_seconds: float
    sampling: str = ""  # where the runner sampled: "backend" (in the decode), "host", "" unknown
    # of ``cached_tokens``, those read back from the prompt cache on disk, the bytes read for
    # them and the time reading, checking and restoring took
    prompt_disk_tokens: int = 0
    prompt_disk_bytes: int = 0
    prompt_disk_seconds: float = 0.0

    @property
    def seconds_per_token(self) -> float:
        return self.generation_seconds / max(1, self.completion_tokens - 1)


@dataclass(frozen=True, slots=True)
class Delta:
    text: str
    logprobs: tuple[dict[str, object], ...] = ()
    thinking: str = ""  # the model's reasoning, never part of ``text``
    tool_calls: tuple[ToolCallDelta, ...] = ()


@dataclass(frozen=True, slots=True)
class Finished:
    reason: str  # "stop", "length", "tool_calls", "cancelled", "error"
    usage: GenerationStats
    tool_calls: tuple[ToolCall, ...] = ()
    stop_sequence: str | None = None  # the request's stop string that ended it, if one did


@dataclass(frozen=True, slots=True)
class Collected:
    """A whole generation at once, for ``stream: false`` answers."""

    text: str
    logprobs: list[dict[str, object]]
    finished: Finished
    thinking: str = ""


class GenerationStream(ABC):
    """What every generation is, local or remote: iterate for ``Delta`` items, the last item
    is a ``Finished``; ``prime`` first, ``collect`` for a whole answer, always ``aclose()``.

    A kind of generation says how its next items come (``_advance``), how it stops early
    (``_stop``), what it gives back once closed (``_let_go``) and what an unfinished one used
    (``_unfinished_usage``); the order of items, the ``Finished`` reported once and the
    lifecycle are the same for all."""

    truncation: Truncation | None = None  # the chat's oldest turns dropped to fit its context

    def __init__(self, model: str, on_finished: Callable[[str, Finished], None] | None):
        self.model = model
        self.finished: Finished | None = None
        self._on_finished = on_finished
        self._out: deque[Delta | Finished] = deque()
        self._closed = False

    @property
    @abstractmethod
    def processor(self) -> str:
        """Where it runs ("100% GPU", "remote NAME"), for logs and ``ps``."""

    async def prime(self) -> None:
        """Wait for the first item, so errors (prompt too long, a remote down...) come before
        any output."""
        item = await self.__anext__()
        self._out.appendleft(item)

    def __aiter__(self) -> GenerationStream:
        return self

    async def __anext__(self) -> Delta | Finished:
        while not self._out:
            if self.finished is not None or self._closed:
                raise StopAsyncIteration
            await self._advance()
        return self._out.popleft()

    @abstractmethod
    async def _advance(self) -> None:
        """Queue the next items (none is fine), or end as an error and raise."""

    async def collect(self) -> Collected:
        """Drain the generation: all text, all logprob entries and how it finished."""
        parts: list[str] = []
        thoughts: list[str] = []
        entries: list[dict[str, object]] = []
        finished: Finished | None = None
        async for item in self:
            if isinstance(item, Delta):
                parts.append(item.text)
                thoughts.append(item.thinking)
                entries.extend(item.logprobs)
            else:
                finished = item
        assert finished is not None, "a generation always ends with Finished"
        return Collected("".join(parts), entries, finished, "".join(thoughts))

    def _end(self, finished: Finished) -> None:
        """Record how it ended, once (the first word wins)."""
        if self.finished is not None:
            return
        self.finished = finished
        if self._on_finished is not None:
            self._on_finished(self.model, finished)

    async def aclose(self) -> None:
        """Stop generating (if still running) and give back what it holds. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._stop()
        finally:
            self._let_go()
            if self.finished is None:
                self._end(Finished("cancelled", self._unfinished_usage()))

    @abstractmethod
    async def _stop(self) -> None:
        """End what is still running (the runner's sequence, the remote's request)."""

    @abstractmethod
    def _let_go(self) -> None:
        """Give back the slot it held (a lease, a remote's count of requests)."""

    @abstractmethod
    def _unfinished_usage(self) -> GenerationStats:
        """What a generation that never finished used (for its "cancelled" ``Finished``)."""


class Generation(GenerationStream):
    """A local generation: a runner's events under a scheduler lease."""

    def __init__(
        self,
        model: str,
        lease: Lease,
        stream: AsyncGenerator[TokenEvent | DoneEvent],
        *,
        started: float,
        loaded: float,
        tool_filter: ToolCallParser | None = None,
        thinking: ThinkingRun | None = None,
        on_finished: Callable[[str, Finished], None] | None = None,
        truncation: Truncation | None = None,
    ):
        super().__init__(model, on_finished)
        self.truncation = truncation
        self._lease = lease
        self._stream = stream
        self._started = started
        self._loaded = loaded
        self._filter = tool_filter
        self._thinking = thinking
        self._held_logprobs: list[dict[str, object]] = []
        self._first_token: float | None = None
        self._completion_tokens = 0

    @property
    def processor(self) -> str:
        return self._lease.processor

    async def _advance(self) -> None:
        event = await self._next_event()
        if isinstance(event, DoneEvent) and await self._answer_part(event):
            return
        self._handle(event)

    async def _answer_part(self, done: DoneEvent) -> bool:
        """Start the answer part if the thinking part just ended (see ``thinking_run``)."""
        after = self._thinking.next_call(done) if self._thinking is not None else None
        if after is None:
            return False
        call, (thinking, text) = after
        self._emit_answer(thinking, text)  # what the splitter held back: thinking stays so
        await self._stream.aclose()
        self._stream = self._lease.runner.generate(call)
        return True

    async def _next_event(self) -> TokenEvent | DoneEvent:
        try:
            return await anext(self._stream)
        except StopAsyncIteration:
            self._fail(crashed=True)
            raise RunnerCrashed(f"the runner for {self.model} ended a generation early") from None
        except RunnerCrashed:
            self._fail(crashed=True)
            raise
        except Exception:
            self._fail(crashed=False)
            raise

    def _fail(self, crashed: bool) -> None:
        self._lease.release(crashed=crashed)
        self._end(Finished("error", self._usage(None)))

    def _handle(self, event: TokenEvent | DoneEvent) -> None:
        if isinstance(event, DoneEvent):
            self._finish(event)
            return
        if self._first_token is None:
            self._first_token = time.perf_counter()
        self._completion_tokens += len(event.token_ids)
        self._held_logprobs.extend(event.logprobs)
        thinking, answer = self._thinking.feed(event.text) if self._thinking else ("", event.text)
        self._emit_answer(thinking, answer)

    def _emit_answer(self, thinking: str, answer: str) -> None:
        """The thinking as is, the answer through the tool-call parser (calls are the answer's)."""
        if self._filter is None:
            self._emit([answer], flush=True, thinking=thinking)
        else:
            self._emit(self._filter.feed(answer), flush=False, thinking=thinking)

    def _emit(self, pieces: Sequence[Piece], flush: bool, thinking: str = "") -> None:
        """Queue ``pieces`` in order as deltas (within one, thinking comes before text and text
        before tool-call pieces); the logprobs held so far ride on the first, or alone with
        ``flush``."""
        deltas: list[Delta] = [Delta("", thinking=thinking)] if thinking else []
        for piece in pieces:
            if isinstance(piece, ToolCallDelta):
                last = deltas.pop() if deltas else Delta("")
                deltas.append(replace(last, tool_calls=(*last.tool_calls, piece)))
            elif deltas and not deltas[-1].tool_calls:
                deltas[-1] = replace(deltas[-1], text=deltas[-1].text + piece)
            elif piece:
                deltas.append(Delta(piece))
        if not deltas and flush and self._held_logprobs:
            deltas.append(Delta(""))
        if deltas:
            deltas[0] = replace(deltas[0], logprobs=tuple(self._held_logprobs))
            self._held_logprobs.clear()
        self._out.extend(deltas)

    def _finish(self, done: DoneEvent) -> None:
        self._lease.release()
        if self._thinking is not None:
            self._emit_answer(*self._thinking.finish())
            if self._thinking.first_part is not None:
                done = add_parts(self._thinking.first_part, done)
        self._lease.count_done(done)
        calls: list[ToolCall] = []
        if self._filter is not None:
            rest, calls = self._filter.finish()
            self._emit(rest, flush=True)
        reason = "tool_calls" if calls and done.reason != "length" else done.reason
        stop = None if calls else done.stop_sequence
        finished = Finished(reason, self._usage(done), tuple(calls), stop)
        self._end(finished)
        self._out.append(self.finished or finished)

    def _usage(self, done: DoneEvent | None) -> GenerationStats:
        now = time.perf_counter()
        first = (self._first_token or now) - self._started
        if done is None:
            load, total = self._loaded - self._started, now - self._started
            return GenerationStats(0, self._completion_tokens, 0, load, 0.0, 0.0, first, total)
        return GenerationStats(
            prompt_tokens=done.prompt_tokens,
            completion_tokens=done.completion_tokens,
            cached_tokens=max(0, done.prompt_tokens - done.prompt_evaluated),
            load_seconds=self._loaded - self._started,
            prompt_seconds=done.prompt_seconds,
            generation_seconds=done.generation_seconds,
            time_to_first_token=first,
            total_seconds=now - self._started,
            sampling=done.sampling,
            prompt_disk_tokens=done.prompt_disk_tokens,
            prompt_disk_bytes=done.prompt_disk_bytes,
            prompt_disk_seconds=done.prompt_disk_seconds,
        )

    def _unfinished_usage(self) -> GenerationStats:
        return self._usage(None)

    async def _stop(self) -> None:
        await self._stream.aclose()  # cancels the sequence if it is still running

    def _let_go(self) -> None:
        self._lease.release()


_Started = TypeVar("_Started", bound=GenerationStream)


async def primed(generation: _Started) -> _Started:
    """``generation`` once its first token (or its error) is there; closed on failure, so its
    lease or its remote's slot is given back before the error reaches the route."""
    try:
        await generation.prime()
    except BaseException:
        await generation.aclose()
        raise
    return generation
