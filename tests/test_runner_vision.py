"""Images through a real runner: a tiny model with a real (random-weight) vision projector,
llama.cpp's mtmd encoding PNGs into a sequence, batched with text-only streams."""

from __future__ import annotations

import asyncio
import io

import pytest
from PIL import Image

from localllm.daemon.runners.types import InvalidRequestError
from tests.support.model_writers.projector import TINY_IMAGE_TOKENS, write_tiny_projector
from tests.support.runner import GREEDY, collect, make_spec

MARKER = "<__image_7f3a__>"
PROMPT = f"<|im_start|>user\n{MARKER}\nWhat is this?<|im_end|>\n<|im_start|>assistant\n"


def image(color: tuple[int, int, int], size: tuple[int, int] = (64, 48)) -> bytes:
    out = io.BytesIO()
    image = Image.new("RGB", size, color)
    image.putpixel((3, 3), (255 - color[0], 255 - color[1], 255 - color[2]))
    image.save(out, "PNG")
    return out.getvalue()


RED, BLUE = image((200, 30, 30)), image((20, 40, 220))


@pytest.fixture(scope="module")
def projector(tmp_path_factory):
    return write_tiny_projector(tmp_path_factory.mktemp("vision") / "mmproj.gguf")


@pytest.fixture(scope="module")
def runner(harness, tiny_model_path, projector):
    return harness.start(make_spec(tiny_model_path, projector_path=str(projector)))


def see(harness, runner, images, prompt=PROMPT, **kw):
    return harness.run(collect(runner, prompt, images=images, image_marker=MARKER, **kw))


def text_tokens(harness, runner, prompt: str) -> int:
    """Tokens of the text around the markers (each piece tokenized on its own, as mtmd does)."""
    pieces = prompt.split(MARKER)
    counts = [harness.run(runner.tokenize(p, i == 0)) for i, p in enumerate(pieces)]
    return sum(len(c) for c in counts)


def test_a_image_becomes_prompt_tokens_and_changes_the_reply(harness, runner):
    red = see(harness, runner, (RED,))
    blue = see(harness, runner, (BLUE,))
    assert red.done.prompt_tokens == text_tokens(harness, runner, PROMPT) + TINY_IMAGE_TOKENS
    assert red.done.completion_tokens == GREEDY.max_tokens and red.text
    assert red.text != blue.text  # the model saw different images
    assert see(harness, runner, (RED,)).text == red.text  # and the same one the same way


def test_the_next_turn_reuses_the_cached_image(harness, runner):
    first = see(harness, runner, (BLUE,))
    follow_up = PROMPT + first.text + "<|im_end|>\n<|im_start|>user\nAnd?<|im_end|>\n"
    second = see(harness, runner, (BLUE,), prompt=follow_up)
    assert second.done.prompt_evaluated < second.done.prompt_tokens - TINY_IMAGE_TOKENS
    other = see(harness, runner, (RED,), prompt=follow_up)  # same text, another image
    assert other.done.prompt_evaluated >= TINY_IMAGE_TOKENS
    assert other.text != second.text


def test_two_images_in_one_prompt(harness, runner):
    prompt = f"<|im_start|>user\n{MARKER} and {MARKER}: which?<|im_end|>\n<|im_start|>assistant\n"
    both = see(harness, runner, (RED, BLUE), prompt=prompt)
    swapped = see(harness, runner, (BLUE, RED), prompt=prompt)
    text = text_tokens(harness, runner, prompt)
    assert both.done.prompt_tokens == text + 2 * TINY_IMAGE_TOKENS
    assert both.text != swapped.text  # order matters


def test_images_and_text_streams_batch_together(harness, runner):
    async def scenario():
        jobs = [collect(runner, PROMPT, images=(c,), image_marker=MARKER) for c in (RED, BLUE)]
        jobs += [collect(runner, f"Hello {i}") for i in range(2)]
        return await asyncio.gather(*jobs)

    red, blue, *texts = harness.run(scenario())
    assert red.text == see(harness, runner, (RED,)).text  # batching did not change it
    assert blue.text == see(harness, runner, (BLUE,)).text
    assert all(t.done.completion_tokens == GREEDY.max_tokens for t in texts)


@pytest.mark.parametrize(
    ("images", "prompt", "message"),
    [
        ((b"not an image",), PROMPT, "image 1 could not be decoded"),
        ((RED, BLUE), PROMPT, "1 places for images but 2 came"),
        ((RED,), f"Describe {MARKER}", "must go on after its last image"),
    ],
)
def test_bad_images_are_request_errors(harness, runner, images, prompt, message):
    with pytest.raises(InvalidRequestError, match=message):
        see(harness, runner, images, prompt=prompt)
    assert see(harness, runner, (RED,)).done.completion_tokens == GREEDY.max_tokens  # still fine


def test_a_image_larger_than_the_context_is_refused(harness, tiny_model_path, projector):
    small = harness.start(make_spec(tiny_model_path, projector_path=str(projector), num_ctx=24))
    with pytest.raises(InvalidRequestError, match="context is 24 tokens"):
        see(harness, small, (RED,))


def test_a_model_without_projector_refuses_images(harness, tiny_model_path):
    plain = harness.start(make_spec(tiny_model_path, num_parallel=1))
    with pytest.raises(InvalidRequestError, match="no vision projector"):
        see(harness, plain, (RED,))


def test_a_projector_for_another_model_fails_the_load_clearly(harness, tiny_model_path, tmp_path):
    wrong = write_tiny_projector(tmp_path / "wrong.gguf", text_embedding_length=96)
    with pytest.raises(Exception, match="vision projector") as failed:
        harness.start(make_spec(tiny_model_path, projector_path=str(wrong)))
    assert "mismatch between text model (n_embd = 64) and mmproj (n_embd = 96)" in str(failed.value)
