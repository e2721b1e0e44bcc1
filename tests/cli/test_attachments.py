"""Finding picture paths in a prompt and reading the files, on real files written with Pillow."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from PIL import Image

from app.cli.attachments import (
    MAX_PICTURE_BYTES,
    PictureError,
    model_sees_pictures,
    read_picture,
    take_pictures,
    user_message,
)
from daemon.api import ShowResponse
from tests.support.cli import SHOW


def picture(path: Path, color: str = "red", kind: str = "PNG") -> Path:
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
    cat = picture(here / "cat.png")
    prompt = take_pictures("what is in ./cat.png")
    assert prompt.text == "what is in"
    assert [(p.name, p.data) for p in prompt.pictures] == [("./cat.png", encoded(cat))]


def test_a_bare_name_and_an_absolute_path(here):
    picture(here / "a.jpg", kind="JPEG")
    other = picture(here / "sub" / "b.png", "blue")
    prompt = take_pictures(f"compare a.jpg with {other}")
    assert prompt.text == "compare with"
    assert [p.name for p in prompt.pictures] == ["a.jpg", str(other)]


def test_quoted_paths_may_hold_spaces(here):
    picture(here / "my cat.png")
    picture(here / "my dog.webp", kind="WEBP")
    prompt = take_pictures("""describe 'my cat.png' and "my dog.webp", please""")
    assert prompt.text == "describe and, please"
    assert [p.name for p in prompt.pictures] == ["my cat.png", "my dog.webp"]


def test_escaped_spaces(here):
    cat = picture(here / "my old cat.png")
    prompt = take_pictures(r"what is in my\ old\ cat.png?")
    assert prompt.text == "what is in?"
    assert [(p.name, p.data) for p in prompt.pictures] == [("my old cat.png", encoded(cat))]


def test_tilde_is_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("USERPROFILE", str(tmp_path / "home"))  # what Windows reads
    cat = picture(tmp_path / "home" / "pics" / "cat.gif", kind="GIF")
    prompt = take_pictures("look at ~/pics/cat.gif")
    assert prompt.text == "look at"
    assert [(p.name, p.data) for p in prompt.pictures] == [("~/pics/cat.gif", encoded(cat))]


def test_suffixes_are_case_insensitive(here):
    picture(here / "CAT.PNG")
    picture(here / "Dog.Bmp", kind="BMP")
    prompt = take_pictures("CAT.PNG Dog.Bmp")
    assert prompt.text == ""
    assert [p.name for p in prompt.pictures] == ["CAT.PNG", "Dog.Bmp"]


def test_other_files_stay_text(here):
    (here / "notes.txt").write_text("not a picture")
    (here / "folder.png").mkdir()
    text = "summarize ./notes.txt and ./folder.png"
    assert take_pictures(text).text == text
    assert take_pictures(text).pictures == ()


def test_a_path_to_no_file_stays_text(here):
    text = "  what would be in ./missing.png or 'no such.jpg'?\n    indented\n"
    prompt = take_pictures(text)
    assert prompt.text == text and prompt.pictures == ()


def test_several_pictures_in_order_and_tidy_text(here):
    names = ["one.png", "two.jpeg", "three.png"]
    for name, color in zip(names, ["red", "green", "blue"], strict=True):
        picture(here / name, color, "JPEG" if name.endswith("jpeg") else "PNG")
    prompt = take_pictures("  ./one.png   first,\n./two.jpeg then\t./three.png.  ")
    assert prompt.text == "first,\nthen."
    assert [p.name for p in prompt.pictures] == ["./one.png", "./two.jpeg", "./three.png"]
    assert len({p.data for p in prompt.pictures}) == 3


def test_an_apostrophe_in_a_word_is_not_a_quote(here):
    picture(here / "cat.png")
    prompt = take_pictures("what's in ./cat.png, isn't it red")
    assert prompt.text == "what's in, isn't it red"
    assert [p.name for p in prompt.pictures] == ["./cat.png"]


def test_a_file_that_is_not_a_picture_is_an_error(here):
    (here / "fake.png").write_text("hello")
    with pytest.raises(PictureError, match=r"cannot read picture 'fake\.png': it is not a PNG"):
        take_pictures("what is fake.png")


def test_a_picture_over_the_limit_is_an_error(here):
    big = picture(here / "big.png")
    with big.open("r+b") as file:
        file.truncate(MAX_PICTURE_BYTES + 1)
    with pytest.raises(PictureError, match=r"cannot read picture 'big\.png': .*larger than 20 MB"):
        take_pictures("see big.png")
    with big.open("r+b") as file:
        file.truncate(MAX_PICTURE_BYTES)
    assert read_picture("big.png") is not None  # exactly the limit is fine


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_picture_is_an_error(here):
    locked = picture(here / "locked.png")
    locked.chmod(0)
    try:
        with pytest.raises(PictureError, match=r"'locked\.png': permission denied"):
            take_pictures("see locked.png")
    finally:
        locked.chmod(0o600)


def test_user_message_attaches_only_for_a_model_that_sees(here):
    cat = picture(here / "cat.png")
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
    assert user_message("no pictures here", True, notes.append) == {
        "role": "user",
        "content": "no pictures here",
    }


def test_model_sees_pictures():
    def shown(*capabilities: str) -> ShowResponse:
        return SHOW.model_copy(update={"capabilities": list(capabilities)})

    assert model_sees_pictures(shown("completion", "vision"))
    assert not model_sees_pictures(shown("completion", "tools"))
    assert not model_sees_pictures(shown())
