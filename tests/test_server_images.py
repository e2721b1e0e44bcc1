"""Images end to end: a real daemon with a tiny model that has a real (random-weight) vision
projector, spoken to over HTTP the way Ollama's and OpenAI's clients do. The model "sees"
noise, but a deterministic function of the image: one image becomes TINY_IMAGE_TOKENS
prompt tokens, different images give different replies, and the same image the same one.

Token counts: mtmd tokenizes the text on each side of an image on its own, so text right after
an image may take a token more or less than in one piece (SentencePiece's space prefix). The
exact "+ TINY_IMAGE_TOKENS" checks therefore put a special token (or nothing) after images."""

from __future__ import annotations

import base64
import io

import httpx
import ollama
import openai
import pytest
from PIL import Image

from tests.support.daemon import Daemon
from tests.support.model_writers.projector import TINY_IMAGE_TOKENS

pytestmark = pytest.mark.slow

GREEDY = {"num_predict": 6, "temperature": 0, "seed": 3}
ASK = "What is this?"


def image(color: tuple[int, int, int], fmt: str = "PNG", size=(64, 48)) -> bytes:
    image = Image.new("RGB", size, color)
    image.paste((255 - color[0], 255 - color[1], 255 - color[2]), (0, 0, size[0] // 2, 8))
    out = io.BytesIO()
    image.save(out, fmt)
    return out.getvalue()


RED, BLUE = image((200, 30, 30)), image((20, 40, 220), "JPEG")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def data_url(data: bytes, media: str = "image/png") -> str:
    return f"data:{media};base64,{b64(data)}"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, tiny_model_path):
    from localllm.model_registry.importer import import_gguf
    from localllm.model_registry.store import Store
    from tests.support.model_writers.projector import write_tiny_projector

    root = tmp_path_factory.mktemp("server-images")
    store = Store(root / "store")
    projector = write_tiny_projector(root / "mmproj.gguf")
    import_gguf(store, "seer", tiny_model_path, projector=projector)
    import_gguf(store, "tiny", tiny_model_path)
    with Daemon(root / "store", root / "logs") as running:
        yield running


def chat(daemon, messages: list[dict], model: str = "seer", **fields) -> httpx.Response:
    body = {"model": model, "messages": messages, "stream": False, "options": GREEDY, **fields}
    return httpx.post(daemon.url + "/api/chat", json=body, timeout=120)


def generate(daemon, prompt: str, **fields) -> httpx.Response:
    body = {"model": "seer", "prompt": prompt, "stream": False, "options": GREEDY, **fields}
    return httpx.post(daemon.url + "/api/generate", json=body, timeout=120)


def seen(daemon, *images: bytes, text: str = ASK) -> dict:
    response = chat(daemon, [{"role": "user", "content": text, "images": [*map(b64, images)]}])
    assert response.status_code == 200, response.text
    return response.json()


def still_serves(daemon) -> None:
    reply = seen(daemon, RED)
    assert reply["done"] is True and reply["eval_count"] == GREEDY["num_predict"]


def test_a_image_in_an_ollama_chat_becomes_prompt_tokens(daemon):
    reply = seen(daemon, RED, text="")  # ChatML: <|im_end|> comes right after the image
    text_only = chat(daemon, [{"role": "user", "content": ""}]).json()
    assert reply["done"] is True and reply["done_reason"] == "length"
    assert reply["message"]["content"] and reply["eval_count"] == GREEDY["num_predict"]
    assert reply["prompt_eval_count"] == text_only["prompt_eval_count"] + TINY_IMAGE_TOKENS
    with_text = seen(daemon, RED)
    text_only = chat(daemon, [{"role": "user", "content": ASK}]).json()
    grown = with_text["prompt_eval_count"] - text_only["prompt_eval_count"]
    assert abs(grown - TINY_IMAGE_TOKENS) <= 1  # (text after an image: see the docstring)


def test_the_model_tells_images_apart(daemon):
    red, blue = seen(daemon, RED)["message"]["content"], seen(daemon, BLUE)["message"]["content"]
    assert red != blue
    assert seen(daemon, RED)["message"]["content"] == red  # the same image, the same reply
    bmp_of_red = image((200, 30, 30), "BMP")  # the same pixels in another format
    assert seen(daemon, bmp_of_red)["message"]["content"] == red


def test_images_keep_their_order(daemon):
    both = seen(daemon, RED, BLUE)
    assert both["prompt_eval_count"] == seen(daemon, RED)["prompt_eval_count"] + TINY_IMAGE_TOKENS
    assert seen(daemon, BLUE, RED)["message"]["content"] != both["message"]["content"]


def test_images_in_several_messages(daemon):
    def conversation(*images: bytes) -> list[dict]:
        first, last = ([{"images": [b64(p)]} for p in images]) if images else ({}, {})
        return [
            {"role": "user", "content": "", **first},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "", **last},
        ]

    replies = {
        order: chat(daemon, conversation(*images)).json()
        for order, images in {"rb": (RED, BLUE), "br": (BLUE, RED), "bb": (BLUE, BLUE)}.items()
    }
    text_only = chat(daemon, conversation()).json()
    expected = text_only["prompt_eval_count"] + 2 * TINY_IMAGE_TOKENS
    assert {r["prompt_eval_count"] for r in replies.values()} == {expected}
    contents = {order: reply["message"]["content"] for order, reply in replies.items()}
    assert contents["rb"] != contents["br"]  # each message got its own image
    assert contents["rb"] != contents["bb"]  # and the first message's image counts too


