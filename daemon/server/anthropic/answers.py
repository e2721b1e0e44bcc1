"""Inference results -> Anthropic's pieces: content blocks, stop reason, usage.

Shared by the whole message (``messages``) and the stream (``events``), so both say the same.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Literal

from localllm.daemon.api.anthropic import (
    AnthropicContent,
    AnthropicUsage,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)
from localllm.daemon.inference import Finished
from localllm.daemon.inference.generation import GenerationStats
from localllm.daemon.inference.json_scan import loads
from localllm.daemon.inference.tool_calls import ToolCall

__all__ = ["StopReason", "content_out", "signature", "stop_reason", "tool_input", "usage_out"]

StopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use"]
_STOP_REASONS: Mapping[str, StopReason] = {"tool_calls": "tool_use", "length": "max_tokens"}


def content_out(thinking: str, text: str, calls: Sequence[ToolCall]) -> list[AnthropicContent]:
    """A whole answer's blocks: thinking first, then text, then tool calls; never none."""
    blocks: list[AnthropicContent] = []
    if thinking:
        blocks.append(ThinkingBlock(thinking=thinking, signature=signature(thinking)))
    if text or not calls:
        blocks.append(TextBlock(text=text))
    blocks += [ToolUseBlock(id=c.id, name=c.name, input=tool_input(c.arguments)) for c in calls]
    return blocks


def tool_input(arguments: str) -> dict[str, object]:
    """A call's JSON arguments text as the object Anthropic's ``input`` is ({} when the text
    never became one: a call cut off by ``max_tokens``)."""
    try:
        value = loads(arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {"value": value}


def signature(thinking: str) -> str:
    """The opaque ``signature`` of a thinking block (clients only send it back)."""
    return "localllm-" + hashlib.sha256(thinking.encode()).hexdigest()[:32]


def stop_reason(finished: Finished) -> tuple[StopReason, str | None]:
    """Anthropic's stop_reason and stop_sequence for how a generation finished."""
    if finished.reason in _STOP_REASONS:
        return _STOP_REASONS[finished.reason], None
    if finished.stop_sequence is not None:
        return "stop_sequence", finished.stop_sequence
    return "end_turn", None


def usage_out(usage: GenerationStats) -> AnthropicUsage:
    """As Anthropic counts: ``input_tokens`` are the prompt tokens not read from the cache."""
    return AnthropicUsage(
        input_tokens=usage.prompt_tokens - usage.cached_tokens,
        output_tokens=usage.completion_tokens,
        cache_read_input_tokens=usage.cached_tokens,
    )
