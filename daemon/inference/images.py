"""Images from clients -> the PNGs a runner gets.

Images are numbered from 1 across a request, in the order they appear, in every message.

Images come from anyone who can reach the daemon, so they are untrusted files. Only Pillow
reads them, and only as PNG, JPEG, WEBP, GIF or BMP; the size in the header is checked before
a pixel is decoded (a 100000x100000 PNG is a few hundred bytes); then each image is turned
upright (EXIF), flattened to RGB on white, shrunk to at most 2048 pixels a side and written
again as a plain PNG. The runner's C decoder therefore only ever sees PNGs written here, never
a client's bytes.

This is CPU work (up to a second for a big photo): call it off the event loop.
"""

from __future__ import annotations

import base64
import binascii
import functools
import io
from collections.abc import Sequence

from PIL import Image, ImageOps

from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference.image_cache import ImageCache
from localllm.daemon.runners.protocol import MAX_FRAME_BYTES

__all__ = [
    "LONGEST_SIDE",
    "MAX_PIXELS",
    "MAX_SIDE",
    "MAX_TOTAL_BYTES",
    "READABLE_FORMATS",
    "decode_base64",
    "prepare_image",
    "prepare_images",
]

READABLE_FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP")
MAX_PIXELS = 50_000_000  # a 50-megapixel photo decodes to 150 MB of RGB; more is refused
MAX_SIDE = 16384
LONGEST_SIDE = 2048  # more than any projector looks at (they tile or resize far below it)
# The images travel to the runner base64-encoded in one frame: keep 4 MiB for the rest.
MAX_TOTAL_BYTES = (MAX_FRAME_BYTES - (4 << 20)) * 3 // 4
_WHITE = (255, 255, 255)
_NAMES = ", ".join(READABLE_FORMATS[:-1]) + " or " + READABLE_FORMATS[-1]


def decode_base64(text: str, number: int, where: str = "", *, param: str = "images") -> bytes:
    """An image sent as base64 text. Line breaks are skipped (as Go's decoder, and so Ollama,
    does); anything else that is not base64 is a 400."""
    try:
        return base64.b64decode(text.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        raise BadRequestError(
            f"image {number}{where} is not valid base64 (send each image's file, base64-encoded)",
            param=param,
        ) from None


def prepare_images(sources: Sequence[bytes], cache: ImageCache | None = None) -> tuple[bytes, ...]:
    """Each image as a PNG the runner may decode (from ``cache`` where it was prepared
    before); BadRequestError names the 1-based image that cannot be used, or says the
    images are too large together."""
    prepared, total = [], 0
    for number, data in enumerate(sources, 1):
        prepare = functools.partial(prepare_image, number=number)
        prepared.append(cache.prepared(data, prepare) if cache else prepare(data))
        total += len(prepared[-1])
        if total > MAX_TOTAL_BYTES:
            raise BadRequestError(
                "the images are too large together; send fewer or smaller ones", param="images"
            )
    return tuple(prepared)


def prepare_image(data: bytes, number: int = 1) -> bytes:
    """One image (``number`` counts from 1, for messages) as an upright RGB PNG."""
    image = _open(data, number)
    _check_size(image.size, number)
    try:
        upright = _shrunk(_upright_rgb(image))
    except MemoryError:
        raise
    except Exception:  # Pillow's decoders raise many kinds of errors on broken or hostile data
        raise _unreadable(number) from None
    finally:
        image.close()
    return _png(upright)


def _open(data: bytes, number: int) -> Image.Image:
    """Reads the header only: no pixel is decoded yet."""
    try:
        return Image.open(io.BytesIO(data), formats=READABLE_FORMATS)
    except Image.DecompressionBombError:  # Pillow's own, far larger limit; ours is below
        raise _too_large(number) from None
    except Exception:
        raise _unreadable(number) from None


def _check_size(size: tuple[int, int], number: int) -> None:
    width, height = size
    if width < 1 or height < 1:
        raise _unreadable(number)
    if max(width, height) > MAX_SIDE or width * height > MAX_PIXELS:
        raise _too_large(number, f" ({width}x{height})")


def _upright_rgb(image: Image.Image) -> Image.Image:
    """The first frame, turned as its EXIF says, in RGB with any transparency on white."""
    image.seek(0)
    image.draft("RGB", _target_size(image.size))  # JPEG: decode at a reduced scale if it can
    ImageOps.exif_transpose(image, in_place=True)  # (a copy would double the memory)
    if image.mode in ("RGBA", "LA", "PA", "La", "RGBa") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        flat = Image.new("RGBA", rgba.size, (*_WHITE, 255))
        flat.alpha_composite(rgba)
        return flat.convert("RGB")
    return image.convert("RGB")


def _shrunk(image: Image.Image) -> Image.Image:
    size = _target_size(image.size)
    if size == image.size:
        return image
    return image.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)


def _target_size(size: tuple[int, int]) -> tuple[int, int]:
    """``size`` with its longest side at most LONGEST_SIDE, aspect kept."""
    width, height = size
    longest = max(width, height)
    if longest <= LONGEST_SIDE:
        return size
    scale = LONGEST_SIDE / longest
    return max(1, round(width * scale)), max(1, round(height * scale))


def _png(image: Image.Image) -> bytes:
    image.info.clear()  # no ICC profile, text or EXIF chunks: pixels only
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=1)  # fast; the runner decodes it once
    return out.getvalue()


def _unreadable(number: int) -> BadRequestError:
    return BadRequestError(
        f"image {number} is not an image localllm can read (send {_NAMES})", param="images"
    )


def _too_large(number: int, dimensions: str = "") -> BadRequestError:
    return BadRequestError(
        f"image {number} is too large{dimensions}: at most {MAX_PIXELS // 1_000_000} megapixels "
        f"and {MAX_SIDE} pixels a side; shrink it first",
        param="images",
    )