def test_a_big_image_is_shrunk_and_still_seen(daemon):
    big = image((200, 30, 30), "JPEG", size=(5000, 1000))
    reply = seen(daemon, big)
    assert reply["done"] and reply["prompt_eval_count"] == seen(daemon, RED)["prompt_eval_count"]


def test_streaming_a_reply_about_a_image(daemon):
    body = {
        "model": "seer",
        "messages": [{"role": "user", "content": ASK, "images": [b64(BLUE)]}],
        "options": GREEDY,
    }
    with httpx.stream("POST", daemon.url + "/api/chat", json=body, timeout=120) as response:
        lines = [httpx.Response(200, content=line).json() for line in response.iter_lines() if line]
    assert lines[-1]["done"] is True
    assert (
        "".join(line["message"]["content"] for line in lines)
        == seen(daemon, BLUE)["message"]["content"]
    )


@pytest.mark.parametrize("system", [None, "Look closely."])
def test_generate_takes_images_as_chat_does(daemon, system):
    """The images come before the prompt's text in the user message, as in Ollama."""
    with_image = generate(daemon, ASK, images=[b64(RED)], system=system)
    assert with_image.status_code == 200, with_image.text
    reply = with_image.json()
    assert reply["done"] is True and reply["response"]
    messages = [{"role": "system", "content": system}] if system else []
    same = chat(daemon, [*messages, {"role": "user", "content": ASK, "images": [b64(RED)]}])
    assert reply["response"] == same.json()["message"]["content"]
    assert reply["prompt_eval_count"] == same.json()["prompt_eval_count"]
    text_only = generate(daemon, ASK, system=system).json()
    assert reply["prompt_eval_count"] >= text_only["prompt_eval_count"] + TINY_IMAGE_TOKENS - 1
    if system is None:  # (the random model barely looks back past a system message)
        blue = generate(daemon, ASK, images=[b64(BLUE)]).json()
        assert blue["response"] != reply["response"]


def test_a_raw_prompt_gets_its_images_first(daemon):
    prompt = ASK
    with_image = generate(daemon, prompt, images=[b64(RED)], raw=True)
    assert with_image.status_code == 200, with_image.text
    without = generate(daemon, prompt, raw=True).json()
    reply = with_image.json()
    assert reply["prompt_eval_count"] == without["prompt_eval_count"] + TINY_IMAGE_TOKENS
    blue = generate(daemon, prompt, images=[b64(BLUE)], raw=True).json()
    assert blue["response"] != reply["response"]


