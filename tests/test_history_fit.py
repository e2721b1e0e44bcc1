"""How ``history_fit`` chooses what a long chat keeps, with a counter that counts characters
(the search, not the tokenizer, is under test here; ``test_chat_truncation`` runs it with the
real runner): whole turns from a user message on, images of dropped turns dropped and the
rest numbered again, and a few counts for a long chat, not one per turn."""

from __future__ import annotations

import asyncio

import pytest

from localllm.daemon.inference.history_fit import certainly_fits, fit_history, reply_room
from localllm.daemon.inference.jobs import GenerationJob
from localllm.daemon.inference.templates import image_part
from localllm.daemon.runners.types import ContextOverflowError

CONTEXT = 1000


class CharacterCounter:
    """Counts a job's message characters, refusing what is past the context, as the runner
    refuses a prompt longer than its context."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, job: GenerationJob) -> int:
        self.calls += 1
        total = 0
        for message in job.messages or ():
            content = message["content"]
            total += len(content) if isinstance(content, str) else 50 * len(content)
        if total >= CONTEXT:
            raise ContextOverflowError(total, CONTEXT)
        return total


def fit(messages, room=100, images=()):
    counter = CharacterCounter()
    job = GenerationJob(model="m", messages=messages, images=images, truncate=True)
    kept, truncation = asyncio.run(fit_history(job, CONTEXT, room, counter))
    return kept, truncation, counter


def chat(turns: int, size: int = 40) -> list[dict]:
    messages = [{"role": "system", "content": "s" * 20}]
    for _ in range(turns):
        messages.append({"role": "user", "content": "u" * size})
        messages.append({"role": "assistant", "content": "a" * size})
    return [*messages, {"role": "user", "content": "last"}]


def test_a_chat_that_fits_is_sent_as_it_is_after_one_count():
    messages = chat(3)
    kept, truncation, counter = fit(messages)
    assert truncation is None and kept.messages == messages and counter.calls == 1


def test_a_long_chat_keeps_the_system_prompt_and_the_latest_turns_that_fit_in_a_few_counts():
    messages = chat(500)
    kept, truncation, counter = fit(messages)
    start = truncation.kept_from
    assert kept.messages == [messages[0], *messages[start:]]
    assert messages[start]["role"] == "user"
    assert sum(len(m["content"]) for m in kept.messages) <= CONTEXT - 100
    assert sum(len(m["content"]) for m in messages[start - 2 :]) + 20 > CONTEXT - 100
    assert truncation.dropped_messages == start - 1
    assert counter.calls <= 12  # 501 possible starts: a binary search, not a scan


def test_a_tool_result_is_never_kept_without_its_call():
    messages = chat(10)
    call = {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f"}}]}
    messages[-1:-1] = [
        call,
        {"role": "tool", "content": "r" * 300},
        {"role": "user", "content": "ok"},
    ]
    kept, truncation, _ = fit(messages, room=400)
    assert truncation is not None
    roles = [m["role"] for m in kept.messages]
    assert roles[1] == "user"
    assert "tool" not in roles or roles[roles.index("tool") - 1] == "assistant"


def test_images_of_dropped_turns_go_and_the_rest_are_numbered_again():
    messages = chat(8, size=100)
    messages[1] = {"role": "user", "content": [image_part(0), {"type": "text", "text": "old"}]}
    messages[-1] = {"role": "user", "content": [image_part(1), {"type": "text", "text": "new"}]}
    kept, truncation, _ = fit(messages, images=(b"old image", b"new image"))
    assert truncation is not None
    assert kept.images == [b"new image"]
    assert kept.messages[-1]["content"][0] == image_part(0)


def test_a_last_turn_past_the_whole_context_is_refused():
    messages = [*chat(3), {"role": "user", "content": "x" * 2000}]
    with pytest.raises(ContextOverflowError):
        fit(messages)


def test_the_room_left_for_the_reply():
    assert reply_room({"num_predict": 64}, 4096) == 64
    assert reply_room({"num_predict": 4000}, 4096) == 2048  # at most half the context
    assert reply_room({}, 32768) == 1024
    assert reply_room({"num_predict": -1}, 256) == 64  # a quarter of a small context


def test_a_prompt_of_fewer_bytes_than_its_room_needs_no_count():
    assert certainly_fits("x" * 800, False, 1000, 100)
    assert not certainly_fits("x" * 895, False, 1000, 100)  # could take 903 tokens
    assert not certainly_fits("é" * 450, False, 1000, 100)  # 450 characters, 900 bytes
    assert not certainly_fits("x", True, 1000, 100)  # an image takes tokens of its own
