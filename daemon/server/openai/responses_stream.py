"""A streamed Responses API answer: OpenAI's event sequence, numbered, built from a
generation's deltas.

``response.created`` and ``response.in_progress``; then per output item ``output_item.added``,
its content (``content_part.added``, text or reasoning deltas and ``.done``,
``content_part.done``; or ``function_call_arguments.delta`` and ``.done``) and
``output_item.done``; then ``response.completed`` (or ``response.incomplete`` at the output
limit). Each event has an ``event:`` line as OpenAI's do, and no ``[DONE]`` follows. A failure
mid-stream ends it with ``error`` and ``response.failed``.

Tool calls stream from ``Delta.tool_calls`` pieces where the generation gives them; calls that
only arrive whole in ``Finished.tool_calls`` are sent whole at the end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel

from localllm.daemon.api.openai_responses import (
    ContentPartEvent,
    FunctionCallArgumentsEvent,
    OutputItem,
    OutputItemEvent,
    OutputText,
    ReasoningText,
    ResponseErrorEvent,
    ResponseLifecycleEvent,
    ResponseObject,
    Status,
    StreamEvent,
    TextDeltaEvent,
    TextDoneEvent,
)
from localllm.daemon.inference import Delta, Finished, GenerationStream, ToolCallDelta
from localllm.daemon.inference.tool_calls import ToolCall
from localllm.daemon.server.errors import Redact, error_detail
from localllm.daemon.server.openai.responses_output import (
    ResponseShape,
    item_status,
    message_item,
    new_id,
    reasoning_item,
)
from localllm.daemon.server.respond import Wire
from localllm.daemon.server.sse import EventStream, sse_event, sse_stream

__all__ = ["ResponseStream"]

_TextKind = Literal["message", "reasoning"]


@dataclass(slots=True)
class _OpenText:
    """The message or reasoning item receiving text now."""

    kind: _TextKind
    index: int
    id: str
    parts: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _OpenCall:
    index: int
    id: str
    call_id: str
    name: str
    parts: list[str] = field(default_factory=list)


class ResponseStream:
    """One streamed response; ``events`` for ``respond``'s chunks, ``wire`` for its framing."""

    def __init__(self, shape: ResponseShape):
        self._shape = shape
        self._sequence = 0
        self._model = ""
        self._output: list[OutputItem | None] = []  # by output index; None while open
        self._text: _OpenText | None = None
        self._calls: dict[int, _OpenCall] = {}  # by the generation's call index

    @property
    def wire(self) -> Wire[BaseModel]:
        return Wire(stream=self._framed, whole=lambda answer: answer)

    def _framed(
        self, frames: AsyncIterator[bytes], generation: GenerationStream, redact: Redact
    ) -> EventStream:
        return sse_stream(frames, redact, generation.aclose, error=self.failed, end=b"")

    async def events(self, generation: GenerationStream) -> AsyncIterator[bytes]:
        self._model = generation.model
        yield self._lifecycle("response.created", self._shape.snapshot(self._model))
        yield self._lifecycle("response.in_progress", self._shape.snapshot(self._model))
        async for item in generation:
            frames = self._delta(item) if isinstance(item, Delta) else self._finish(item)
            for frame in frames:
                yield frame

    def failed(self, error: BaseException, redact: Redact) -> bytes:
        """The last events of a stream that broke: ``error``, then ``response.failed``."""
        detail = error_detail(error, redact)
        done = [item for item in self._output if item is not None]
        response = self._shape.failed(self._model, done, detail["message"])
        return self._event(
            ResponseErrorEvent(
                sequence_number=self._next(),
                code=detail["code"] or detail["type"],
                message=detail["message"],
                param=detail["param"],
            )
        ) + self._lifecycle("response.failed", response)

    # -- deltas -----------------------------------------------------------------------------
    def _delta(self, delta: Delta) -> Iterator[bytes]:
        if delta.thinking:
            yield from self._write("reasoning", delta.thinking)
        if delta.text:
            yield from self._write("message", delta.text)
        for piece in delta.tool_calls:
            yield from self._call_piece(piece)

    def _write(self, kind: _TextKind, text: str) -> Iterator[bytes]:
        if self._text is not None and self._text.kind != kind:
            yield from self._close_text("completed")
        if self._text is None:
            yield from self._open_text(kind)
        opened = self._text
        assert opened is not None
        opened.parts.append(text)
        logprobs: list[dict[str, Any]] | None = [] if kind == "message" else None
        yield self._event(
            TextDeltaEvent(
                type=f"response.{_TEXT_EVENTS[kind]}.delta",
                sequence_number=self._next(),
                item_id=opened.id,
                output_index=opened.index,
                delta=text,
                logprobs=logprobs,
            )
        )

    def _open_text(self, kind: _TextKind) -> Iterator[bytes]:
        opened = _OpenText(kind, len(self._output), new_id("msg" if kind == "message" else "rs"))
        self._output.append(None)
        self._text = opened
        yield self._item_event("added", opened.index, _text_item(opened, "in_progress"))
        yield self._part_event("added", opened, "")

    def _close_text(self, status: Status) -> Iterator[bytes]:
        closing, self._text = self._text, None
        if closing is None:
            return
        text = "".join(closing.parts)
        yield self._event(
            TextDoneEvent(
                type=f"response.{_TEXT_EVENTS[closing.kind]}.done",
                sequence_number=self._next(),
                item_id=closing.id,
                output_index=closing.index,
                text=text,
                logprobs=[] if closing.kind == "message" else None,
            )
        )
        yield self._part_event("done", closing, text)
        item = _text_item(closing, status)
        self._output[closing.index] = item
        yield self._item_event("done", closing.index, item)

    def _call_piece(self, piece: ToolCallDelta) -> Iterator[bytes]:
        yield from self._close_text("completed")
        call = self._calls.get(piece.index)
        if call is None:
            call_id = piece.id or new_id("call")
            yield from self._open_call(piece.index, call_id, piece.name or "")
            call = self._calls[piece.index]
        if piece.arguments:
            call.parts.append(piece.arguments)
            yield self._arguments_event(call, delta=piece.arguments)

    def _open_call(self, key: int, call_id: str, name: str) -> Iterator[bytes]:
        call = _OpenCall(len(self._output), new_id("fc"), call_id, name)
        self._output.append(None)
        self._calls[key] = call
        yield self._item_event("added", call.index, self._call_item(call, "", "in_progress"))

    def _close_call(self, key: int) -> Iterator[bytes]:
        call = self._calls.pop(key)
        arguments = "".join(call.parts)
        yield self._arguments_event(call, arguments=arguments)
        item = self._call_item(call, arguments, "completed")
        self._output[call.index] = item
        yield self._item_event("done", call.index, item)

    def _call_item(self, call: _OpenCall, arguments: str, status: Status) -> OutputItem:
        return self._shape.call_item(call.id, ToolCall(call.call_id, call.name, arguments), status)

    # -- the end ----------------------------------------------------------------------------
    def _finish(self, finished: Finished) -> Iterator[bytes]:
        yield from self._close_text(item_status(finished))
        for key, call in enumerate(finished.tool_calls):
            if key not in self._calls:  # only whole at the end: sent whole now
                yield from self._open_call(key, call.id, call.name)
            opened = self._calls[key]
            opened.name = opened.name or call.name
            if not opened.parts:
                opened.parts.append(call.arguments)
                yield self._arguments_event(opened, delta=call.arguments)
        for key in sorted(self._calls):  # .done repeats exactly what the deltas said
            yield from self._close_call(key)
        if not self._output:  # nothing said at all: still one (empty) message, as unstreamed
            yield from self._open_text("message")
            yield from self._close_text(item_status(finished))
        output = [item for item in self._output if item is not None]
        response = self._shape.finish(self._model, output, finished)
        yield self._lifecycle(f"response.{response.status}", response)

    # -- events -----------------------------------------------------------------------------
    def _next(self) -> int:
        self._sequence += 1
        return self._sequence - 1

    def _event(self, event: StreamEvent) -> bytes:
        return sse_event(event.type, event)

    def _lifecycle(self, kind: str, response: ResponseObject) -> bytes:
        event = ResponseLifecycleEvent(type=kind, sequence_number=self._next(), response=response)
        return self._event(event)

    def _item_event(self, kind: str, index: int, item: OutputItem) -> bytes:
        return self._event(
            OutputItemEvent(
                type=f"response.output_item.{kind}",
                sequence_number=self._next(),
                output_index=index,
                item=item,
            )
        )

    def _part_event(self, kind: str, opened: _OpenText, text: str) -> bytes:
        part = OutputText(text=text) if opened.kind == "message" else ReasoningText(text=text)
        return self._event(
            ContentPartEvent(
                type=f"response.content_part.{kind}",
                sequence_number=self._next(),
                item_id=opened.id,
                output_index=opened.index,
                part=part,
            )
        )

    def _arguments_event(self, call: _OpenCall, **text: str) -> bytes:
        kind = "delta" if "delta" in text else "done"
        return self._event(
            FunctionCallArgumentsEvent(
                type=f"response.function_call_arguments.{kind}",
                sequence_number=self._next(),
                item_id=call.id,
                output_index=call.index,
                **text,
            )
        )


_TEXT_EVENTS: dict[_TextKind, str] = {"message": "output_text", "reasoning": "reasoning_text"}


def _text_item(opened: _OpenText, status: Status) -> OutputItem:
    text = "".join(opened.parts)
    if opened.kind == "message":
        return message_item(opened.id, text, status)
    return reasoning_item(opened.id, text, status)