def test_an_empty_image_list_is_no_images(daemon):
    plain = generate(daemon, "Describe it.").json()
    empty = generate(daemon, "Describe it.", images=[]).json()
    assert empty["prompt_eval_count"] == plain["prompt_eval_count"]
    assert empty["response"] == plain["response"]


def test_openai_image_url_data_urls(daemon):
    client = daemon.openai()
    kwargs = {"model": "seer", "max_tokens": 6, "temperature": 0, "seed": 3}
    text = [{"type": "text", "text": ""}]  # so that <|im_end|> follows the image
    red_part = {"type": "image_url", "image_url": {"url": data_url(RED), "detail": "low"}}
    with_image = client.chat.completions.create(
        messages=[{"role": "user", "content": [red_part, *text]}], **kwargs
    )
    text_only = client.chat.completions.create(
        messages=[{"role": "user", "content": text}], **kwargs
    )
    assert with_image.choices[0].message.content
    expected = text_only.usage.prompt_tokens + TINY_IMAGE_TOKENS
    assert with_image.usage.prompt_tokens == expected
    bare = {"type": "image_url", "image_url": data_url(BLUE, "image/jpeg")}  # a bare URL string
    blue = client.chat.completions.create(
        messages=[{"role": "user", "content": [bare, *text]}], **kwargs
    )
    assert blue.usage.prompt_tokens == expected
    assert blue.choices[0].message.content != with_image.choices[0].message.content
    # the same image through either API is the same reply
    ollama_red = chat(daemon, [{"role": "user", "content": "", "images": [b64(RED)]}]).json()
    assert with_image.choices[0].message.content == ollama_red["message"]["content"]


def test_responses_api_input_images(daemon):
    client = daemon.openai()
    kwargs = {"model": "seer", "max_output_tokens": 6, "temperature": 0, "extra_body": {"seed": 3}}
    text = {"type": "input_text", "text": ""}  # so that <|im_end|> follows the image
    red = {"type": "input_image", "image_url": data_url(RED), "detail": "auto"}
    with_image = client.responses.create(input=[{"role": "user", "content": [red, text]}], **kwargs)
    text_only = client.responses.create(input=[{"role": "user", "content": [text]}], **kwargs)
    expected = text_only.usage.input_tokens + TINY_IMAGE_TOKENS
    assert with_image.usage.input_tokens == expected
    # the same image through chat completions is the same reply
    chat_red = client.chat.completions.create(
        model="seer",
        max_tokens=6,
        temperature=0,
        seed=3,
        messages=[{"role": "user", "content": [{"type": "image_url", "image_url": data_url(RED)}]}],
    )
    assert with_image.output_text == chat_red.choices[0].message.content
    # a follow-up keeps the first image in its conversation and adds its own
    blue = {"type": "input_image", "image_url": data_url(BLUE, "image/jpeg"), "detail": "auto"}
    follow_up = client.responses.create(
        previous_response_id=with_image.id,
        input=[{"role": "user", "content": [blue, text]}],
        **kwargs,
    )
    assert follow_up.usage.input_tokens > expected + TINY_IMAGE_TOKENS
    assert follow_up.usage.input_tokens_details.cached_tokens >= expected
    with pytest.raises(openai.BadRequestError, match="localllm does not download images"):
        remote = {"type": "input_image", "image_url": "https://example.com/cat.png"}
        client.responses.create(input=[{"role": "user", "content": [remote]}], **kwargs)
    still_serves(daemon)


def test_the_ollama_package_sends_images(daemon):
    client = ollama.Client(host=daemon.url)
    reply = client.chat(
        "seer",
        messages=[{"role": "user", "content": ASK, "images": [RED]}],
        options=GREEDY,
    )
    assert reply.done and reply.message.content == seen(daemon, RED)["message"]["content"]
    generated = client.generate("seer", "Describe it.", images=[BLUE], options=GREEDY)
    assert generated.done and generated.prompt_eval_count > TINY_IMAGE_TOKENS


