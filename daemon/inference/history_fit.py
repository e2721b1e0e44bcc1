"""Fitting a long chat into its context, as Ollama's ``/api/chat`` does: keep the system
messages and the most recent turns whose rendered prompt leaves room for the reply.

Turns are dropped whole, from the oldest, and the kept history always starts at a user
message: a tool result never loses the call it answers, the last user message is always kept,
and templates that insist on user/assistant alternation still render. The cut is found by a
binary search over the possible starts, so a long chat costs a few counts, not one per turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from localllm.daemon.inference.jobs import GenerationJob
from localllm.daemon.runners.types import ContextOverflowError

__all__ = ["Truncation", "certainly_fits", "fit_history", "reply_room"]

_DEFAULT_REPLY_ROOM = 1024  # tokens left for the answer when the request sets no num_predict
_ADDED_TOKENS = 8  # tokens a tokenizer may add beyond the text's own (BOS, a dummy prefix)


@dataclass(frozen=True, slots=True)
class Truncation:
    """What fitting dropped: ``dropped_messages`` (system messages are never dropped), and
    ``kept_from``, the index in the request's messages of the first message kept after them."""

    dropped_messages: int
    kept_from: int

    def as_dict(self) -> dict[str, int]:
        return {"dropped_messages": self.dropped_messages, "kept_from": self.kept_from}


# Counts the prompt tokens of a job; raises ContextOverflowError when it cannot fit at all.
Counter = Callable[[GenerationJob], Awaitable[int]]


def reply_room(options: Mapping[str, object], context: int) -> int:
    """Tokens kept free for the reply: ``num_predict`` when set, else a reserve; at most half
    the context, so a small context still holds some history."""
    wanted = options.get("num_predict")
    if isinstance(wanted, int) and wanted > 0:
        return min(wanted, context // 2)
    return min(_DEFAULT_REPLY_ROOM, context // 4)


def certainly_fits(prompt: str, has_images: bool, context: int, room: int) -> bool:
    """Whether ``prompt`` fits without counting it: every token stands for at least one byte
    of text, so a prompt of fewer bytes than the room it has cannot take more tokens (an image
    takes tokens of its own, so a prompt with images is counted)."""
    return not has_images and len(prompt.encode()) + _ADDED_TOKENS <= context - room


async def fit_history(
    job: GenerationJob, context: int, room: int, count: Counter
) -> tuple[GenerationJob, Truncation | None]:
    """``job`` with as much recent history as fits ``context - room`` tokens (all of it when
    it fits), and what was dropped. When even the last turn is past the whole context, the
    count's ``ContextOverflowError`` goes up (the route's 400)."""
    messages = job.messages or ()
    starts = _starts(messages)
    limit = context - room
    if len(starts) < 2 or await _fits(job, count, limit):
        return job, None
    # starts[0] keeps everything and does not fit; find the first later start that does.
    low, high = 1, len(starts) - 1
    while low < high:
        middle = (low + high) // 2
        if await _fits(_kept(job, starts[middle]), count, limit):
            high = middle
        else:
            low = middle + 1
    start = starts[low]
    kept = _kept(job, start)
    if low == len(starts) - 1:
        await count(kept)  # the last turn alone: past the whole context is the 400
    dropped = sum(1 for m in messages[:start] if m.get("role") != "system")
    return kept, Truncation(dropped, start)


async def _fits(job: GenerationJob, count: Counter, limit: int) -> bool:
    try:
        return await count(job) <= limit
    except ContextOverflowError:
        return False


def _starts(messages: Sequence[Mapping[str, object]]) -> list[int]:
    """Where the kept history may start: the first message after the leading system ones
    (everything kept), then each later user message."""
    first = next((i for i, m in enumerate(messages) if m.get("role") != "system"), None)
    if first is None:
        return []
    later = [i for i, m in enumerate(messages) if i > first and m.get("role") == "user"]
    return [first, *later]


def _kept(job: GenerationJob, start: int) -> GenerationJob:
    """The job with the system messages and the messages from ``start`` on; the images of
    dropped messages go too, and the kept ones are numbered again."""
    messages = job.messages or ()
    kept = [m for i, m in enumerate(messages) if i >= start or m.get("role") == "system"]
    if not job.images:
        return replace(job, messages=kept)
    images: list[bytes] = []
    renumbered = [_renumbered(m, job.images, images) for m in kept]
    return replace(job, messages=renumbered, images=images)


def _renumbered(
    message: Mapping[str, object], source: Sequence[bytes], images: list[bytes]
) -> Mapping[str, object]:
    content = message.get("content")
    if not isinstance(content, list):
        return message
    parts = []
    for part in content:
        if isinstance(part, Mapping) and part.get("type") == "image":
            images.append(source[int(part["index"])])
            part = {**part, "index": len(images) - 1}
        parts.append(part)
    return {**message, "content": parts}
