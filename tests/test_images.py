"""Client images -> the PNGs a runner gets (``daemon.inference.images``), with real images
made by Pillow here: every readable format comes out as an upright RGB PNG no larger than
2048 px, and hostile or broken files are refused with a 400 that says which image, before any
decoding that could blow up."""

from __future__ import annotations

import base64
import io
import random
import struct
import tracemalloc
import zlib

import pytest
from PIL import Image

from localllm.daemon.errors import BadRequestError
from localllm.daemon.inference.image_cache import ImageCache
from localllm.daemon.inference.images import (
    LONGEST_SIDE,
    MAX_TOTAL_BYTES,
    decode_base64,
    prepare_image,
    prepare_images,
)


def encoded(image: Image.Image, fmt: str, **options) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def opened(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG"
    return image


def gradient(width: int, height: int) -> Image.Image:
    """An image with content (a flat one would hide resampling or rotation mistakes): red
    grows left to right, green top to bottom."""
    ramp = Image.linear_gradient("L")  # 256x256, dark at the top
    red = ramp.rotate(90).resize((width, height))
    blue = Image.new("L", (width, height), 90)
    return Image.merge("RGB", (red, ramp.resize((width, height)), blue))


def png_claiming(width: int, height: int) -> bytes:
    """A tiny, hand-built PNG whose header claims ``width`` x ``height`` (a decompression bomb
    in spirit: decoding it would need width * height * 3 bytes)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\0" * 64)
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


@pytest.mark.parametrize(
    ("fmt", "mode"),
    [("PNG", "RGB"), ("JPEG", "RGB"), ("WEBP", "RGB"), ("GIF", "P"), ("BMP", "RGB"), ("PNG", "L")],
)
def test_every_readable_format_becomes_an_rgb_png_of_the_same_size(fmt, mode):
    source = encoded(gradient(120, 80).convert(mode), fmt)
    png = prepare_image(source)
    image = opened(png)
    assert image.mode == "RGB" and image.size == (120, 80)
    assert png.startswith(b"\x89PNG") and png != source


def test_colors_survive_the_round_trip():
    source = gradient(64, 32)
    image = opened(prepare_image(encoded(source, "PNG")))
    assert image.getpixel((63, 31)) == source.getpixel((63, 31))
    assert image.getpixel((0, 0)) == source.getpixel((0, 0))


def test_a_wide_image_shrinks_to_2048_keeping_its_aspect():
    image = opened(prepare_image(encoded(gradient(4000, 1000), "JPEG")))
    assert image.size == (LONGEST_SIDE, 512)
    tall = opened(prepare_image(encoded(Image.new("RGB", (300, 2500), "red"), "PNG")))
    assert tall.size == (246, 2048)


def test_exif_orientation_is_applied():
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 degrees clockwise to display"
    source = Image.new("RGB", (200, 100), "white")
    source.paste((255, 0, 0), (0, 0, 20, 100))  # a red band on the left edge as stored
    image = opened(prepare_image(encoded(source, "JPEG", exif=exif, quality=95)))
    assert image.size == (100, 200)  # upright: the sides swapped
    red, green, _ = image.getpixel((50, 5))  # the stored left edge is now the top
    assert red > 200 and green < 60
    assert "exif" not in image.info


def test_transparency_is_flattened_on_white():
    source = Image.new("RGBA", (10, 10), (0, 0, 0, 0))
    source.putpixel((0, 0), (0, 0, 255, 255))
    image = opened(prepare_image(encoded(source, "PNG")))
    assert image.mode == "RGB"
    assert image.getpixel((5, 5)) == (255, 255, 255)
    assert image.getpixel((0, 0)) == (0, 0, 255)


def test_only_the_first_frame_of_an_animation_is_kept():
    frames = [Image.new("RGB", (16, 16), color) for color in ("red", "blue", "green")]
    out = io.BytesIO()
    frames[0].save(out, "GIF", save_all=True, append_images=frames[1:])
    image = opened(prepare_image(out.getvalue()))
    assert getattr(image, "n_frames", 1) == 1 and image.getpixel((8, 8)) == (255, 0, 0)


def test_a_huge_header_is_refused_before_decoding():
    bomb = png_claiming(100_000, 100_000)
    assert len(bomb) < 200
    tracemalloc.start()
    try:
        with pytest.raises(BadRequestError, match="image 1 is too large") as caught:
            prepare_image(bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10 << 20  # decoding would need 30 GB
    assert caught.value.param == "images" and "megapixels" in str(caught.value)


@pytest.mark.parametrize("size", [(16385, 10), (8000, 7000)])
def test_our_limits_are_below_pillows(size):
    """A side over 16384, or more than 50 megapixels, even where Pillow would only warn."""
    with pytest.raises(BadRequestError, match=f"image 3 is too large \\({size[0]}x{size[1]}\\)"):
        prepare_image(png_claiming(*size), 3)


def test_garbage_and_unsupported_formats_name_the_image():
    good = encoded(gradient(8, 8), "PNG")
    with pytest.raises(BadRequestError, match="image 2 is not an image localllm can read"):
        prepare_images([good, b"this is not an image"])
    tiff = encoded(gradient(8, 8), "TIFF")  # Pillow reads TIFF, but we do not let it
    with pytest.raises(BadRequestError, match=r"image 1 is not an image .*PNG, JPEG, WEBP"):
        prepare_images([tiff])


def test_a_truncated_image_is_refused():
    source = encoded(gradient(200, 200), "PNG")
    with pytest.raises(BadRequestError, match="image 1 is not an image"):
        prepare_image(source[: len(source) // 2])


@pytest.mark.slow  # decodes large images (3 s)
def test_too_many_bytes_together_are_refused():
    noise = Image.frombytes("RGB", (2000, 2000), random.Random(0).randbytes(2000 * 2000 * 3))
    one = prepare_image(encoded(noise, "PNG"))
    count = MAX_TOTAL_BYTES // len(one) + 1
    with pytest.raises(BadRequestError, match="too large together"):
        prepare_images([encoded(noise, "BMP")] * count)


def test_base64_is_strict_but_skips_line_breaks():
    image = encoded(gradient(4, 4), "PNG")
    text = base64.b64encode(image).decode()
    wrapped = "\n".join(text[i : i + 76] for i in range(0, len(text), 76))
    assert decode_base64(wrapped, 1) == image
    for junk in ("not base64!", "aGk", "data:image/png;base64," + text, "é"):
        with pytest.raises(BadRequestError, match="image 4 \\(in message 2\\) is not valid base64"):
            decode_base64(junk, 4, " (in message 2)")


# -- the cache of prepared images -----------------------------------------------------------
def test_a_image_sent_again_is_not_prepared_again():
    cache = ImageCache()
    photo = encoded(gradient(3000, 2000), "JPEG")
    first = prepare_images([photo], cache)[0]
    again = prepare_images([encoded(gradient(40, 40), "PNG"), photo], cache)
    assert again[1] is first, "the same PNG object: taken from the cache"
    assert opened(again[0]).size == (40, 40)
    assert prepare_images([photo])[0] == first, "without a cache: prepared again, same bytes"


def test_the_cache_keeps_the_most_recently_used_within_its_budget():
    images = [encoded(Image.new("RGB", (64, 64), (i, 0, 0)), "PNG") for i in range(3)]
    sizes = [len(prepare_image(image)) for image in images]
    cache = ImageCache(budget=sum(sizes) - 1)  # room for any two, not for all three
    first = [prepare_images([p], cache)[0] for p in images[:2]]
    assert prepare_images([images[0]], cache)[0] is first[0]  # used again: now the newest
    prepare_images([images[2]], cache)  # the third pushes out the least recently used
    assert prepare_images([images[0]], cache)[0] is first[0]
    assert prepare_images([images[1]], cache)[0] is not first[1]


def test_a_image_that_cannot_be_read_is_refused_every_time():
    cache = ImageCache()
    for _ in range(2):
        with pytest.raises(BadRequestError, match="image 2"):
            prepare_images([encoded(gradient(8, 8), "PNG"), b"not an image"], cache)
