"""Images into a sequence's KV cache, with llama.cpp's multimodal library (mtmd).

A prompt with images becomes one list of token ids in which each image is a run of
placeholder ids, plus the mtmd chunk that fills each run. Placeholders are negative (no real
token has one) and derived from a hash of the image, so the prefix cache reuses the image a
slot already holds (the next turn of the same chat) and never mistakes one image for another.
The engine feeds the text as usual and calls :meth:`Vision.evaluate` when a sequence reaches a
image; mtmd encodes it and decodes its embeddings into that sequence.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from dataclasses import dataclass, field

import llama_cpp as lc
import numpy as np
from llama_cpp import mtmd_cpp as mtmd

from ..types import InvalidRequestError, RunnerError
from .model import LoadError, Model

__all__ = ["ImagePrompt", "ImageSpan", "Vision", "reusable_prefix"]


@dataclass(eq=False)
class ImageSpan:
    """One image's place in a prompt: ``n_tokens`` embeddings from ``start`` on."""

    start: int
    n_tokens: int
    n_pos: int  # positions it takes (fewer than n_tokens with M-RoPE)
    chunk: int  # the mtmd chunk, owned: freed by :meth:`free`

    def free(self) -> None:
        if self.chunk:
            mtmd.mtmd_input_chunk_free(self.chunk)
            self.chunk = 0


@dataclass
class ImagePrompt:
    tokens: list[int]
    images: dict[int, ImageSpan] = field(default_factory=dict)  # by start index

    def free(self) -> None:
        for image in self.images.values():
            image.free()


class Vision:
    """The model's projector (``mmproj``), loaded next to it."""

    def __init__(self, model: Model, projector_path: str, threads: int, use_gpu: bool):
        params = mtmd.mtmd_context_params_default()
        params.use_gpu = use_gpu
        params.n_threads = threads
        params.print_timings = False
        self._ctx = mtmd.mtmd_init_from_file(os.fsencode(projector_path), model.handle, params)
        if not self._ctx:
            raise LoadError(
                "llama.cpp could not load the vision projector (is it for this model? "
                "see the log lines below)"
            )
        if not mtmd.mtmd_support_vision(self._ctx):
            self.close()
            raise LoadError("the projector has no vision encoder (it may be for audio)")
        self.mrope = bool(mtmd.mtmd_decode_use_mrope(self._ctx))

    def tokenize(
        self, prompt: str, marker: str, images: tuple[bytes, ...], add_bos: bool
    ) -> ImagePrompt:
        """The prompt as tokens and placeholder runs, one image at each ``marker``."""
        texts = prompt.split(marker) if marker else [prompt]
        if len(texts) - 1 != len(images):
            raise InvalidRequestError(
                f"the prompt has {len(texts) - 1} places for images but {len(images)} came"
            )
        bitmaps: list[mtmd.mtmd_bitmap_p] = []
        chunks = mtmd.mtmd_input_chunks_init()
        try:
            for index, data in enumerate(images, 1):
                bitmaps.append(self._bitmap(index, data))
            self._tokenize_parts(chunks, texts, bitmaps, add_bos)
            result = self._collect(chunks)
        finally:
            mtmd.mtmd_input_chunks_free(chunks)
            for bitmap in bitmaps:
                mtmd.mtmd_bitmap_free(bitmap)
        if result.tokens and result.tokens[-1] < 0:
            result.free()
            raise InvalidRequestError("the prompt must go on after its last image")
        return result

    def evaluate(
        self, lctx: lc.llama_context_p, image: ImageSpan, pos: int, seq_id: int, n_batch: int
    ) -> int:
        """Encode ``image`` and decode it into ``seq_id`` from ``pos``; the next position."""
        after = lc.llama_pos(0)
        status = mtmd.mtmd_helper_eval_chunk_single(
            self._ctx, lctx, image.chunk, pos, seq_id, n_batch, False, ctypes.byref(after)
        )
        if status != 0:
            raise RunnerError(f"llama.cpp could not encode an image (status {status})")
        return after.value

    def close(self) -> None:
        if self._ctx:
            mtmd.mtmd_free(self._ctx)
            self._ctx = None

    def _bitmap(self, index: int, data: bytes) -> mtmd.mtmd_bitmap_p:
        buffer = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        bitmap = mtmd.mtmd_helper_bitmap_init_from_buf(self._ctx, buffer, len(data), False)
        if not bitmap:
            raise InvalidRequestError(f"image {index} could not be decoded")
        mtmd.mtmd_bitmap_set_id(bitmap, hashlib.sha256(data).hexdigest().encode())
        return bitmap

    def _tokenize_parts(
        self,
        chunks: mtmd.mtmd_input_chunks_p,
        texts: list[str],
        bitmaps: list[mtmd.mtmd_bitmap_p],
        add_bos: bool,
    ) -> None:
        keep: list[object] = []  # the ctypes objects the parts point to, alive until the call
        parts: list[mtmd.mtmd_input_part] = []
        for index, text in enumerate(texts):
            if text:
                data = text.encode()
                entry = mtmd.mtmd_input_text(data, len(data), False, True)
                keep += [data, entry]
                parts.append(mtmd.mtmd_input_part(ctypes.pointer(entry), None))
            if index < len(bitmaps):
                parts.append(mtmd.mtmd_input_part(None, bitmaps[index]))
        array = (ctypes.POINTER(mtmd.mtmd_input_part) * len(parts))(
            *(ctypes.pointer(part) for part in parts)
        )
        status = mtmd.mtmd_tokenize_from_parts(self._ctx, chunks, array, len(parts), add_bos)
        if status != 0:
            raise InvalidRequestError(f"the images could not be prepared (mtmd status {status})")

    def _collect(self, chunks: mtmd.mtmd_input_chunks_p) -> ImagePrompt:
        result = ImagePrompt([])
        seen: dict[bytes, int] = {}  # image chunks so far per image (some models slice one)
        for i in range(mtmd.mtmd_input_chunks_size(chunks)):
            chunk = mtmd.mtmd_input_chunks_get(chunks, i)
            if mtmd.mtmd_input_chunk_get_type(chunk) == mtmd.MTMD_INPUT_CHUNK_TYPE_TEXT:
                count = ctypes.c_size_t(0)
                tokens = mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(count))
                result.tokens.extend(tokens[: count.value])
                continue
            digest = mtmd.mtmd_input_chunk_get_id(chunk) or b""
            seen[digest] = seen.get(digest, -1) + 1
            n_tokens = mtmd.mtmd_input_chunk_get_n_tokens(chunk)
            start = len(result.tokens)
            result.tokens.extend(_placeholders(b"%s/%d" % (digest, seen[digest]), n_tokens))
            n_pos = mtmd.mtmd_input_chunk_get_n_pos(chunk)
            copy = mtmd.mtmd_input_chunk_copy(chunk)
            result.images[start] = ImageSpan(start, n_tokens, n_pos, copy)
        return result


def reusable_prefix(images: dict[int, ImageSpan], common: int, vision: Vision | None) -> int:
    """How much of a cached prefix may be kept: never part of an image, and with M-RoPE
    (where positions stop matching indices after an image) nothing from the first on."""
    for start, image in images.items():
        mrope = vision is not None and vision.mrope
        if start < common < start + image.n_tokens or (mrope and start < common):
            common = start
    return common


def _placeholders(key: bytes, count: int) -> list[int]:
    """``count`` negative ids that only this image (slice) produces."""
    seed = int.from_bytes(hashlib.sha256(key).digest()[:16], "little")
    ids: list[int] = (-np.random.default_rng(seed).integers(1, 2**31 - 1, count)).tolist()
    return ids
