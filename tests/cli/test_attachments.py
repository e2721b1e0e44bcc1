"""Finding image paths in a prompt and reading the files, on real files written with Pillow."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from PIL import Image

from localllm.app.cli.attachments import (
    MAX_IMAGE_BYTES,
    ImageError,
    model_sees_images,
    read_image,
    take_images,
    user_message,
)
from localllm.daemon.api import ShowResponse
from tests.support.cli import SHOW


def image(path: Path, color: str = "red", kind: str = "PNG") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), color).save(path, kind)
    return path


def encoded(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode("ascii")


@pytest.fixture
def here(tmp_path, monkeypatch) -> Path:
    """Relative paths in prompts are read from ``tmp_path``."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_plain_path_is_taken_out_and_read(here):
    cat = image(here / "cat.png")
    prompt = take_images("what is in ./cat.png")
    assert prompt.text == "what is in"
    assert [(p.name, p.data) for p in prompt.images] == [("./cat.png", encoded(cat))]


def test_a_bare_name_and_an_absolute_path(here):
    image(here / "a.jpg", kind="JPEG")
    other = image(here / "sub" / "b.png", "blue")
    prompt = take_images(f"compare a.jpg with {other}")
    assert prompt.text == "compare with"
    assert [p.name for p in prompt.images] == ["a.jpg", str(other)]


def test_quoted_paths_may_hold_spaces(here):
    image(here / "my cat.png")
    image(here / "my dog.webp", kind="WEBP")
    prompt = take_images("""describe 'my cat.png' and "my dog.webp", please""")
    assert prompt.text == "describe and, please"
    assert [p.name for p in prompt.images] == ["my cat.png", "my dog.webp"]


def test_escaped_spaces(here):
    cat = image(here / "my old cat.png")
    prompt = take_images(r"what is in my\ old\ cat.png?")
    assert prompt.text == "what is in?"
    assert [(p.name, p.data) for p in prompt.images] == [("my old cat.png", encoded(cat))]


def test_tilde_is_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("USERPROFILE", str(tmp_path / "home"))  # what Windows reads
    cat = image(tmp_path / "home" / "pics" / "cat.gif", kind="GIF")
    prompt = take_images("look at ~/pics/cat.gif")
    assert prompt.text == "look at"
    assert [(p.name, p.data) for p in prompt.images] == [("~/pics/cat.gif", encoded(cat))]


def test_suffixes_are_case_insensitive(here):
    image(here / "CAT.PNG")
    image(here / "Dog.Bmp", kind="BMP")
    prompt = take_images("CAT.PNG Dog.Bmp")
    assert prompt.text == ""
    assert [p.name for p in prompt.images] == ["CAT.PNG", "Dog.Bmp"]


def test_other_files_stay_text(here):
    (here / "notes.txt").write_text("not an image")
    (here / "folder.png").mkdir()
    text = "summarize ./notes.txt and ./folder.png"
    assert take_images(text).text == text
    assert take_images(text).images == ()


def test_a_path_to_no_file_stays_text(here):
    text = "  what would be in ./missing.png or 'no such.jpg'?\n    indented\n"
    prompt = take_images(text)
    assert prompt.text == text and prompt.images == ()


def test_several_images_in_order_and_tidy_text(here):
    names = ["one.png", "two.jpeg", "three.png"]
    for name, color in zip(names, ["red", "green", "blue"], strict=True):
        image(here / name, color, "JPEG" if name.endswith("jpeg") else "PNG")
    prompt = take_images("  ./one.png   first,\n./two.jpeg then\t./three.png.  ")
    assert prompt.text == "first,\nthen."
    assert [p.name for p in prompt.images] == ["./one.png", "./two.jpeg", "./three.png"]
    assert len({p.data for p in prompt.images}) == 3


def test_an_apostrophe_in_a_word_is_not_a_quote(here):
    image(here / "cat.png")
    prompt = take_images("what's in ./cat.png, isn't it red")
    assert prompt.text == "what's in, isn't it red"
    assert [p.name for p in prompt.images] == ["./cat.png"]


def test_a_file_that_is_not_a_image_is_an_error(here):
    (here / "fake.png").write_text("hello")
    with pytest.raises(ImageError, match=r"cannot read image 'fake\.png': it is not a PNG"):
        take_images("what is fake.png")


def test_a_image_over_the_limit_is_an_error(here):
    big = image(here / "big.png")
    with big.open("r+b") as file:
        file.truncate(MAX_IMAGE_BYTES + 1)
    with pytest.raises(ImageError, match=r"cannot read image 'big\.png': .*larger than 20 MB"):
        take_images("see big.png")
    with big.open("r+b") as file:
        file.truncate(MAX_IMAGE_BYTES)
    assert read_image("big.png") is not None  # exactly the limit is fine


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_image_is_an_error(here):
    locked = image(here / "locked.png")
    locked.chmod(0)
    try:
        with pytest.raises(ImageError, match=r"'locked\.png': permission denied"):
            take_images("see locked.png")
    finally:
        locked.chmod(0o600)


def test_user_message_attaches_only_for_a_model_that_sees(here):
    cat = image(here / "cat.png")
    notes: list[str] = []
    assert user_message("what is ./cat.png", False, notes.append) == {
        "role": "user",
        "content": "what is ./cat.png",
    }
    assert notes == []
    assert user_message("what is ./cat.png", True, notes.append) == {
        "role": "user",
        "content": "what is",
        "images": [encoded(cat)],
    }
    assert notes == ["Added image './cat.png'"]
    assert user_message("no images here", True, notes.append) == {
        "role": "user",
        "content": "no images here",
    }


def test_model_sees_images():
    def shown(*capabilities: str) -> ShowResponse:
        return SHOW.model_copy(update={"capabilities": list(capabilities)})

    assert model_sees_images(shown("completion", "vision"))
    assert not model_sees_images(shown("completion", "tools"))
    assert not model_sees_images(shown())
