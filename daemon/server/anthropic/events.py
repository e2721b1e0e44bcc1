"""Anthropic's stream events for one generation, the stream half of ``/v1/messages``.

The sequence is Anthropic's: ``message_start`` and a ``ping``; then each content block
(thinking, text, tool_use, in the order the model writes them) as ``content_block_start``, its
deltas and ``content_block_stop``; then ``message_delta`` (stop reason and usage) and
``message_stop``. Tool calls stream piece by piece when inference hands them over so
(``Delta.tool_calls``), or whole at the end (``Finished.tool_calls``).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterable, AsyncIterator, Iterator

from localllm.daemon.api.anthropic import (
    AnthropicContent,
    AnthropicMessage,
    AnthropicUsage,
    ContentBlockDelta,
    ContentBlockStart,
    ContentBlockStop,
    InputJsonDelta,
    MessageDelta,
    MessageDeltaEvent,
    MessageStart,
    MessageStop,
    Ping,
    SignatureDelta,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
)
from localllm.daemon.inference import Delta, Finished, ToolCallDelta
from localllm.daemon.server.anthropic.answers import signature, stop_reason, tool_input, usage_out
from localllm.daemon.server.sse import sse_event

__all__ = ["message_events"]

_Event = (
    MessageStart
    | Ping
    | ContentBlockStart
    | ContentBlockDelta
    | ContentBlockStop
    | MessageDeltaEvent
    | MessageStop
)


async def message_events(
    message_id: str, model: str, items: AsyncIterable[Delta | Finished]
) -> AsyncIterator[bytes]:
    """The events of message ``message_id``, from a generation's ``items``."""
    # The prompt's token count comes with the runner's last event: message_delta has it.
    usage = AnthropicUsage(input_tokens=0, output_tokens=0)
    start = AnthropicMessage(id=message_id, content=[], model=model, usage=usage)
    yield _event(MessageStart(message=start))
    yield _event(Ping())
    blocks = _Blocks()
    async for item in items:
        frames = blocks.delta(item) if isinstance(item, Delta) else blocks.finish(item)
        for frame in frames:
            yield frame
        if isinstance(item, Finished):
            reason, stop = stop_reason(item)
            delta = MessageDelta(stop_reason=reason, stop_sequence=stop)
            yield _event(MessageDeltaEvent(delta=delta, usage=usage_out(item.usage)))
            yield _event(MessageStop())


class _Blocks:
    """The content blocks of one streamed answer, each started, filled and stopped in turn."""

    def __init__(self) -> None:
        self.count = 0  # blocks started so far; the open one is the last
        self.open: str | None = None  # the open block's type
        self.thinking: list[str] = []  # the open thinking block's text, for its signature
        self.calls: dict[int, int] = {}  # a streamed tool call's index -> its block's index

    def delta(self, item: Delta) -> Iterator[bytes]:
        if item.thinking:
            if self.open != "thinking":
                yield from self._start(ThinkingBlock(thinking="", signature=""))
            self.thinking.append(item.thinking)
            yield self._delta(ThinkingDelta(thinking=item.thinking))
        if item.text:
            if self.open != "text":
                yield from self._start(TextBlock(text=""))
            yield self._delta(TextDelta(text=item.text))
        for piece in item.tool_calls:
            yield from self._tool_piece(piece)

    def finish(self, finished: Finished) -> Iterator[bytes]:
        if not self.calls:  # the calls came whole, at the end
            for call in finished.tool_calls:
                yield from self._start(ToolUseBlock(id=call.id, name=call.name, input={}))
                arguments = json.dumps(tool_input(call.arguments), ensure_ascii=False)
                yield self._delta(InputJsonDelta(partial_json=arguments))
        if not self.count:
            yield from self._start(TextBlock(text=""))  # an answer always has a block
        yield from self._stop()

    def _tool_piece(self, piece: ToolCallDelta) -> Iterator[bytes]:
        if piece.index not in self.calls:
            call_id = piece.id or f"toolu_{secrets.token_hex(12)}"
            yield from self._start(ToolUseBlock(id=call_id, name=piece.name or "", input={}))
            self.calls[piece.index] = self.count - 1
        if piece.arguments:
            delta = InputJsonDelta(partial_json=piece.arguments)
            yield _event(ContentBlockDelta(index=self.calls[piece.index], delta=delta))

    def _start(self, block: AnthropicContent) -> Iterator[bytes]:
        yield from self._stop()
        yield _event(ContentBlockStart(index=self.count, content_block=block))
        self.count += 1
        self.open = block.type

    def _stop(self) -> Iterator[bytes]:
        if self.open is None:
            return
        if self.open == "thinking":
            yield self._delta(SignatureDelta(signature=signature("".join(self.thinking))))
            self.thinking.clear()
        yield _event(ContentBlockStop(index=self.count - 1))
        self.open = None

    def _delta(self, delta: TextDelta | ThinkingDelta | SignatureDelta | InputJsonDelta) -> bytes:
        return _event(ContentBlockDelta(index=self.count - 1, delta=delta))


def _event(payload: _Event) -> bytes:
    """One event, named by its type, its null fields kept as Anthropic sends them."""
    return sse_event(payload.type, payload, nulls=True)
