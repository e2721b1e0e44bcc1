"""Images named in a prompt, for models that see: ``localllm run llava "what is in ./cat.png"``.

As ``ollama run`` does for a model with the ``vision`` capability, a word of the prompt that
names an existing image file (``~`` expanded; quoted with '...' or "...", or with ``\\ `` for
its spaces) is taken out of the text and sent as an image. A word that only looks like one (no
such file) stays text. The CLI reads the files and sends their bytes, base64-encoded: the
daemon never opens a path a client names.
"""

from __future__ import annotations

import base64
import errno
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localllm.daemon.api import ShowResponse

__all__ = [
    "IMAGE_SUFFIXES",
    "MAX_IMAGE_BYTES",
    "ImageError",
    "ImageFile",
    "Prompt",
    "model_sees_images",
    "read_image",
    "take_images",
    "user_message",
]

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".gif", ".bmp")
MAX_IMAGE_BYTES = 20 * 1024 * 1024

# Punctuation a sentence may put right after a path ("what is in ./cat.png?"): not the path's.
_AFTER = ".,;:!?)]}"
# A word: '...' or "..." (spaces allowed, ended before a space or punctuation), or a run of
# non-spaces in which "\ " is an escaped space.
_WORD = re.compile(r"""(?P<quoted>'[^'\n]+'|"[^"\n]+")(?=[\s.,;:!?)\]}]|$)|(?:\\ |\S)+""")
# Errors that mean "no such file here", so the word is only text.
_NOT_THERE = {errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG, errno.ELOOP, errno.EINVAL}
_SIGNATURES = (  # what each kind of image file starts with
    (b"\x89PNG\r\n\x1a\n", ""),
    (b"\xff\xd8\xff", ""),
    (b"GIF87a", ""),
    (b"GIF89a", ""),
    (b"BM", ""),
    (b"RIFF", "WEBP"),
)


class ImageError(Exception):
    """An image the prompt names that exists but cannot be sent (unreadable, too large, not a
    image)."""


@dataclass(frozen=True)
class ImageFile:
    name: str  # as the prompt named it, without quotes or escapes
    data: str  # the file's bytes, base64-encoded, as Ollama's ``images`` carry them


@dataclass(frozen=True)
class Prompt:
    text: str  # what is left of the prompt once the image paths are taken out
    images: tuple[ImageFile, ...] = ()


def model_sees_images(show: ShowResponse) -> bool:
    """Whether ``/api/show``'s answer lists the ``vision`` capability."""
    return "vision" in show.capabilities


def user_message(text: str, sees_images: bool, note: Callable[[str], None]) -> dict[str, Any]:
    """The user's chat message for ``text``, with the images it names attached when the
    model sees images (``note`` hears ``Added image '...'`` for each). Raises ImageError."""
    if not sees_images:
        return {"role": "user", "content": text}
    prompt = take_images(text)
    for image in prompt.images:
        note(f"Added image '{image.name}'")
    message: dict[str, Any] = {"role": "user", "content": prompt.text}
    if prompt.images:
        message["images"] = [image.data for image in prompt.images]
    return message


def take_images(text: str) -> Prompt:
    """``text`` without the image files it names, and those files read."""
    pieces: list[str] = []
    images: list[ImageFile] = []
    start = 0
    for match in _WORD.finditer(text):
        found = _image_path(match.group(), quoted=bool(match.group("quoted")))
        if found is None:
            continue
        name, length = found
        data = read_image(name)
        if data is None:
            continue
        images.append(ImageFile(name, data))
        pieces.append(text[start : match.start()])
        start = match.start() + length
    if not images:
        return Prompt(text)  # untouched, indentation and all
    pieces.append(text[start:])
    return Prompt(_joined(pieces), tuple(images))


def read_image(name: str) -> str | None:
    """The image file ``name`` base64-encoded; None when there is no such file."""
    path = Path(name).expanduser()
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a folder, or a pipe that would block
            return None
        with path.open("rb") as file:
            data = file.read(MAX_IMAGE_BYTES + 1)
    except OSError as error:
        if error.errno in _NOT_THERE:
            return None
        raise ImageError(f"cannot read image '{name}': {_reason(error)}") from None
    if len(data) > MAX_IMAGE_BYTES:
        limit = MAX_IMAGE_BYTES // (1024 * 1024)
        raise ImageError(f"cannot read image '{name}': it is larger than {limit} MB")
    if not _looks_like_image(data):
        raise ImageError(
            f"cannot read image '{name}': it is not a PNG, JPEG, WEBP, GIF or BMP image"
        )
    return base64.b64encode(data).decode("ascii")


def _image_path(word: str, quoted: bool) -> tuple[str, int] | None:
    """The path a word names if it ends like an image file, and how many of the word's
    characters it covers (punctuation after it stays text)."""
    if quoted:
        name, length = word[1:-1], len(word)
    else:
        length = len(word if _is_image_name(word) else word.rstrip(_AFTER))
        name = word[:length].replace("\\ ", " ")
    return (name, length) if _is_image_name(name) else None


def _is_image_name(name: str) -> bool:
    return name.lower().endswith(IMAGE_SUFFIXES)


def _looks_like_image(data: bytes) -> bool:
    return any(
        data.startswith(start) and (not tag or data[8:12] == tag.encode())
        for start, tag in _SIGNATURES
    )


def _reason(error: OSError) -> str:
    return (error.strerror or type(error).__name__).lower()


def _joined(pieces: list[str]) -> str:
    """The text around the removed paths, with one space (or none, before punctuation or a line
    break) where each path was."""
    text = pieces[0]
    for piece in pieces[1:]:
        left, right = text.rstrip(" \t"), piece.lstrip(" \t")
        tight = not left or not right or left.endswith("\n") or right[0] in _AFTER + "\n"
        text = left + ("" if tight else " ") + right
    return text.strip()