def test_a_model_without_projector_refuses_images(daemon):
    native = chat(daemon, [{"role": "user", "content": ASK, "images": [b64(RED)]}], model="tiny")
    assert native.status_code == 400
    assert "'tiny' does not support images" in native.json()["error"]
    assert "vision projector" in native.json()["error"]
    with pytest.raises(openai.BadRequestError, match="vision projector") as caught:
        daemon.openai().chat.completions.create(
            model="tiny",
            messages=[
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": data_url(RED)}}],
                }
            ],
        )
    assert caught.value.body["param"] == "images"
    with pytest.raises(ollama.ResponseError, match="vision projector"):
        ollama.Client(host=daemon.url).generate("tiny", "hi", images=[RED])
    still_serves(daemon)


@pytest.mark.parametrize(
    ("images", "words"),
    [
        (["not base64!"], "image 1 (in message 1) is not valid base64"),
        ([b64(RED), data_url(BLUE)], "image 2 (in message 1) is not valid base64"),
        ([b64(b"just some text, not an image")], "image 1 is not an image localllm can read"),
        ([b64(RED), b64(RED[:100])], "image 2 is not an image localllm can read"),
    ],
)
def test_bad_images_are_400s_that_say_which(daemon, images, words):
    response = chat(daemon, [{"role": "user", "content": ASK, "images": images}])
    assert response.status_code == 400 and words in response.json()["error"]
    generated = generate(daemon, ASK, images=images)
    assert generated.status_code == 400
    assert words.replace(" (in message 1)", "") in generated.json()["error"]
    still_serves(daemon)


def test_the_message_of_a_bad_image_is_named(daemon):
    messages = [
        {"role": "user", "content": "one", "images": [b64(RED)]},
        {"role": "user", "content": "two", "images": ["%%%"]},
    ]
    response = chat(daemon, messages)
    assert response.status_code == 400
    assert "image 2 (in message 2) is not valid base64" in response.json()["error"]


@pytest.mark.parametrize(
    ("part", "words"),
    [
        (
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
            "localllm does not download images",
        ),
        ({"type": "image_url", "image_url": "http://169.254.169.254/"}, "must be a data: URL"),
        ({"type": "image_url", "image_url": {"url": "data:image/png,rawbytes"}}, "data: URL"),
        ({"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}, "base64"),
        ({"type": "image_url", "image_url": {"url": data_url(b"GIF89a-nope")}}, "image 1 is not"),
        ({"type": "image_url"}, "needs"),
        ({"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}, "input_audio"),
    ],
)
def test_openai_refuses_what_it_cannot_use(daemon, part, words):
    body = {"model": "seer", "max_tokens": 2, "messages": [{"role": "user", "content": [part]}]}
    response = httpx.post(daemon.url + "/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert words in error["message"] and error["type"] == "invalid_request_error"
    still_serves(daemon)


def test_a_template_that_drops_images_is_a_clear_400(daemon):
    dropping = "<|im_start|>user\nAlways the same question<|im_end|>\n<|im_start|>assistant\n"
    response = generate(daemon, "Describe it.", images=[b64(RED)], template=dropping)
    assert response.status_code == 400
    assert "dropped an image" in response.json()["error"]
    repeating = "{{ .Prompt }} and again {{ .Prompt }}"
    response = generate(daemon, "Describe it.", images=[b64(RED)], template=repeating)
    assert response.status_code == 400 and "repeated an image" in response.json()["error"]


def test_a_raw_prompt_must_go_on_after_its_images(daemon):
    response = generate(daemon, "", images=[b64(RED)], raw=True)
    assert response.status_code == 400
    assert "after its last image" in response.json()["error"]
    still_serves(daemon)


def test_legacy_completions_stay_text_only(daemon):
    body = {"model": "seer", "prompt": data_url(RED), "max_tokens": 2}
    response = httpx.post(daemon.url + "/v1/completions", json=body, timeout=60)
    assert response.status_code == 200
    assert response.json()["usage"]["prompt_tokens"] > 50  # the URL is read as text
